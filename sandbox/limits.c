/* rlimits and capabilities of the program process. */
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/internal.h"

static int set1(int res, rlim_t v)
{
	struct rlimit r = { v, v };

	return setrlimit(res, &r) < 0 ? -errno : 0;
}

void sbx_cpu_rlimit(const struct sbx_limits *l, double timeout_s,
		    unsigned long long *ret_soft, unsigned long long *ret_hard)
{
	unsigned long long wall = 0, soft;

	/* whole seconds, rounded up: RLIMIT_CPU counts whole seconds */
	if (timeout_s > 0) {
		wall = (unsigned long long)timeout_s;
		if ((double)wall < timeout_s)
			wall++;
	}
	soft = wall + SBX_CPU_MARGIN_S;
	if (l->cpu_s > 0) {
		unsigned long long want = (unsigned long long)l->cpu_s;

		if ((double)want < l->cpu_s)
			want++;
		if (want < soft)
			soft = want;
	}
	*ret_soft = soft;
	*ret_hard = soft + SBX_CPU_GRACE_S;
}

int sbx_rlimits_apply(const struct sbx_limits *l, double timeout_s)
{
	struct rlimit cpu;
	unsigned long long soft, hard;
	int rc;

	/* CPU time per process, soft below hard: SIGXCPU first (a program
	 * may catch it and end cleanly), SIGKILL SBX_CPU_GRACE_S later.
	 * Inherited by everything the program starts, each process with a
	 * count of its own from zero (setrlimit(2), fork(2)): the bound of
	 * a whole run is the wall timeout and the unit's CPUQuota=. */
	sbx_cpu_rlimit(l, timeout_s, &soft, &hard);
	cpu.rlim_cur = soft;
	cpu.rlim_max = hard;

	/* RLIMIT_DATA, not AS, is the memory knob: V8 reserves ~10 GiB of
	 * address space for WebAssembly; AS is only a backstop. */
	if ((rc = set1(RLIMIT_DATA, l->memory)) ||
	    (rc = set1(RLIMIT_AS, l->address_space)) ||
	    (rc = set1(RLIMIT_FSIZE, l->file_bytes)) ||
	    (rc = set1(RLIMIT_NPROC, l->procs)) ||
	    (rc = set1(RLIMIT_NOFILE, l->open_files)) ||
	    (rc = set1(RLIMIT_CORE, 0)))
		return rc;
	return setrlimit(RLIMIT_CPU, &cpu) < 0 ? -errno : 0;
}

/* Empties the bounding set: one call per capability where it can be
 * dropped (a new user namespace starts with the full set, and with
 * CAP_SETPCAP). Dropping needs CAP_SETPCAP even for a capability
 * already gone, so without it a refusal is an error only for one
 * still there. */
int sbx_bounding_drop(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		int in;

		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno != EPERM && errno != EINVAL)
			return -errno;
		/* EINVAL: past the last capability; EPERM (checked first
		 * by the kernel): no CAP_SETPCAP, so ask */
		in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (in < 0)
			break;
		if (in == 1)
			return -EPERM;
	}
	return 0;
}

int sbx_caps_drop(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	int rc;

	/* the bounding set first (needs CAP_SETPCAP, which is about to go),
	 * then ambient, then the permitted/effective/inheritable sets */
	if ((rc = sbx_bounding_drop()) < 0)
		return rc;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	/* verify: nothing effective or permitted remains */
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (data[0].effective || data[0].permitted || data[1].effective ||
	    data[1].permitted)
		return -EPERM;
	return 0;
}
