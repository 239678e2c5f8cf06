/* A request's run as the handler sees it. */
#ifndef CODELLM_SANDBOX_RUN_H
#define CODELLM_SANDBOX_RUN_H

#include "sandbox/sandbox.h"

struct sbx_config {
	enum sbx_mode mode;
	int allow_network;		/* --sandbox-network */
	int share_netns;		/* --share-netns */
	struct sbx_limits lim;
	unsigned long long workdir_bytes;	/* --workdir-bytes */
	unsigned long long workdir_inodes;	/* --workdir-inodes */
	unsigned long long run_bytes;	/* room for code and bag */
	unsigned long long shm_bytes;	/* --shm-bytes: /dev/shm and SysV per block */
	uid_t run_uid;			/* a root handler's uid for this run, or -1 */
	unsigned share;			/* runs that may share the uid (--max-concurrent) */
	const char *tmp_parent;		/* run directories without the workdir layer */
	const char *sysroot;		/* an environment's tree (sbx_env.root) the
					 * blocks get as their system trees, or NULL */
	unsigned long long run_memory_max;	/* --run-memory-max: the run's
					 * cgroup's bound; 0: no cgroup */
	char cgroup_slot[64];		/* the slot's cgroup name, "": none */
	const char *keep_dir;		/* the runtime directory: what a slot
					 * keeps between its runs (its /etc), or NULL */
	int slot;			/* the run's slot, with keep_dir */
};

struct sbx_run {
	struct sbx_policy pol;
	struct sbx_rundir dir;
	unsigned missing;		/* besteffort: layers absent before any block */
	int code_fd;
	struct sbx_cgroup cg;		/* the run's own cgroup, where it may have one */
	struct sbx_etc etc;		/* the blocks' /etc */
};

/* Decide the layers and the network, make the run's directory, compile
 * the filter. On failure *ret_layer names the layer (or is -1) and msg
 * says what happened. */
int sbx_run_prepare(struct sbx_run *run, const struct sbx_config *cfg,
		    size_t nblocks, int *ret_layer, char *msg, size_t msglen);
int sbx_run_add_file(struct sbx_run *run, const char *name, const void *data,
		     size_t len);
int sbx_run_add_bag(struct sbx_run *run, const void *data, size_t len);
/* A request's file, written into the workdir as the blocks' own (their
 * uid, mode 0644) under a name the request parser checked; O_EXCL. */
int sbx_run_add_input(struct sbx_run *run, const char *name, const void *data,
		      size_t len);
/* After every block has ended: what /work/out holds, read safely from
 * outside (sandbox/artifacts.c). The blocks make the directory when they
 * want artifacts; nothing of the run's own takes a name in the workdir
 * (a program may write a file named out): without a directory there,
 * there are none. The first max_count entries in name
 * order carry their data while max_bytes lasts; the others say why
 * not. 0, or -errno (ENOMEM). Free with sbx_artifacts_free. */
int sbx_run_artifacts(const struct sbx_run *run, size_t max_count, size_t max_bytes,
		      struct sbx_artifacts *ret);
void sbx_artifacts_free(struct sbx_artifacts *a);
/* Remove the run's directory and free what prepare made. */
int sbx_run_finish(struct sbx_run *run);
/* The layers the run had, as its answer reports them; missing_now is
 * what its blocks could not apply (besteffort, sbx_pipeline.missing). */
void sbx_run_layers(const struct sbx_run *run, unsigned missing_now,
		    struct sbx_layers *ret);
/* After sbx_pipeline_run: p's result with the run's layers filled in. */
const struct sbx_result *sbx_run_result(const struct sbx_run *run,
					struct sbx_pipeline *p);

/* /healthz's and --probe's check: whether cfg's mode can set up a
 * block here, and the host's facts. Returns ret->available. */
int sbx_self_test(const struct sbx_config *cfg, struct sbx_health *ret);

#endif
