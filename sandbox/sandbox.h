/* Running a request's blocks: the run's directory, the pipeline of one
 * process per block, the relay between them, timeouts and reaping.
 * Library code: returns -errno or fills result structs, never logs. */
#ifndef CODELLM_SANDBOX_H
#define CODELLM_SANDBOX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/result.h"

struct sbx_limits {
	unsigned long long memory;	/* RLIMIT_DATA */
	unsigned long long address_space;	/* RLIMIT_AS */
	unsigned long long file_bytes;	/* RLIMIT_FSIZE */
	unsigned long long procs;	/* RLIMIT_NPROC */
	unsigned long long open_files;	/* RLIMIT_NOFILE */
	double cpu_s;			/* RLIMIT_CPU soft (--max-cpu-seconds), 0: from the timeout */
};

struct sbx_bpf {
	void *insns;		/* struct sock_filter[] */
	size_t len;		/* bytes */
};

/* The blocks' /etc (sandbox/etc.c): a directory of copies and written
 * files, with a point for each entry bound from the host's /etc. */
struct sbx_etc {
	char dir[300];			/* the handler's view of it; "" until made */
	char kept[PATH_MAX];		/* the slot's kept copy, or "" */
	int tree;			/* its clone, until attached (a root handler), or -1 */
	int reused;			/* the kept copy was still fresh */
	/* the entries to bind: a kind ('d'/'f' from the source's /etc,
	 * 'D'/'F' from the host's) and a name each, NUL-terminated, an
	 * empty one last */
	char binds[4096];
	size_t binds_len;
};

/* Files of the run that every block's root uses: the clean init, the
 * contents that mask global /proc files and the /etc (sbx_run_prepare
 * makes them). */
struct sbx_run_files {
	int init_fd;			/* sealed memfd holding codellm-init, or -1 */
	const char *masks;		/* directory of the /proc mask files */
	const struct sbx_etc *etc;	/* the blocks' /etc, or NULL (no root) */
};

/* What a run applies. The handler fills it once per request. */
struct sbx_policy {
	enum sbx_mode mode;
	unsigned layers;		/* SBX_BIT()s to apply */
	enum sbx_net net;
	int allow_network;		/* --sandbox-network */
	struct sbx_limits lim;
	struct sbx_bpf bpf;		/* compiled seccomp filter */
	uid_t map_uid;			/* the block's ids in the handler's user namespace */
	gid_t map_gid;
	const char *work;		/* handler's view of the run's directories */
	const char *code;
	const char *roots;		/* per-block root mount points */
	const char *tmp;		/* handler's view of the run's /tmp */
	int has_bag;			/* code/fleet_input.json exists */
	const char *sysroot;		/* an environment's tree the blocks get as
					 * their system trees and /etc, or NULL: the
					 * host's */
	unsigned long long shm_bytes;	/* each block's /dev/shm and SysV shm */
	struct sbx_cgroup *cg;		/* the run's cgroup, or NULL */
	int no_memfd;			/* no cgroup bounds memory: memfd_create
					 * fails (ENOSYS) */
	unsigned edge_pipe_bytes;	/* each pipe of an edge; 0: the default */
	struct sbx_run_files files;
};

/* The run's private directory: <root>/codellm.XXXXXX holding `work` (the
 * blocks' working directory, HOME and TMPDIR) and `code` (block files),
 * or, with the workdir layer, a tmpfs in the handler's own mount
 * namespace. */
/* A run's own cgroup (sandbox/cgroup.c). */
struct sbx_cgroup {
	int version;			/* 1 or 2; 0: none */
	char run[4096];			/* the run's cgroup directory */
	char home[4096];		/* the handler's own (or its v2 leaf) */
	int run_fd, home_fd;		/* their cgroup.procs (v1: tasks), opened as created */
	int run_by_tid, home_by_tid;	/* the fd is a v1 tasks file: write "0" */
	unsigned long long limit;
	int reused;			/* a slot's, kept for its next run (v1) */
	long long oom_base;		/* its OOM kills before this run */
	char why[320];			/* without one: why not */
};

struct sbx_rundir {
	char root[256];
	char work[300];
	char tmp[300];
	char code[300];
	char roots[300];
	char masks[300];
	char data[300];
	/* an environment's tree as the run's namespace sees it: bound at
	 * /tmp/sysroot when the run's tmpfs on /tmp would hide it; "" */
	char sysroot[300];
	char etc[300];		/* the slot's kept /etc bound there, or "" */
	int root_fd;
	int tmpfs;		/* lives in the handler's mount namespace */
};

struct sbx_pipeline;
struct sbx_relay;
struct sbx_shared;

/* Called while a run is quiet (every keepalive_ms), and with the last
 * block's stdout as it arrives. A negative return ends the run as a
 * disconnect does. */
struct sbx_callbacks {
	int (*keepalive)(void *ctx);
	int (*output)(void *ctx, const char *data, size_t len);
	void *ctx;
};

struct sbx_pipeline {
	/* in */
	size_t n;
	char *const *const *argv;	/* n argv templates; "{file}" is the block's file */
	const char *const *files;	/* n file names in the code directory */
	int unbuffered;			/* PYTHONUNBUFFERED=1 (streams) */
	struct sbx_policy *pol;		/* besteffort drops what fails */
	const char *stdin_data;
	size_t stdin_len;
	double timeout_s;
	size_t max_stdout, max_stderr, max_tap;
	int tap;			/* keep edge data for the debug surface */
	int client_fd;			/* watched for disconnect, -1 for none */
	int probe_client;		/* cb.keepalive may write to the client now */
	int stop_at_cap;		/* end the run once stdout passes max_stdout */
	int go_at_ready;		/* one block: it runs as soon as it is set
					 * up (the caller goes right after) */
	int sig_fd;			/* signalfd for SIGCHLD/TERM/INT/HUP */
	long keepalive_ms;
	struct sbx_callbacks cb;

	/* out: what json/ reads, set by phase two */
	struct sbx_result r;
	/* out of phase one */
	char error[256];		/* what failed in setup */
	int error_layer;		/* enum sbx_layer, or -1 */
	unsigned missing;		/* layers besteffort could not apply */

	/* private */
	pid_t *pids;
	int *ready_fds;
	char *reported;			/* block i's init sent its end record */
	int *mnt_fds;			/* the blocks' mount namespaces, held */
	int go_fd;
	int go_sent;			/* the go bytes are in the pipe */
	pid_t self;
	struct sbx_relay *relay;	/* pipes between the two phases */
	struct sbx_shared *shared;	/* a shared start not yet settled */
};

/* Signals the run loop needs delivered through a signalfd: block them in
 * the handler and pass the signalfd as sig_fd. */
int sbx_signals_init(void);

/* Phase one: create every block's process and wait until each reports
 * its setup finished. Nothing of the code has run when this returns
 * (but a lone block with go_at_ready, which may have started once set
 * up). On failure every process is gone and p->error says why: no code
 * ran. */
int sbx_pipeline_start(struct sbx_pipeline *p);
/* After the run is ended and every process of it killed (timeout,
 * disconnect, signal, output cap), the relay reads the pipes until EOF
 * for at most this long, then closes them: a process outside the run
 * that holds a write end (--sandbox off) cannot keep the answer back. */
#define SBX_DRAIN_AFTER_KILL_MS 2000

/* Release every block at once; the timeout counts from here. Once per
 * run (later calls do nothing): a caller that has more to do before it
 * relays (an answer's head, a log line) releases the blocks first, so
 * the code starts while it does. */
void sbx_pipeline_go(struct sbx_pipeline *p);
/* Phase two: release every block (if sbx_pipeline_go has not) and relay
 * until all have ended and every pipe is drained, or the run ends
 * early (then at most SBX_DRAIN_AFTER_KILL_MS after the kill). A block
 * has ended once its init's end record came (sandbox/endrec.h): its
 * init may still be on its way out when this returns. */
int sbx_pipeline_run(struct sbx_pipeline *p);
/* 1 when every block's init sent its end record: nothing of the run can
 * run any more, and what is left are inits on their way out, which
 * sbx_pipeline_abort reaps (the caller may answer and let the run's
 * slot go first). */
int sbx_pipeline_settled(const struct sbx_pipeline *p);
/* Kill whatever is left (after a failed start or a handler error) and
 * reap every process of the run. */
void sbx_pipeline_abort(struct sbx_pipeline *p);
void sbx_pipeline_free(struct sbx_pipeline *p);

/* Concurrency slots shared by every handler instance (SPEC §9): N lock
 * files in a directory that outlives single instances; a run holds one
 * flock for its lifetime, and the kernel releases it however the
 * process ends (also on SIGKILL or a crash). The files are 0600 and
 * must belong to the service user (the handler's euid).
 * Takes a free slot of `n` in `dir`: returns its fd (>= 0, CLOEXEC; keep
 * it open), -EBUSY when all are taken, another -errno when the directory
 * is unusable. */
int sbx_slot_take(const char *dir, unsigned n, unsigned *ret_index);

/* The slot directory: `configured` (--runtime-dir), else the first path
 * of $RUNTIME_DIRECTORY, else /run/codellm; created 0700 when missing.
 * When it belongs to another user (a container's tmpfs, an emptyDir),
 * its subdirectory codellm-EUID instead (dir is rewritten): there
 * already (copied up from an image), or made 0700 where this user may;
 * refused when it is not this user's alone. 0, or -errno. */
int sbx_slot_dir(const char *configured, char *dir, size_t len);

/* A small file every instance shares in the slot directory (/healthz's
 * check): opened, created 0600 when missing, only when it is a regular
 * file of the caller's euid that others cannot write; -1 otherwise. */
int sbx_shared_open(const char *dir, const char *name);
/* Its content, when written less than max_age_ms ago, into buf (NUL-
 * terminated) with *at the time it was written (ms since the epoch):
 * the content's length, or -1 (stale, from the future, malformed, being
 * written). */
ssize_t sbx_shared_read(int fd, long max_age_ms, char *buf, size_t len, long *at);
/* Replaces the content, stamped with `at`; skipped while another
 * instance writes. */
void sbx_shared_write(int fd, long at, const char *data, size_t len);
long sbx_wall_ms(void);

/* ---- environments (sandbox/env.c) ---- */

/* An environment's name: [a-z0-9][a-z0-9._-]*, at most this long. */
#define SBX_ENV_NAME_MAX 63
int sbx_env_name_ok(const char *name);

/* An environment, ENVS/NAME: its directory (real path), its tree (root/,
 * what blocks get as their system trees) and manifest.json, and the key
 * a full verification is kept under: the identity (device, inode,
 * change time, size, mode) of the manifest, the tree's directory and its
 * top-level entries, which changes when any of them is replaced, moved,
 * or given another owner or mode. */
struct sbx_env {
	char dir[PATH_MAX];
	char root[PATH_MAX + 8];
	char manifest[PATH_MAX + 16];
	char key[1024];
};

/* The checks every use makes: NAME is a name, ENVS/NAME and every
 * directory above it, the manifest, root/ and its top-level entries
 * belong to root and nobody else may write them (a sticky directory,
 * as /tmp, may be above), and the directories are searchable by all. 0,
 * or -errno (-ENOENT: no such environment) with the reason in why. */
int sbx_env_open(const char *envs, const char *name, struct sbx_env *ret, char *why,
		 size_t whylen);

/* Every entry of the tree's top-level entries that blocks get (the bin,
 * lib and sbin entries, etc, usr), depth first in bytewise name order,
 * fed to sink as records: type ('d', 'f', 'l'), mode in octal, owner,
 * group and the path relative to the tree, each ended by a NUL, then a
 * regular file's size (decimal, NUL) and bytes, or a link's target and
 * a NUL. The caller hashes the stream: that is the tree's digest.
 * An entry that is not root's, that others may write, that not all may
 * read (a directory: search), or that is not a directory, regular file
 * or symbolic link ends the walk with -EPERM and the reason in why. */
typedef void (*sbx_env_sink)(void *ctx, const void *data, size_t len);
int sbx_env_walk(const char *root, sbx_env_sink sink, void *ctx, char *why, size_t whylen);

/* Whether the bare program name resolves in the tree as a block's PATH
 * (/usr/local/bin, /usr/bin, /bin) resolves it there, to an executable
 * regular file (links followed inside the tree only). */
int sbx_env_has_program(const char *root, const char *name);

#endif
