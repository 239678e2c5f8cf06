/* sbx_bounding_drop and sbx_caps_drop (the block's "caps" layer), each
 * case in a child of its own in a new user namespace, where it starts
 * with every capability and the full bounding set:
 *  - with CAP_SETPCAP the bounding set ends empty, as do the permitted,
 *    effective, inheritable and ambient sets;
 *  - without CAP_SETPCAP, an empty bounding set is no error;
 *  - without CAP_SETPCAP, a capability still in the set is -EPERM.
 * A host that refuses a user namespace fails the test: the sandbox
 * needs one. */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

/* The bounding set has no capability left (0), or one (1), or the
 * kernel would not say (-1). */
static int bset_has_any(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			return cap == 0 ? -1 : 0;
		if (in == 1)
			return 1;
	}
	return 0;
}

/* Takes CAP_SETPCAP out of the effective and permitted sets. */
static int lose_setpcap(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &hdr, d) < 0)
		return -1;
	d[0].effective &= ~(1u << CAP_SETPCAP);
	d[0].permitted &= ~(1u << CAP_SETPCAP);
	return (int)syscall(SYS_capset, &hdr, d);
}

/* Exit codes: 0 as expected, 2 no user namespace, else the failed step. */
static int full_drop(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (bset_has_any() != 1)
		return 3;
	if (sbx_caps_drop() != 0)
		return 4;
	if (bset_has_any() != 0)
		return 5;
	if (syscall(SYS_capget, &hdr, d) < 0)
		return 6;
	if (d[0].effective || d[0].permitted || d[0].inheritable ||
	    d[1].effective || d[1].permitted || d[1].inheritable)
		return 7;
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SETPCAP, 0, 0) > 0 ? 8 : 0;
}

static int empty_without_setpcap(void)
{
	if (sbx_bounding_drop() != 0 || bset_has_any() != 0)
		return 3;
	if (lose_setpcap() < 0)
		return 4;
	return sbx_bounding_drop() == 0 ? 0 : 5;
}

static int full_without_setpcap(void)
{
	if (lose_setpcap() < 0)
		return 3;
	if (bset_has_any() != 1)
		return 4;
	return sbx_bounding_drop() == -EPERM && bset_has_any() == 1 ? 0 : 5;
}

static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(2);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int main(void)
{
	static const struct {
		int (*fn)(void);
		const char *what;
	} cases[] = {
		{ full_drop, "with CAP_SETPCAP: the bounding, permitted, effective, "
			     "inheritable and ambient sets end empty" },
		{ empty_without_setpcap, "without CAP_SETPCAP, an empty bounding set "
					 "is no error" },
		{ full_without_setpcap, "without CAP_SETPCAP, a capability still in "
					"the bounding set is -EPERM" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = in_child(cases[i].fn);

		if (rc == 2)
			tap_diag("no user namespace here: unshare(CLONE_NEWUSER) refused");
		tap_ok(rc == 0, "%s (child exit %d)", cases[i].what, rc);
	}
	return tap_done();
}
