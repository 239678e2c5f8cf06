/* What this host's kernel allows, for /healthz and --probe. The real
 * answer to "can native mode run here" is a real block's setup
 * (sbx_self_test); the probe's facts are what an operator reads beside
 * it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/run.h"

void sbx_probe_host(struct sbx_probe *r)
{
	struct stat st;

	r->userns = sbx_userns_works();
	r->landlock_abi = sbx_landlock_abi();
	r->seccomp = sbx_seccomp_available();
	r->cgroup2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
	r->net_empty = sbx_net_is_empty();
}

/* A real block set up (that never runs): prepare the run, start its
 * one process, kill it. */
int sbx_self_test(const struct sbx_config *cfg, struct sbx_health *ret)
{
	static char prog_true[] = "true";
	static char *const true_argv[] = { prog_true, NULL };
	static char *const *const argvs[] = { true_argv };
	static const char *const files[] = { "probe" };
	struct sbx_run run;
	struct sbx_pipeline p = {0};

	memset(ret, 0, sizeof *ret);
	ret->mode = cfg->mode;
	ret->failed_layer = -1;
	sbx_probe_host(&ret->host);
	ret->available = sbx_run_prepare(&run, cfg, 1, &ret->failed_layer, ret->error,
					 sizeof ret->error) == 0;
	if (ret->available) {
		p.n = 1;
		p.pol = &run.pol;
		p.argv = argvs;
		p.files = files;
		p.client_fd = -1;
		p.sig_fd = -1;
		ret->available = sbx_pipeline_start(&p) == 0;
		if (!ret->available) {
			ret->failed_layer = p.error_layer;
			snprintf(ret->error, sizeof ret->error, "%s", p.error);
		}
		sbx_pipeline_abort(&p);
	}
	sbx_run_layers(&run, p.missing, &ret->layers);
	if (run.cg.version)
		snprintf(ret->memory, sizeof ret->memory,
			 "memory: each run's cgroup (v%d, below %.200s), at most %llu bytes",
			 run.cg.version, run.cg.home, run.cg.limit);
	else if (cfg->run_memory_max)
		snprintf(ret->memory, sizeof ret->memory,
			 "memory: unbounded by cgroup (%s); memfd_create refused, each "
			 "process bounded by its rlimits", run.cg.why);
	else
		snprintf(ret->memory, sizeof ret->memory,
			 "memory: unbounded by cgroup (--run-memory-max 0); memfd_create "
			 "refused, each process bounded by its rlimits");
	sbx_pipeline_free(&p);
	sbx_run_finish(&run);
	return ret->available;
}
