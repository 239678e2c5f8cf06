/* Private to sandbox/: the block's processes. */
#ifndef CODELLM_SANDBOX_CHILD_H
#define CODELLM_SANDBOX_CHILD_H

#include <signal.h>

#include "sandbox/sandbox.h"

struct sbx_child_fds {
	int in, out, err;	/* become 0, 1, 2 */
	int ready;		/* "R" or "E<layer>: reason" to the handler */
	int go_rd, go_wr;	/* the handler's go byte; our copy of its write end */
	int sync;		/* the handler wrote our uid/gid maps */
};

/* SIGCHLD, SIGTERM, SIGINT, SIGHUP: what the handler's run loop and a
 * block's init wait for (SIGTERM is the init's parent-death signal). */
void sbx_wait_set(sigset_t *s);

/* write(2) until everything is written; -errno on failure. */
int sbx_write_all(int fd, const void *data, size_t len);

__attribute__((noreturn))
void sbx_child_main(const struct sbx_pipeline *p, size_t i,
		    const struct sbx_child_fds *f);

#endif
