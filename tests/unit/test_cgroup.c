/* Where the handler finds its own cgroups (sandbox/cgroup.c): systemd's
 * usual places, tried first to spare a read of the mount table, must
 * give what the mount table gives, here and in a mount namespace of the
 * test's own where the usual places hold something else. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

/* In a child with a mount namespace of its own: fn's exit status. */
static int in_own_mountns(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Something else (a tmpfs) at the usual v1 memory place: the usual
 * places must not answer (statfs says tmpfs), so create() reads the
 * mount table instead. 0 when they gave nothing. */
static int shadowed(void)
{
	char usual[2][PATH_MAX];

	if (mount("t", "/sys/fs/cgroup/memory", "tmpfs", 0, "size=64k") < 0)
		return 77;
	sbx_cgroup_dirs(SBX_CGROUP_BY_USUAL, usual);
	return usual[0][0] || usual[1][0] ? 1 : 0;
}

int main(void)
{
	char usual[2][PATH_MAX], table[2][PATH_MAX];
	struct stat st;
	int rc;

	sbx_cgroup_dirs(SBX_CGROUP_BY_USUAL, usual);
	sbx_cgroup_dirs(SBX_CGROUP_BY_MOUNTS, table);
	tap_ok(table[0][0] || table[1][0], "the mount table finds this process's cgroup "
	       "(v1 memory %s, v2 %s)", table[0][0] ? table[0] : "none",
	       table[1][0] ? table[1] : "none");
	tap_ok(usual[0][0] || usual[1][0], "the usual places answer on this host "
	       "(systemd's layout: the read of the mount table is spared)");
	for (int v = 0; v < 2; v++)
		tap_ok(!usual[v][0] || !strcmp(usual[v], table[v]),
		       "v%d: the usual places give what the mount table gives (%s / %s)",
		       v ? 2 : 1, usual[v], table[v]);
	tap_ok(!usual[0][0] || (stat(usual[0], &st) == 0 && S_ISDIR(st.st_mode)),
	       "the v1 directory found is a directory");
	/* /proc/self/cgroup's "0::PATH" line names the v2 hierarchy (until
	 * this test, a parse that compared "0:" with "0" never found it) */
	if (stat("/sys/fs/cgroup/unified/cgroup.procs", &st) == 0 ||
	    stat("/sys/fs/cgroup/cgroup.procs", &st) == 0)
		tap_ok(table[1][0] && usual[1][0], "a v2 hierarchy is mounted: both ways find "
		       "this process's v2 cgroup (%s)", table[1]);
	/* not a check where it cannot be made (no v1 hierarchy there) */
	if (!usual[0][0] || geteuid() != 0) {
		tap_diag("no v1 memory hierarchy at the usual place, or not root: the "
			 "shadowed-place case is not run");
	} else {
		rc = in_own_mountns(shadowed);
		tap_ok(rc == 0, "a tmpfs over /sys/fs/cgroup/memory: the usual places do not "
		       "answer (rc %d)", rc);
	}
	return tap_done();
}
