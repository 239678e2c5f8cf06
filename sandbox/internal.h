/* Private to sandbox/: the layers' functions, the run directory, the
 * block's process, the system helpers and the captures. The handler
 * includes sandbox.h and run.h; json/ only result.h. */
#ifndef CODELLM_SANDBOX_INTERNAL_H
#define CODELLM_SANDBOX_INTERNAL_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/phase.h"
#include "sandbox/result.h"
#include "sandbox/sandbox.h"

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

/* RLIMIT_CPU of a block process. Soft: the run's wall timeout rounded
 * up plus SBX_CPU_MARGIN_S, or cpu_s rounded up when that is less. A
 * single-threaded process cannot use more CPU time than wall time, so
 * by default only a process burning several cores at once meets it
 * before the wall timeout; the margin covers the setup before the
 * program starts and the kill's own latency. Hard: SBX_CPU_GRACE_S
 * above, the time a program that caught SIGXCPU has to end. */
#define SBX_CPU_MARGIN_S 1
#define SBX_CPU_GRACE_S 2

struct sbx_landlock_spec {
	const char *const *exec_paths;	/* read + execute */
	const char *const *ro_paths;	/* read */
	const char *const *dir_paths;	/* list directories only (/) */
	const char *const *dev_ro;	/* device files, read (+ ioctl) */
	const char *const *dev_rw;	/* device files, read + write (+ ioctl) */
	const char *const *rw_paths;	/* the workdir, /tmp, /dev/shm: everything */
	int allow_tcp;			/* the block's own or the host's network */
};

int sbx_landlock_abi(void);
int sbx_landlock_apply(const struct sbx_landlock_spec *s);
/* What a block's seccomp filter may allow beyond its fixed list. */
struct sbx_seccomp_cfg {
	int netlink_route;	/* allow socket(AF_NETLINK, *, NETLINK_ROUTE): the block has its own network namespace */
	uint32_t uid, gid;	/* the block's own ids inside (65534): set*id/chown to anything else fail with EPERM */
};
/* The filter's signature: a system call number no kernel has (x86-64's
 * table ends below it, x32's starts at 512) that the filter alone
 * answers with an errno no kernel gives for it. Applying the filter
 * calls it: another filter in front (a container runtime's) or a kernel
 * that says EPERM itself (bpf with unprivileged_bpf_disabled) cannot
 * pass for ours. */
#define SBX_SECCOMP_CANARY_NR 511
#define SBX_SECCOMP_CANARY_ERRNO ENOANO
/* Compile the filter (deny by default, ENOSYS) into ret->insns: laid
 * out by hand (what the handler embeds), or by libseccomp from the same
 * rules (the reference tests/unit/test_seccomp_equiv.c holds it to). */
int sbx_seccomp_build(const struct sbx_seccomp_cfg *c, struct sbx_bpf *ret);
int sbx_seccomp_build_libseccomp(const struct sbx_seccomp_cfg *c, struct sbx_bpf *ret);
/* The filter for the block's ids (SBX_BLOCK_ID), compiled at build time:
 * with netlink route sockets or without. */
int sbx_seccomp_prebuilt(int netlink_route, struct sbx_bpf *ret);
/* (Re)load pol->bpf for where pol->net puts the block. */
int sbx_policy_seccomp(struct sbx_policy *pol);
int sbx_seccomp_apply(const struct sbx_bpf *b);
int sbx_seccomp_deny_memfd(void);
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
/* A child can create a user namespace (one fork, one unshare). */
int sbx_userns_works(void);
/* pid's uid and gid maps (setgroups denied first); pid 0: our own */
int sbx_write_maps(pid_t pid, const char *uid_map, const char *gid_map);
/* A block's: inside it is 65534, outside uid and gid (pid 0: our own). */
int sbx_write_block_maps(pid_t pid, uid_t uid, gid_t gid);
/* The host's system trees a block's root mirrors, its programs may run
 * from (Landlock): "/usr", "/bin", ..., NULL. */
#define SBX_SYS_DIRS 7
extern const char *const sbx_sys_dirs[SBX_SYS_DIRS + 1];

/* In the block's first process: private mounts, the minimal root,
 * /proc, pivot_root. *ret_layer names what failed; bit k of
 * *ret_sys_dirs says sbx_sys_dirs[k] is a directory there (the others
 * are absent, or symlinks into one that is). */
int sbx_block_root(const struct sbx_policy *pol, size_t index,
		   const char **ret_layer, unsigned *ret_sys_dirs);

int sbx_rundir_create(struct sbx_rundir *d, const char *parent);
/* The blocks' /etc (sandbox/etc.c), from the directory src (the host's
 * /etc or an environment's), with the host's resolv.conf when resolv.
 * sbx_etc_keep: the copy kept as dir/name, checked and used when still
 * fresh, else made again; a root handler's is cloned for
 * sbx_etc_attach, which puts it at `at` in the run's namespace.
 * sbx_etc_make: made at `at`, for this run only. 0 or -errno. */
int sbx_etc_keep(struct sbx_etc *e, const char *dir, const char *name, const char *src,
		 int resolv);
int sbx_etc_attach(struct sbx_etc *e, const char *at);
int sbx_etc_make(struct sbx_etc *e, const char *at, const char *src, int resolv);
void sbx_etc_release(struct sbx_etc *e);
/* Enter a user + mount namespace of the handler's own and mount the
 * run's tmpfs there: its code, its mask files, and the blocks' /work
 * and /tmp (bounded in bytes and inodes together), and etc_kept (the
 * slot's kept /etc, or NULL) bound at /tmp/etc when it can be (d->etc
 * says); returns the ids the blocks map to. */
int sbx_request_ns(struct sbx_rundir *d, unsigned long long work_bytes,
		   unsigned long long work_inodes, unsigned long long run_bytes,
		   const char *sysroot, const char *etc_kept, uid_t *ret_uid, gid_t *ret_gid);
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

/* ---- sys.c: what every part uses ---- */

/* SIGCHLD, SIGTERM, SIGINT, SIGHUP: what the handler's run loop and a
 * block's init wait for (SIGTERM is the init's parent-death signal). */
void sbx_wait_set(sigset_t *s);
/* write(2) until everything is written; -errno on failure. */
int sbx_write_all(int fd, const void *data, size_t len);
/* Kill and reap every descendant of the calling process (which must be
 * a child subreaper), however deep or setsid'd. */
void sbx_kill_descendants(void);
/* CLOCK_MONOTONIC in milliseconds. */
long sbx_now_ms(void);
/* The online CPUs the kernel lists (/sys/devices/system/cpu/online, as
 * glibc's sysconf counts them; the affinity's count when unreadable). */
long sbx_online_cpus(void);

/* What glibc and musl (the handler's libc: Makefile) wrap differently:
 * the system calls themselves, and strerror's text without a buffer. */
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1U << 0)
#endif
int sbx_close_range(unsigned first, unsigned last, unsigned flags);
int sbx_renameat2(int olddir, const char *oldname, int newdir,
		  const char *newname, unsigned flags);
const char *sbx_errno_text(int err);

/* ---- child.c: a block's process ---- */

struct sbx_child_fds {
	int in, out, err;	/* become 0, 1, 2 */
	int ready;		/* "R" or "E<layer>: reason" to the handler */
	int go_rd, go_wr;	/* the handler's go byte; our copy of its write end */
	int sync;		/* "m": the handler holds our mount namespace and
			 * (the ordinary start) wrote our uid/gid maps */
	int sync_wr;		/* its write end: the handler's, in the shared start */
	/* the shared start (spawn.c): NULL for the ordinary one */
	char *prog_stack;	/* top of the program's stack */
	int exec_wr;		/* ours and the program's; EOF once it exec'd */
	int quiet_wr;		/* the program's "q" to the handler */
};

/* The shared start of a lone native block (spawn.c) is possible
 * wherever the build is (sandbox/raw.h needs sys6.h's system-call
 * entry for every start), but not under AddressSanitizer: its builds
 * fork the program. */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_SHARED_START 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_SHARED_START 0
#endif
#endif
#ifndef SBX_SHARED_START
#define SBX_SHARED_START 1
#endif

/* How long a block's setup may take before the handler gives up on it. */
#define SBX_SETUP_TIMEOUT_S 10

/* What the handler keeps of a shared start until the program has
 * exec'd: the pipe that says so, the block's and the program's stacks,
 * and the handler's own oom_score_adj to take back (the block's raised
 * it). */
struct sbx_shared {
	int exec_fd;
	char *stack, *block_stack;
	size_t stack_len;
	char oom[16];		/* "" when not saved */
};

/* clone()'s entry for the shared start: arg is a struct sbx_child_arg. */
struct sbx_child_arg {
	const struct sbx_pipeline *p;
	size_t i;
	const struct sbx_child_fds *f;
};
int sbx_child_entry(void *arg);

__attribute__((noreturn))
void sbx_child_main(const struct sbx_pipeline *p, size_t i,
		    const struct sbx_child_fds *f);

/* --sandbox off, a lone block whose go byte is sent already: no init,
 * nothing to confine and nothing to wait for, so the program is the
 * handler's own child, started like vfork (it shares the handler's
 * memory, the handler sleeping, until it execs: no copy of the
 * handler's page tables, no copy-on-write faults on either side). The
 * handler, a child subreaper, reaps it and sweeps what it leaves, as
 * the init would. Its pid, or -errno. */
pid_t sbx_spawn_direct(const struct sbx_pipeline *p, size_t i,
		       const struct sbx_child_fds *f);

/* ---- spawn.c, relay.c: a pipeline's two phases ---- */

/* What one read or write of the relay moves at most. */
#define RELAY_BUF 65536

/* Relay state, private to one run: made by phase one, relayed by phase
 * two. */
struct edge {
	int up;		/* block i's stdout, read end */
	int down;	/* block i+1's stdin, write end */
	char *buf;
	size_t off, len;
	/* where the last poll put block i's stderr, its init's end record
	 * and this edge (-1: not polled): each is read or written only
	 * once poll says it can be */
	int err_pix, end_pix, pix;
};

struct sbx_relay {
	struct edge *edges;
	int out;	/* last block's stdout */
	int *err;	/* each block's stderr */
	long t0;
	long give_up;	/* after the kill: when the pipes are closed undrained, or -1 */
};

/* Close *fd if it is open and set it to -1. */
void sbx_close_fd(int *fd);
/* Close every pipe of the run, free f (NULL: nothing to do). */
void sbx_free_fds(struct sbx_pipeline *p, struct sbx_relay *f);

/* ---- capture.c, relay.c: the result ---- */

/* Append data[0..n) to c, keeping at most `limit` bytes: the first ones
 * (head) or the last ones (tail). */
void sbx_capture_head(struct sbx_capture *c, size_t limit, const void *data, size_t n);
void sbx_capture_tail(struct sbx_capture *c, size_t limit, const void *data, size_t n);
void sbx_capture_free(struct sbx_capture *c);
/* The run's exit status and the block that decided it (result.h). */
void sbx_result_decide(struct sbx_result *r);

/* sandbox/cgroup.c: the run's own cgroup. create: 0, or -errno with
 * cg->why (cg->version 0: none); owner: the uid the handler becomes
 * before the run ends (it removes the cgroup then), or -1; slot: a name
 * unique to the run's slot (kept and used again on v1), or NULL.
 * enter/leave move the calling process in and out. */
void sbx_cgroup_init(struct sbx_cgroup *cg);
int sbx_cgroup_create(struct sbx_cgroup *cg, unsigned long long memory_max,
		      unsigned long long pids_max, uid_t owner, const char *slot);
int sbx_cgroup_enter(struct sbx_cgroup *cg);
int sbx_cgroup_leave(struct sbx_cgroup *cg);
void sbx_cgroup_stats(const struct sbx_cgroup *cg, struct sbx_usage *u);
int sbx_cgroup_remove(struct sbx_cgroup *cg);
void sbx_cgroup_close(struct sbx_cgroup *cg);
/* This process's cgroup directories (dir[1] v2, dir[0] v1's memory
 * hierarchy; "" where none). BY_ANY, what create() uses: systemd's
 * usual places, the mount table when they do not answer for every
 * hierarchy; BY_USUAL and BY_MOUNTS, one way only (a test compares
 * them). */
enum sbx_cgroup_find { SBX_CGROUP_BY_ANY, SBX_CGROUP_BY_USUAL, SBX_CGROUP_BY_MOUNTS };
void sbx_cgroup_dirs(enum sbx_cgroup_find how, char dir[2][PATH_MAX]);

#endif
