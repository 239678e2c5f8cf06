/* Running a request's blocks: the run's directory, the pipeline of one
 * process per block, the relay between them, timeouts and reaping.
 * Library code: returns -errno or fills result structs, never logs. */
#ifndef CODELLM_SANDBOX_H
#define CODELLM_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/result.h"

const char *sbx_layer_name(int layer);
/* -1 when unknown */
int sbx_layer_from_name(const char *name, size_t len);

/* Landlock older than this is refused: ABI 3 is the first that controls
 * truncation, so "read-only" is complete. */
#define SBX_LANDLOCK_MIN_ABI 3
/* The first ABI that scopes abstract unix sockets and signals: below it a
 * block on a network namespace it does not own (--sandbox-network, or the
 * shared empty one) could reach the host's abstract sockets. */
#define SBX_LANDLOCK_SCOPE_ABI 6

/* The block's ids inside its user namespace (SPEC §7). */
#define SBX_BLOCK_ID 65534

/* Paths inside a block's root. */
#define SBX_IN_WORK "/work"
#define SBX_IN_CODE "/code"
#define SBX_IN_TMP "/tmp"
#define SBX_IN_SHM "/dev/shm"
#define SBX_BAG_NAME "fleet_input.json"

struct sbx_limits {
	unsigned long long memory;	/* RLIMIT_DATA */
	unsigned long long address_space;	/* RLIMIT_AS */
	unsigned long long file_bytes;	/* RLIMIT_FSIZE */
	unsigned long long procs;	/* RLIMIT_NPROC */
	unsigned long long open_files;	/* RLIMIT_NOFILE */
	double cpu_s;			/* RLIMIT_CPU soft (--max-cpu-seconds), 0: from the timeout */
};

/* RLIMIT_CPU of a block process. Soft: the run's wall timeout rounded
 * up plus SBX_CPU_MARGIN_S, or cpu_s rounded up when that is less. A
 * single-threaded process cannot use more CPU time than wall time, so
 * by default only a process burning several cores at once meets it
 * before the wall timeout; the margin covers the setup before the
 * program starts and the kill's own latency. Hard: SBX_CPU_GRACE_S
 * above, the time a program that caught SIGXCPU has to end. */
#define SBX_CPU_MARGIN_S 1
#define SBX_CPU_GRACE_S 2

struct sbx_bpf {
	void *insns;		/* struct sock_filter[] */
	size_t len;		/* bytes */
};

struct sbx_landlock_spec {
	const char *const *exec_paths;	/* read + execute */
	const char *const *ro_paths;	/* read */
	const char *const *dir_paths;	/* list directories only (/) */
	const char *const *dev_ro;	/* device files, read (+ ioctl) */
	const char *const *dev_rw;	/* device files, read + write (+ ioctl) */
	const char *const *rw_paths;	/* the workdir, /tmp, /dev/shm: everything */
	int allow_tcp;			/* the block's own or the host's network */
};

/* Files of the run that every block's root uses: the clean init and the
 * contents that mask global /proc files (sbx_run_prepare makes them). */
struct sbx_run_files {
	int init_fd;			/* sealed memfd holding codellm-init, or -1 */
	const char *masks;		/* directory of the /proc mask files */
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
	unsigned long long shm_bytes;	/* each block's /dev/shm and SysV shm */
	struct sbx_run_files files;
};

int sbx_landlock_abi(void);
int sbx_landlock_apply(const struct sbx_landlock_spec *s);
/* What a block's seccomp filter may allow beyond its fixed list. */
struct sbx_seccomp_cfg {
	int netlink_route;	/* allow socket(AF_NETLINK, *, NETLINK_ROUTE): the block has its own network namespace */
	uint32_t uid, gid;	/* the block's own ids inside (65534): set*id/chown to anything else fail with EPERM */
};
/* Compile the filter (deny by default, ENOSYS) into ret->insns. */
int sbx_seccomp_build(const struct sbx_seccomp_cfg *c, struct sbx_bpf *ret);
/* The filter for the block's ids (SBX_BLOCK_ID), compiled at build time:
 * with netlink route sockets or without. */
int sbx_seccomp_prebuilt(int netlink_route, struct sbx_bpf *ret);
/* (Re)load pol->bpf for where pol->net puts the block. */
int sbx_policy_seccomp(struct sbx_policy *pol);
int sbx_seccomp_apply(const struct sbx_bpf *b);
int sbx_seccomp_available(void);
void sbx_bpf_free(struct sbx_bpf *b);
void sbx_cpu_rlimit(const struct sbx_limits *l, double timeout_s,
		    unsigned long long *ret_soft, unsigned long long *ret_hard);
/* Every rlimit of the program process; timeout_s is the run's wall
 * timeout, RLIMIT_CPU's default. */
int sbx_rlimits_apply(const struct sbx_limits *l, double timeout_s);
/* The calling process's own supplementary groups other than its gid:
 * 1 when it has any, 0 when none, -errno. */
int sbx_has_groups(void);
int sbx_caps_drop(void);
int sbx_bounding_drop(void);
int sbx_net_is_empty(void);
int sbx_write_maps(pid_t pid, const char *uid_map, const char *gid_map);
/* In the block's first process: private mounts, the minimal root,
 * /proc, pivot_root. *ret_layer names what failed. */
int sbx_block_root(const struct sbx_policy *pol, size_t index,
		   const char **ret_layer);

/* The run's private directory: <root>/codellm.XXXXXX holding `work` (the
 * blocks' working directory, HOME and TMPDIR) and `code` (block files),
 * or, with the workdir layer, a tmpfs in the handler's own mount
 * namespace. */
struct sbx_rundir {
	char root[256];
	char work[300];
	char tmp[300];
	char code[300];
	char roots[300];
	char masks[300];
	char data[300];
	int root_fd;
	int tmpfs;		/* lives in the handler's mount namespace */
};

int sbx_rundir_create(struct sbx_rundir *d, const char *parent);
/* Enter a user + mount namespace of the handler's own and mount the
 * run's tmpfs there: its code, its mask files, and the blocks' /work
 * and /tmp (bounded in bytes and inodes together); returns the ids the
 * blocks map to. */
int sbx_request_ns(struct sbx_rundir *d, unsigned long long work_bytes,
		   unsigned long long work_inodes, unsigned long long run_bytes,
		   uid_t *ret_uid, gid_t *ret_gid);
/* A root handler becomes `uid` (its run slot's own), with no
 * supplementary groups, before it makes the run's user namespace: the
 * run's per-user kernel limits are then its own (THREATS.md #17). */
int sbx_become(uid_t uid);
/* Whether our user namespace maps `uid` (as uid and gid). */
int sbx_can_become(uid_t uid);
/* Drop every supplementary group other than our gid, if there are any
 * (needs CAP_SETGID then). */
int sbx_drop_groups(void);
/* In the run's user namespace, when runs share one uid: 1/share of the
 * per-user kernel limits for this run (inotify, queued signals, POSIX
 * message queues). */
int sbx_share_ucounts(unsigned share);
/* A fresh IPC namespace for the next block, owned by the run's user
 * namespace so the handler can bound its SysV limits (--shm-bytes). */
int sbx_block_ipc_ns(unsigned long long shm_bytes);
/* Loopback up in the calling process's (own) network namespace. */
int sbx_net_lo_up(void);
/* The sealed, execute-only memfd holding codellm-init. */
int sbx_init_memfd(void);
/* Write the files that mask host-wide /proc entries into `dir`. */
int sbx_write_masks(const char *dir, unsigned long long memory);
/* Remove the run directory: unmount the tmpfs, or remove the tree. */
int sbx_rundir_unmount(struct sbx_rundir *d);
/* Write a file below `dirfd` with O_EXCL|O_NOFOLLOW and `mode`. */
int sbx_write_file(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode);
/* Remove the whole tree without following any link, also when the code
 * made directories unreadable or nested them very deep. */
int sbx_rundir_remove(struct sbx_rundir *d);
/* The same for any directory fd's contents (used by tests and cleanup). */
int sbx_remove_tree_at(int dirfd);

void sbx_probe_host(struct sbx_probe *r);
/* A child can create a user namespace (one fork, one unshare). */
int sbx_userns_works(void);

/* Kill and reap every descendant of the calling process (which must be
 * a child subreaper), however deep or setsid'd. */
void sbx_kill_descendants(void);

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
/* After the run is ended and every process of it killed (timeout,
 * disconnect, signal, output cap), the relay reads the pipes until EOF
 * for at most this long, then closes them: a process outside the run
 * that holds a write end (--sandbox off) cannot keep the answer back. */
#define SBX_DRAIN_AFTER_KILL_MS 2000

/* Phase two: release every block at once and relay until all have
 * exited and every pipe is drained, or the run ends early (then at
 * most SBX_DRAIN_AFTER_KILL_MS after the kill). */
int sbx_pipeline_run(struct sbx_pipeline *p);
/* Kill whatever is left (after a failed start or a handler error). */
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
int slot_take(const char *dir, unsigned n, unsigned *ret_index);

#endif
