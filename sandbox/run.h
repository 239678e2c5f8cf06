/* A request's run as the handler sees it. */
#ifndef CODELLM_SANDBOX_RUN_H
#define CODELLM_SANDBOX_RUN_H

#include "json/jstr.h"
#include "sandbox/sandbox.h"

struct sbx_config {
	enum sbx_mode mode;
	int allow_network;		/* --sandbox-network */
	struct sbx_limits lim;
	unsigned long long workdir_bytes;	/* --workdir-bytes */
	unsigned long long workdir_inodes;	/* --workdir-inodes */
	unsigned long long run_bytes;	/* room for code and bag */
	unsigned long long shm_bytes;	/* --shm-bytes: /dev/shm and SysV per block */
	uid_t run_uid;			/* a root handler's uid for this run, or -1 */
	unsigned share;			/* runs that may share the uid (--max-concurrent) */
	const char *tmp_parent;		/* run directories without the workdir layer */
};

struct sbx_run {
	struct sbx_policy pol;
	struct sbx_rundir dir;
	unsigned missing;		/* besteffort: layers absent before any block */
	int code_fd;
};

/* Decide the layers and the network, make the run's directory, compile
 * the filter. On failure *ret_layer names the layer (or is -1) and msg
 * says what happened. */
int sbx_run_prepare(struct sbx_run *run, const struct sbx_config *cfg,
		    size_t nblocks, int *ret_layer, char *msg, size_t msglen);
int sbx_run_add_file(struct sbx_run *run, const char *name, const void *data,
		     size_t len);
int sbx_run_add_bag(struct sbx_run *run, const void *data, size_t len);
/* Remove the run's directory and free what prepare made. */
int sbx_run_finish(struct sbx_run *run);
/* The "sandbox" object of codellm's answer. */
void sbx_run_report(const struct sbx_run *run, unsigned missing_now,
		    struct jbuf *b);

#endif
