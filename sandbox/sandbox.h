/* Running a request's blocks: the run's directory, the pipeline of one
 * process per block, the relay between them, timeouts and reaping.
 * Library code: returns -errno or fills result structs, never logs. */
#ifndef CODELLM_SANDBOX_H
#define CODELLM_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "json/jstr.h"

enum sbx_mode {
	SBX_NATIVE,
	SBX_BESTEFFORT,
	SBX_OFF,
};

const char *sbx_mode_name(enum sbx_mode m);

/* The run's private directory: <root>/codellm.XXXXXX holding `work` (the
 * blocks' working directory, HOME and TMPDIR) and `code` (block files). */
struct sbx_rundir {
	char root[256];
	char work[300];
	char code[300];
	int root_fd;
};

int sbx_rundir_create(struct sbx_rundir *d, const char *parent);
/* Write a file below `dirfd` with O_EXCL|O_NOFOLLOW and `mode`. */
int sbx_write_file(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode);
/* Remove the whole tree without following any link, also when the code
 * made directories unreadable or nested them very deep. */
int sbx_rundir_remove(struct sbx_rundir *d);
/* The same for any directory fd's contents (used by tests and cleanup). */
int sbx_remove_tree_at(int dirfd);

/* Kill and reap every descendant of the calling process (which must be
 * a child subreaper), however deep or setsid'd. */
void sbx_kill_descendants(void);

struct sbx_block_result {
	int exit_code;		/* 0..255, 128+N after a signal */
	int signal;		/* terminating signal or 0 */
	int started;		/* the process was created */
	int killed;		/* ended by the handler (timeout, disconnect, signal) */
	long duration_ms;
	struct jbuf err;	/* stderr, capped at max_stderr */
	uint64_t err_bytes;	/* stderr produced */
	uint64_t out_bytes;	/* stdout produced */
};

struct sbx_tap {
	struct jbuf data;	/* first max_tap bytes that crossed the edge */
	uint64_t bytes;		/* all bytes that crossed */
};

struct sbx_pipeline;
struct sbx_relay;

/* Called while a run is quiet (every keepalive_ms), and with the last
 * block's stdout as it arrives. A negative return ends the run as a
 * disconnect does. */
struct sbx_callbacks {
	int (*keepalive)(void *ctx);
	int (*output)(void *ctx, const char *data, size_t len);
	void *ctx;
};

enum sbx_end {
	SBX_END_NORMAL,
	SBX_END_TIMEOUT,
	SBX_END_CLIENT,		/* the client went away */
	SBX_END_SIGNAL,		/* SIGTERM/SIGINT/SIGHUP to the handler */
};

struct sbx_pipeline {
	/* in */
	size_t n;
	char *const *const *argv;	/* n argv vectors; argv[0] a bare name or absolute path */
	char *const *envp;
	const char *workdir;
	const char *stdin_data;
	size_t stdin_len;
	enum sbx_mode mode;
	double timeout_s;
	size_t max_stdout, max_stderr, max_tap;
	int tap;			/* keep edge data for the debug surface */
	int client_fd;			/* watched for disconnect, -1 for none */
	int probe_client;		/* cb.keepalive may write to the client now */
	int sig_fd;			/* signalfd for SIGCHLD/TERM/INT/HUP */
	long keepalive_ms;
	struct sbx_callbacks cb;

	/* out */
	struct sbx_block_result *res;
	struct sbx_tap *taps;		/* n-1 edges */
	struct jbuf out;		/* last block's stdout, capped at max_stdout */
	uint64_t out_bytes;
	int out_truncated;
	enum sbx_end end;
	int end_signal;
	long duration_ms;
	char error[256];		/* what failed in setup */
	const char *error_layer;

	/* private */
	pid_t *pids;
	int *ready_fds;
	int go_fd;
	pid_t self;
	struct sbx_relay *relay;	/* pipes between the two phases */
};

/* Signals the run loop needs delivered through a signalfd: block them in
 * the handler and pass the signalfd as sig_fd. */
int sbx_signals_init(void);

/* Phase one: create every block's process and wait until each reports
 * its setup finished. Nothing of the code has run when this returns. On
 * failure every process is gone and p->error says why. */
int sbx_pipeline_start(struct sbx_pipeline *p);
/* Phase two: release every block at once and relay until all have
 * exited and every pipe is drained, or the run ends early. */
int sbx_pipeline_run(struct sbx_pipeline *p);
/* Kill whatever is left (after a failed start or a handler error). */
void sbx_pipeline_abort(struct sbx_pipeline *p);
void sbx_pipeline_free(struct sbx_pipeline *p);

#endif
