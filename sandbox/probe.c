/* What this host's kernel allows, for /healthz and --probe. The real
 * answer to "can native mode run here" is a real block's setup; these
 * are the facts an operator reads beside it. */
#include <errno.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

int sbx_userns_works(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) < 0 ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void sbx_probe_host(struct sbx_probe *r)
{
	struct stat st;

	r->userns = sbx_userns_works();
	r->landlock_abi = sbx_landlock_abi();
	r->seccomp = sbx_seccomp_available();
	r->cgroup2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
	r->net_empty = sbx_net_is_empty();
}
