/* The block's system-call filter, compiled at build time
 * (sandbox/gen/seccomp-gen; the handler embeds the result) and
 * installed by each program process as raw BPF, the last step before
 * execve. The rules are written twice: for libseccomp (the reference)
 * and laid out by hand (what is embedded: see the end of this file).
 * It is an allowlist: a call it does not name fails with ENOSYS, as on a kernel too old to have it, so a
 * program takes its fallback. Calls newer than upstream libseccomp
 * 2.5.4 knows (Linux 5.17) are raw x86-64 numbers.
 *
 * Two habits of libseccomp 2.5.4 (db.c db_rule_add) shape the code:
 * a rule without argument checks silently swallows every rule with
 * them for the same call, whatever their actions and in either order;
 * and rules with different actions on one call are tried in an order
 * libseccomp picks (by argument, operator, value), not ours. So a call
 * gets one plain rule or argument rules only (rule() checks that), and
 * the argument rules of one call never overlap and together cover
 * every value: which rule libseccomp tries first cannot matter. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/internal.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define LOW32 0xffffffffULL

/* Allowed whatever the arguments: what programs in python3, bash, node,
 * ruby, php, perl and their everyday subprocesses call. */
static const char *const allow_names[] = {
	/* files: interpreters, coreutils, tar, sqlite (locks, fsync) */
	"read", "write", "open", "openat", "openat2", "creat", "close", "close_range",
	"lseek", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"preadv2", "pwritev2", "stat", "fstat", "lstat", "newfstatat", "statx",
	"statfs", "fstatfs", "access", "faccessat", "faccessat2", "readlink",
	"readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "umask",
	"fcntl", "flock", "dup", "dup2", "dup3", "pipe", "pipe2", "truncate",
	"ftruncate", "fallocate", "fsync", "fdatasync", "sync", "syncfs",
	"sync_file_range", "readahead", "fadvise64", "sendfile", "copy_file_range",
	"splice", "tee", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
	"renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
	"chmod", "fchmod", "fchmodat", "utime", "utimes", "futimesat", "utimensat",
	"getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
	"fremovexattr", "inotify_init", "inotify_init1", "inotify_add_watch",
	"inotify_rm_watch",
	/* mkfifo; a device node needs CAP_MKNOD, which the block lacks */
	"mknod", "mknodat",
	/* Linux AIO (libaio, databases): bounded by fs.aio-max-nr */
	"io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_destroy",
	"io_cancel",
	/* memory: allocators and JITs (V8 flips code pages with mprotect);
	 * shared memory is bounded by the memory cgroup and the private
	 * /dev/shm's size, not refused (SPEC §0) */
	"mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "msync", "mincore",
	"mlock", "mlock2", "munlock", "mlockall", "munlockall", "pkey_alloc",
	"pkey_free", "pkey_mprotect", "membarrier", "memfd_create", "get_mempolicy",
	/* SysV IPC and POSIX queues live in the block's own IPC namespace,
	 * bounded by its limits */
	"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink",
	"mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	/* processes and threads (clone is checked below; clone3 is left
	 * out: its flags sit in memory a filter cannot read, and libc falls
	 * back to clone on ENOSYS) */
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4",
	"waitid", "kill", "tkill", "tgkill", "pidfd_open", "pidfd_send_signal",
	"getpid", "getppid", "gettid", "set_tid_address", "set_robust_list",
	"get_robust_list", "rseq", "prctl", "arch_prctl", "prlimit64", "getrlimit",
	"setrlimit", "getrusage", "setpgid", "getpgid", "getpgrp", "setsid", "getsid",
	"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
	"sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"sched_get_priority_min", "sched_get_priority_max", "sched_rr_get_interval",
	"sched_getattr", "sched_setattr", "getpriority", "setpriority",
	"ioprio_get", "ioprio_set", "capget", "capset",
	/* signals */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigtimedwait", "rt_sigsuspend", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
	"sigaltstack", "signalfd", "signalfd4", "pause", "restart_syscall",
	/* clocks are read, slept on and armed, never set */
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
	"gettimeofday", "time", "times", "alarm", "getitimer", "setitimer",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete", "timerfd_create", "timerfd_settime", "timerfd_gettime",
	/* waiting: event loops and futexes */
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
	"eventfd2", "futex", "futex_waitv",
	/* sockets once made: socket and socketpair are checked by family */
	"bind", "listen", "accept", "accept4", "connect", "shutdown", "sendto",
	"recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "getsockopt",
	"setsockopt", "getsockname", "getpeername",
	/* ids are read freely; changing them is checked below */
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"getgroups",
	"uname", "sysinfo", "getrandom", "getcpu",
	/* a program confining itself further only narrows what it has */
	"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
	"seccomp",
	NULL
};

/* the same, newer than upstream libseccomp 2.5.4 */
static const int allow_nrs[] = {
	451, 452,		/* cachestat, fchmodat2 */
	453,			/* map_shadow_stack (CET shadow stacks) */
	454, 455, 456,		/* futex_wake, futex_wait, futex_requeue */
	462,			/* mseal */
};

/* EPERM: the kernel attack surface and the host's controls, which no
 * program needs (THREATS.md #3, #4, #10). */
static const char *const deny_names[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"process_madvise", "pidfd_getfd",
	"mount", "umount", "umount2", "pivot_root", "chroot", "open_tree",
	"move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "create_module", "query_module",
	"bpf", "perf_event_open", "userfaultfd", "lookup_dcookie",
	"keyctl", "add_key", "request_key", "unshare", "setns",
	"open_by_handle_at", "name_to_handle_at", "io_uring_setup",
	"io_uring_enter", "io_uring_register",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl", "nfsservctl",
	"vhangup", "fanotify_init",
	/* the host answers an unprivileged process EPERM (programs such as
	 * CPython's tests take that as "not allowed"; ENOSYS reads as
	 * "no such call") */
	"sethostname", "setdomainname",
	/* one id inside: no supplementary groups to set */
	"setgroups",
	NULL
};

/* Which calls already have rules: libseccomp would merge a second
 * plain rule, or a plain and an argument rule, without a word. */
struct built {
	scmp_filter_ctx ctx;
	unsigned char plain[512 / 8];
	unsigned char args[512 / 8];
};

static int bit(const unsigned char *set, int nr)
{
	return set[nr / 8] & (1u << (nr % 8));
}

static int rule(struct built *b, uint32_t act, int nr, unsigned n,
		const struct scmp_arg_cmp *cmp)
{
	if (nr < 0 || nr >= 512)
		return -EINVAL;
	if (bit(b->plain, nr) || (n == 0 && bit(b->args, nr)))
		return -EEXIST;
	(n ? b->args : b->plain)[nr / 8] |= (unsigned char)(1u << (nr % 8));
	return seccomp_rule_add_array(b->ctx, act, nr, n, cmp);
}

/* A name libseccomp does not know at all is our typo: fail. A name it
 * knows for other architectures only resolves negative: skip it. */
static int plain_names(struct built *b, uint32_t act, const char *const *names)
{
	for (; *names; names++) {
		int nr = seccomp_syscall_resolve_name(*names), rc;

		if (nr == __NR_SCMP_ERROR)
			return -EINVAL;
		if (nr < 0)
			continue;
		if ((rc = rule(b, act, nr, 0, NULL)) < 0)
			return rc;
	}
	return 0;
}

static int add_allow_list(struct built *b)
{
	int rc = plain_names(b, SCMP_ACT_ALLOW, allow_names);

	for (size_t i = 0; rc == 0 && i < sizeof allow_nrs / sizeof allow_nrs[0]; i++)
		rc = rule(b, SCMP_ACT_ALLOW, allow_nrs[i], 0, NULL);
	return rc;
}

static int add_denies(struct built *b)
{
	return plain_names(b, SCMP_ACT_ERRNO(EPERM), deny_names);
}

/* Rules with `act` for every value of argument `arg` whose low 32 bits
 * are neither x nor y (x != y), whatever its high bits, as masked
 * compares: one rule per bit where x and y agree (the value has the
 * other bit there); across the bits where they differ, z = value ^ x
 * is neither all zeros nor all ones, so somewhere it steps from 1 to 0
 * (taking those bits as a ring): one rule per such step. 32 rules, none
 * matching x or y. */
static int add_low32_not(struct built *b, uint32_t act, int nr, unsigned arg,
			 uint32_t x, uint32_t y)
{
	unsigned diff[32], nd = 0;
	int rc = 0;

	for (unsigned i = 0; i < 32; i++) {
		uint32_t m = 1u << i;
		struct scmp_arg_cmp c = SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, m, ~x & m);

		if ((x ^ y) & m)
			diff[nd++] = i;
		else if ((rc = rule(b, act, nr, 1, &c)) < 0)
			return rc;
	}
	for (unsigned k = 0; nd > 1 && k < nd; k++) {
		uint32_t one = 1u << diff[k], zero = 1u << diff[(k + 1) % nd];
		struct scmp_arg_cmp c = SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, one | zero,
						   (~x & one) | (x & zero));

		if ((rc = rule(b, act, nr, 1, &c)) < 0)
			return rc;
	}
	return 0;
}

/* Namespaces are the handler's business: a clone asking for one is
 * refused, any other clone (fork, threads, posix_spawn) allowed. */
static int add_clone(struct built *b)
{
	static const uint64_t ns[] = {
		CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
		CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
	};
	uint64_t all = 0;
	int rc;

	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		struct scmp_arg_cmp c = SCMP_A0_64(SCMP_CMP_MASKED_EQ, ns[i], ns[i]);

		all |= ns[i];
		if ((rc = rule(b, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, &c)) < 0)
			return rc;
	}
	return rule(b, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    &SCMP_A0_64(SCMP_CMP_MASKED_EQ, all, 0));
}

/* Terminal injection (THREATS.md #1): the request is an int, so only
 * its low 32 bits count and high bits cannot dodge (CVE-2017-5226). */
static int add_ioctl(struct built *b)
{
	int rc;

	if ((rc = rule(b, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
		       &SCMP_A1_64(SCMP_CMP_MASKED_EQ, LOW32, TIOCSTI))) < 0 ||
	    (rc = rule(b, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
		       &SCMP_A1_64(SCMP_CMP_MASKED_EQ, LOW32, TIOCLINUX))) < 0)
		return rc;
	return add_low32_not(b, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, TIOCSTI, TIOCLINUX);
}

/* personality(0) and the query (0xffffffff) only: READ_IMPLIES_EXEC,
 * ADDR_NO_RANDOMIZE and the like weaken the program's own defences.
 * All 64 bits are compared, so 1 << 32 does not pass as PER_LINUX. */
static int add_personality(struct built *b)
{
	int nr = SCMP_SYS(personality), rc;

	if ((rc = rule(b, SCMP_ACT_ALLOW, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, 0))) < 0 ||
	    (rc = rule(b, SCMP_ACT_ALLOW, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, LOW32))) < 0 ||
	    (rc = rule(b, SCMP_ACT_ERRNO(EPERM), nr, 1, &SCMP_A0_64(SCMP_CMP_GT, LOW32))) < 0)
		return rc;
	return add_low32_not(b, SCMP_ACT_ERRNO(EPERM), nr, 0, 0, (uint32_t)LOW32);
}

/* AF_UNIX, AF_INET and AF_INET6; netlink route queries (getifaddrs,
 * getaddrinfo's AI_ADDRCONFIG) only in a network namespace of the
 * block's own, never as a socketpair; any other family (packet, vsock,
 * alg, ...) fails as on a kernel without it. All 64 bits are compared:
 * a family with high bits set is refused, not truncated to an int. */
static int add_socket(struct built *b, int nr, int netlink)
{
	const uint32_t no = SCMP_ACT_ERRNO(EAFNOSUPPORT);
	int rc;

	if ((rc = rule(b, SCMP_ACT_ALLOW, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, AF_UNIX))) < 0 ||
	    (rc = rule(b, SCMP_ACT_ALLOW, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, AF_INET))) < 0 ||
	    (rc = rule(b, SCMP_ACT_ALLOW, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, AF_INET6))) < 0 ||
	    (rc = rule(b, no, nr, 1, &SCMP_A0_64(SCMP_CMP_LT, AF_UNIX))) < 0 ||
	    (rc = rule(b, no, nr, 1, &SCMP_A0_64(SCMP_CMP_GT, AF_NETLINK))) < 0)
		return rc;
	for (uint64_t af = AF_INET + 1; af < AF_NETLINK; af++)
		if (af != AF_INET6 &&
		    (rc = rule(b, no, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, af))) < 0)
			return rc;
	if (!netlink)
		return rule(b, no, nr, 1, &SCMP_A0_64(SCMP_CMP_EQ, AF_NETLINK));
	{
		struct scmp_arg_cmp route[2] = {
			SCMP_A0_64(SCMP_CMP_EQ, AF_NETLINK),
			SCMP_A2_64(SCMP_CMP_EQ, NETLINK_ROUTE),
		}, other[2] = {
			SCMP_A0_64(SCMP_CMP_EQ, AF_NETLINK),
			SCMP_A2_64(SCMP_CMP_NE, NETLINK_ROUTE),
		};

		if ((rc = rule(b, SCMP_ACT_ALLOW, nr, 2, route)) < 0)
			return rc;
		return rule(b, no, nr, 2, other);
	}
}

/* The id arguments of the calls that change ids: which argument, and
 * whether it is a gid. */
static const struct id_call {
	const char *name;
	unsigned char n, arg[3], gid[3];
} id_calls[] = {
	{ "setuid", 1, { 0 }, { 0 } },		{ "setgid", 1, { 0 }, { 1 } },
	{ "setfsuid", 1, { 0 }, { 0 } },	{ "setfsgid", 1, { 0 }, { 1 } },
	{ "setreuid", 2, { 0, 1 }, { 0, 0 } },	{ "setregid", 2, { 0, 1 }, { 1, 1 } },
	{ "setresuid", 3, { 0, 1, 2 }, { 0, 0, 0 } },
	{ "setresgid", 3, { 0, 1, 2 }, { 1, 1, 1 } },
	{ "chown", 2, { 1, 2 }, { 0, 1 } },	{ "lchown", 2, { 1, 2 }, { 0, 1 } },
	{ "fchown", 2, { 1, 2 }, { 0, 1 } },	{ "fchownat", 2, { 2, 3 }, { 0, 1 } },
};

/* Allowed when every id is the block's own or -1 ("leave it"), one rule
 * per such choice; EPERM when any is another (low 32 bits: ids are
 * 32-bit). Inside a one-id user namespace the kernel answers EINVAL
 * for an unmapped id where a host answers EPERM, and programs expect
 * EPERM (Python's subprocess.run(group=...), tar keeping owners). */
static int add_id_call(struct built *b, const struct id_call *k,
		       const struct sbx_seccomp_cfg *c)
{
	int nr = seccomp_syscall_resolve_name(k->name), rc;

	if (nr < 0)
		return -EINVAL;
	for (unsigned pick = 0; pick < 1u << k->n; pick++) {
		struct scmp_arg_cmp cmp[3];

		for (unsigned i = 0; i < k->n; i++)
			cmp[i] = SCMP_CMP64(k->arg[i], SCMP_CMP_MASKED_EQ, LOW32,
					    (pick >> i) & 1 ? LOW32 : k->gid[i] ? c->gid : c->uid);
		if ((rc = rule(b, SCMP_ACT_ALLOW, nr, k->n, cmp)) < 0)
			return rc;
	}
	for (unsigned i = 0; i < k->n; i++)
		if ((rc = add_low32_not(b, SCMP_ACT_ERRNO(EPERM), nr, k->arg[i],
					k->gid[i] ? c->gid : c->uid, (uint32_t)LOW32)) < 0)
			return rc;
	return 0;
}

static int add_arg_rules(struct built *b, const struct sbx_seccomp_cfg *c)
{
	int rc;

	if ((rc = add_clone(b)) < 0 || (rc = add_ioctl(b)) < 0 ||
	    (rc = add_personality(b)) < 0 ||
	    (rc = add_socket(b, SCMP_SYS(socket), !!c->netlink_route)) < 0 ||
	    (rc = add_socket(b, SCMP_SYS(socketpair), 0)) < 0)
		return rc;
	for (size_t i = 0; i < sizeof id_calls / sizeof id_calls[0]; i++)
		if ((rc = add_id_call(b, &id_calls[i], c)) < 0)
			return rc;
	return 0;
}

/* libseccomp writes the program to a descriptor: a memfd, read back. */
static int export_bpf(scmp_filter_ctx ctx, struct sbx_bpf *ret)
{
	struct stat st;
	void *insns;
	int rc, fd = memfd_create("codellm-seccomp", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	rc = -EIO;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter))
		goto out;
	rc = -ENOMEM;
	if (!(insns = malloc((size_t)st.st_size)))
		goto out;
	if (pread(fd, insns, (size_t)st.st_size, 0) != (ssize_t)st.st_size) {
		free(insns);
		rc = -EIO;
		goto out;
	}
	ret->insns = insns;
	ret->len = (size_t)st.st_size;
	rc = 0;
out:
	close(fd);
	return rc;
}

int sbx_seccomp_build_libseccomp(const struct sbx_seccomp_cfg *c, struct sbx_bpf *ret)
{
	struct built b = { 0 };
	int rc;

	/* -1 means "unchanged" to the set*id calls: it cannot be an id */
	if (c->uid == (uint32_t)LOW32 || c->gid == (uint32_t)LOW32)
		return -EINVAL;
	if (!(b.ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS))))
		return -ENOMEM;
	/* A foreign architecture (the i386 int 0x80 entry) kills the
	 * process, not only the thread as libseccomp would; the x86-64
	 * filter sends x32 numbers (bit 30 set) the same way. The binary
	 * tree keeps the lookup short for a list this long. */
	if ((rc = seccomp_attr_set(b.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) == 0 &&
	    (rc = seccomp_attr_set(b.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) == 0 &&
	    (rc = add_allow_list(&b)) == 0 && (rc = add_denies(&b)) == 0 &&
	    (rc = add_arg_rules(&b, c)) == 0 &&
	    (rc = rule(&b, SCMP_ACT_ERRNO(SBX_SECCOMP_CANARY_ERRNO),
		       SBX_SECCOMP_CANARY_NR, 0, NULL)) == 0)
		rc = export_bpf(b.ctx, ret);
	seccomp_release(b.ctx);
	return rc;
}

/* ------------------------------------------------------------------
 * The filter the handler loads: the same rules as above, laid out by
 * hand. libseccomp spells a "low 32 bits are neither x nor y" as 32
 * masked compares and a family list as one compare per family, some
 * 1,720 instructions, which the kernel checks, converts and compiles
 * for every block (0.20 ms here); each rule below is a few compares
 * on the argument's two 32-bit halves, the calls a binary search over
 * runs of numbers with one action. tests/unit/test_seccomp_equiv.c
 * runs both programs over every call number and a lattice of argument
 * values and wants the same answer from each.
 * ------------------------------------------------------------------ */

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (ARG_LO(i) + 4)
#define X32_BIT 0x40000000u

/* What a call number gets: an action, or one of the argument rules. */
enum arg_kind { K_NONE, K_CLONE, K_IOCTL, K_PERSONALITY, K_SOCKET, K_SOCKETPAIR, K_ID };

struct nr_class {
	uint32_t act;		/* K_NONE: the return value */
	unsigned char kind;
	unsigned char id;	/* K_ID: the index in id_calls */
};

struct prog {
	struct sock_filter *insns;
	size_t len, cap;
	int failed;		/* 0, or the errno the build ends with */
};

static void put(struct prog *p, struct sock_filter f)
{
	if (p->len == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 512;
		struct sock_filter *n = realloc(p->insns, cap * sizeof *n);

		if (!n) {
			p->failed = ENOMEM;
			return;
		}
		p->insns = n;
		p->cap = cap;
	}
	p->insns[p->len++] = f;
}

static void ld(struct prog *p, uint32_t off)
{
	put(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off));
}

static void ret(struct prog *p, uint32_t v)
{
	put(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, v));
}

/* A jump whose targets are the rule's closing returns: labels patched
 * once the returns are placed (jt/jf hold the label until then). */
enum { L_NEXT, L_SKIP, L_ALLOW, L_DENY };

static void jmp(struct prog *p, uint16_t op, uint32_t k, unsigned char t, unsigned char f)
{
	put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | op | BPF_K, k, t, f));
}

/* Close a rule begun at start: "ret ALLOW; ret deny", every label in
 * between resolved to an offset (L_NEXT: the next instruction; L_SKIP:
 * the one after). */
static void close_rule(struct prog *p, size_t start, uint32_t deny)
{
	size_t at = p->len;

	ret(p, RET_ALLOW);
	ret(p, deny);
	if (p->failed)
		return;
	for (size_t i = start; i < at; i++) {
		struct sock_filter *f = &p->insns[i];
		unsigned char *lab[2] = { &f->jt, &f->jf };

		if (BPF_CLASS(f->code) != BPF_JMP)
			continue;
		for (int k = 0; k < 2; k++) {
			size_t to = *lab[k] == L_NEXT ? i + 1 : *lab[k] == L_SKIP ? i + 2 :
				    at + (size_t)(*lab[k] - L_ALLOW);

			if (to - i - 1 > 255)
				p->failed = E2BIG;
			*lab[k] = (unsigned char)(to - i - 1);
		}
	}
}

/* on to the next instruction when the 64-bit argument i's high half is
 * 0 (its value fits the low half), else to the label no */
static void hi_zero(struct prog *p, unsigned i, unsigned char no)
{
	ld(p, ARG_HI(i));
	jmp(p, BPF_JEQ, 0, L_NEXT, no);
}

static void rule_clone(struct prog *p)
{
	static const uint32_t ns = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
				   CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME;
	size_t start = p->len;

	ld(p, ARG_LO(0));
	jmp(p, BPF_JSET, ns, L_DENY, L_ALLOW);
	close_rule(p, start, RET_ERRNO(EPERM));
}

static void rule_ioctl(struct prog *p)
{
	size_t start = p->len;

	ld(p, ARG_LO(1));
	jmp(p, BPF_JEQ, TIOCSTI, L_DENY, L_NEXT);
	jmp(p, BPF_JEQ, TIOCLINUX, L_DENY, L_ALLOW);
	close_rule(p, start, RET_ERRNO(EPERM));
}

static void rule_personality(struct prog *p)
{
	size_t start = p->len;

	hi_zero(p, 0, L_DENY);
	ld(p, ARG_LO(0));
	jmp(p, BPF_JEQ, 0, L_ALLOW, L_NEXT);
	jmp(p, BPF_JEQ, (uint32_t)LOW32, L_ALLOW, L_DENY);
	close_rule(p, start, RET_ERRNO(EPERM));
}

static void rule_socket(struct prog *p, int netlink)
{
	size_t start = p->len;

	hi_zero(p, 0, L_DENY);
	ld(p, ARG_LO(0));
	jmp(p, BPF_JEQ, AF_UNIX, L_ALLOW, L_NEXT);
	jmp(p, BPF_JEQ, AF_INET, L_ALLOW, L_NEXT);
	if (!netlink) {
		jmp(p, BPF_JEQ, AF_INET6, L_ALLOW, L_DENY);
	} else {
		jmp(p, BPF_JEQ, AF_INET6, L_ALLOW, L_NEXT);
		jmp(p, BPF_JEQ, AF_NETLINK, L_NEXT, L_DENY);
		hi_zero(p, 2, L_DENY);
		ld(p, ARG_LO(2));
		jmp(p, BPF_JEQ, NETLINK_ROUTE, L_ALLOW, L_DENY);
	}
	close_rule(p, start, RET_ERRNO(EAFNOSUPPORT));
}

/* every id argument (low 32 bits) the block's own or -1 */
static void rule_id(struct prog *p, const struct id_call *k, const struct sbx_seccomp_cfg *c)
{
	size_t start = p->len;

	for (unsigned i = 0; i < k->n; i++) {
		int last = i + 1 == k->n;

		ld(p, ARG_LO(k->arg[i]));
		jmp(p, BPF_JEQ, k->gid[i] ? c->gid : c->uid, last ? L_ALLOW : L_SKIP, L_NEXT);
		jmp(p, BPF_JEQ, (uint32_t)LOW32, last ? L_ALLOW : L_NEXT, L_DENY);
	}
	close_rule(p, start, RET_ERRNO(EPERM));
}

static void emit_leaf(struct prog *p, const struct nr_class *k, const struct sbx_seccomp_cfg *c)
{
	switch (k->kind) {
	case K_CLONE: rule_clone(p); break;
	case K_IOCTL: rule_ioctl(p); break;
	case K_PERSONALITY: rule_personality(p); break;
	case K_SOCKET: rule_socket(p, !!c->netlink_route); break;
	case K_SOCKETPAIR: rule_socket(p, 0); break;
	case K_ID: rule_id(p, &id_calls[k->id], c); break;
	default: ret(p, k->act); break;
	}
}

static void append(struct prog *p, const struct prog *q)
{
	for (size_t i = 0; i < q->len && !p->failed; i++)
		put(p, q->insns[i]);
	if (!p->failed)
		p->failed = q->failed;
}

/* Runs lo..hi-1 (run r covers from start[r] to the next one's start)
 * as a binary search: "jge start[mid]" to the upper half, else the
 * lower, which follows; a lower half too long for a conditional jump
 * is stepped over by an unconditional one. */
static void emit_tree(struct prog *p, const uint32_t *start, const struct nr_class *cls,
		      size_t lo, size_t hi, const struct sbx_seccomp_cfg *c)
{
	struct prog left = { 0 };
	size_t mid = lo + (hi - lo) / 2;

	if (hi - lo == 1) {
		emit_leaf(p, &cls[lo], c);
		return;
	}
	emit_tree(&left, start, cls, lo, mid, c);
	if (left.len <= 255) {
		jmp(p, BPF_JGE, start[mid], (unsigned char)left.len, 0);
	} else {
		jmp(p, BPF_JGE, start[mid], 0, 1);
		put(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (uint32_t)left.len, 0, 0));
	}
	append(p, &left);
	free(left.insns);
	emit_tree(p, start, cls, mid, hi, c);
}

/* Every number below 512 its class; a number named twice is our
 * mistake (as rule() says for the libseccomp build). */
static int set_class(struct nr_class *cls, int nr, struct nr_class k)
{
	if (nr < 0 || nr >= 512)
		return -EINVAL;
	if (cls[nr].kind != K_NONE || cls[nr].act != RET_ERRNO(ENOSYS))
		return -EEXIST;
	cls[nr] = k;
	return 0;
}

static int set_names(struct nr_class *cls, const char *const *names, uint32_t act)
{
	for (; *names; names++) {
		int nr = seccomp_syscall_resolve_name(*names), rc;

		if (nr == __NR_SCMP_ERROR)
			return -EINVAL;
		if (nr >= 0 && (rc = set_class(cls, nr, (struct nr_class){ act, K_NONE, 0 })) < 0)
			return rc;
	}
	return 0;
}

static int classify(struct nr_class *cls)
{
	static const struct { int nr; unsigned char kind; } args[] = {
		{ SCMP_SYS(clone), K_CLONE }, { SCMP_SYS(ioctl), K_IOCTL },
		{ SCMP_SYS(personality), K_PERSONALITY }, { SCMP_SYS(socket), K_SOCKET },
		{ SCMP_SYS(socketpair), K_SOCKETPAIR },
	};
	int rc;

	for (int nr = 0; nr < 512; nr++)
		cls[nr] = (struct nr_class){ RET_ERRNO(ENOSYS), K_NONE, 0 };
	if ((rc = set_names(cls, allow_names, RET_ALLOW)) < 0 ||
	    (rc = set_names(cls, deny_names, RET_ERRNO(EPERM))) < 0)
		return rc;
	for (size_t i = 0; i < sizeof allow_nrs / sizeof allow_nrs[0]; i++)
		if ((rc = set_class(cls, allow_nrs[i], (struct nr_class){ RET_ALLOW, K_NONE, 0 })) < 0)
			return rc;
	for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
		if ((rc = set_class(cls, args[i].nr, (struct nr_class){ 0, args[i].kind, 0 })) < 0)
			return rc;
	for (size_t i = 0; i < sizeof id_calls / sizeof id_calls[0]; i++)
		if ((rc = set_class(cls, seccomp_syscall_resolve_name(id_calls[i].name),
				    (struct nr_class){ 0, K_ID, (unsigned char)i })) < 0)
			return rc;
	return set_class(cls, SBX_SECCOMP_CANARY_NR,
			 (struct nr_class){ RET_ERRNO(SBX_SECCOMP_CANARY_ERRNO), K_NONE, 0 });
}

int sbx_seccomp_build(const struct sbx_seccomp_cfg *c, struct sbx_bpf *ret_bpf)
{
	struct nr_class cls[512], runs[513];
	uint32_t start[513];
	struct prog p = { 0 };
	size_t n = 0;
	int rc;

	if (c->uid == (uint32_t)LOW32 || c->gid == (uint32_t)LOW32)
		return -EINVAL;
	if ((rc = classify(cls)) < 0)
		return rc;
	/* runs of numbers with one action; an argument rule is a run of
	 * its own; from 512 to the x32 numbers, ENOSYS */
	for (int nr = 0; nr <= 512; nr++) {
		struct nr_class k = nr < 512 ? cls[nr] : (struct nr_class){ RET_ERRNO(ENOSYS), K_NONE, 0 };

		if (n && k.kind == K_NONE && runs[n - 1].kind == K_NONE && runs[n - 1].act == k.act)
			continue;
		start[n] = (uint32_t)nr;
		runs[n++] = k;
	}
	/* a foreign architecture (the i386 int 0x80 entry) and x32
	 * numbers (bit 30) kill the process, not only the thread; -1, a
	 * call a tracer cancelled, is ENOSYS as any unknown number (as
	 * libseccomp has it) */
	ld(&p, offsetof(struct seccomp_data, arch));
	jmp(&p, BPF_JEQ, AUDIT_ARCH_X86_64, 1, 0);
	ret(&p, SECCOMP_RET_KILL_PROCESS);
	ld(&p, offsetof(struct seccomp_data, nr));
	jmp(&p, BPF_JGE, X32_BIT, 0, 2);
	jmp(&p, BPF_JEQ, 0xffffffffu, 1, 0);
	ret(&p, SECCOMP_RET_KILL_PROCESS);
	emit_tree(&p, start, runs, 0, n, c);
	if (p.failed || p.len > BPF_MAXINSNS) {
		free(p.insns);
		return p.failed ? -p.failed : -E2BIG;
	}
	ret_bpf->insns = p.insns;
	ret_bpf->len = p.len * sizeof *p.insns;
	return 0;
}
