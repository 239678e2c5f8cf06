/* The block's seccomp filter (sandbox/seccomp.c) against the running
 * kernel. Each row forks a child that takes the filter built here,
 * applies it after no_new_privs the way a block does, makes one raw
 * system call and reports the result or dies; the parent compares with
 * the row. Run as root, a row like setuid(65533) proves its rule: with
 * no filter it would succeed (the "unfiltered" control rows show it). */
#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

/* argument stand-ins, replaced in the child */
#define BUF 0xb0f0000000000001UL	/* a zeroed page */
#define STR 0xb0f0000000000002UL	/* "codellm" */
#define PFD 0xb0f0000000000003UL	/* a pipe's read end */
#define NEG1 0xffffffffffffffffUL

enum how { SYS, INT80, X32ASM };
enum kind { OK, ERR, SIG };
enum flt { NL0, NL1, NONE };	/* filter without / with netlink route, or none */

struct row {
	const char *why;
	enum flt flt;
	enum how how;
	long nr;
	unsigned long a[6];
	enum kind kind;
	int want, alt;		/* errno (or signal); alt: also accepted */
};

static const struct row rows[] = {
	{ "getpid is allowed", NL0, SYS, SYS_getpid, { 0 }, OK, 0, 0 },
	/* the canary the apply step checks: the filter's own answer, and
	 * the kernel's without it */
	{ "the canary (511) → ENOANO", NL0, SYS, SBX_SECCOMP_CANARY_NR, { 0 }, ERR, ENOANO, 0 },
	{ "the canary with netlink → ENOANO", NL1, SYS, SBX_SECCOMP_CANARY_NR, { 0 }, ERR, ENOANO, 0 },
	{ "unfiltered: the canary → ENOSYS (control)", NONE, SYS, SBX_SECCOMP_CANARY_NR, { 0 }, ERR, ENOSYS, 0 },
	/* the kernel attack surface: EPERM, as the battery expects */
	{ "bpf → EPERM", NL0, SYS, SYS_bpf, { NEG1, 0, 0 }, ERR, EPERM, 0 },
	{ "ptrace → EPERM", NL0, SYS, SYS_ptrace, { 2, 0, 0, 0 }, ERR, EPERM, 0 },
	{ "unshare(CLONE_NEWUSER) → EPERM", NL0, SYS, SYS_unshare, { CLONE_NEWUSER }, ERR, EPERM, 0 },
	{ "mount → EPERM", NL0, SYS, SYS_mount, { 0, 0, 0, 0, 0 }, ERR, EPERM, 0 },
	{ "io_uring_setup (425) → EPERM", NL0, SYS, 425, { 1, BUF }, ERR, EPERM, 0 },
	{ "open_tree (428) → EPERM", NL0, SYS, 428, { NEG1, STR, 0 }, ERR, EPERM, 0 },
	{ "mount_setattr (442) → EPERM", NL0, SYS, 442, { NEG1, STR, 0, BUF, 32 }, ERR, EPERM, 0 },
	{ "pidfd_getfd (438) → EPERM", NL0, SYS, 438, { NEG1, 0, 0 }, ERR, EPERM, 0 },
	{ "process_madvise (440) → EPERM", NL0, SYS, 440, { NEG1, BUF, 1, 0, 0 }, ERR, EPERM, 0 },
	{ "setgroups → EPERM", NL0, SYS, SYS_setgroups, { 0, 0 }, ERR, EPERM, 0 },
	/* an over-long name: without the filter the kernel says EINVAL and
	 * changes nothing, even for the root that runs the tests */
	{ "sethostname → EPERM, as for an unprivileged host process", NL0, SYS, SYS_sethostname,
	  { 0, 1000 }, ERR, EPERM, 0 },
	{ "setdomainname → EPERM", NL0, SYS, SYS_setdomainname, { 0, 1000 }, ERR, EPERM, 0 },
	/* not on the list: ENOSYS, as on a kernel without the call */
	{ "modify_ldt → ENOSYS", NL0, SYS, SYS_modify_ldt, { 0, BUF, 16 }, ERR, ENOSYS, 0 },
	{ "memfd_secret (447) → ENOSYS", NL0, SYS, 447, { 0 }, ERR, ENOSYS, 0 },
	{ "set_mempolicy_home_node (450) → ENOSYS", NL0, SYS, 450, { 0, 4096, 0, 0 }, ERR, ENOSYS, 0 },
	{ "open_tree_attr (467) → ENOSYS", NL0, SYS, 467, { NEG1, STR, 0, 0, 0 }, ERR, ENOSYS, 0 },
	{ "syscall 500 → ENOSYS", NL0, SYS, 500, { 0 }, ERR, ENOSYS, 0 },
	{ "clone3 → ENOSYS (libc falls back to clone)", NL0, SYS, 435, { BUF, 88 }, ERR, ENOSYS, 0 },
	/* clone: namespaces refused, everything else allowed */
	{ "clone(CLONE_NEWUSER) → EPERM", NL0, SYS, SYS_clone, { CLONE_NEWUSER | SIGCHLD }, ERR, EPERM, 0 },
	{ "clone(CLONE_NEWNET) → EPERM", NL0, SYS, SYS_clone, { CLONE_NEWNET | SIGCHLD }, ERR, EPERM, 0 },
	{ "plain clone(SIGCHLD) works", NL0, SYS, SYS_clone, { SIGCHLD }, OK, 0, 0 },
	{ "fork works", NL0, SYS, SYS_fork, { 0 }, OK, 0, 0 },
	/* personality: PER_LINUX and the query only, all 64 bits compared */
	{ "personality(0xffffffff) (query) allowed", NL0, SYS, SYS_personality, { 0xffffffff }, OK, 0, 0 },
	{ "personality(0) allowed", NL0, SYS, SYS_personality, { 0 }, OK, 0, 0 },
	{ "personality(READ_IMPLIES_EXEC) → EPERM", NL0, SYS, SYS_personality, { 0x0400000 }, ERR, EPERM, 0 },
	{ "personality(1<<32 | READ_IMPLIES_EXEC) → EPERM", NL0, SYS, SYS_personality,
	  { 0x100000000UL | 0x0400000 }, ERR, EPERM, 0 },
	{ "personality(1<<32) does not pass as PER_LINUX", NL0, SYS, SYS_personality,
	  { 0x100000000UL }, ERR, EPERM, ENOSYS },
	/* memory and IPC that SPEC §0 bounds instead of refusing */
	{ "memfd_create allowed", NL0, SYS, SYS_memfd_create, { STR, MFD_CLOEXEC }, OK, 0, 0 },
	{ "mmap(MAP_SHARED|MAP_ANONYMOUS) allowed", NL0, SYS, SYS_mmap,
	  { 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, NEG1, 0 }, OK, 0, 0 },
	{ "shmget(IPC_PRIVATE) allowed", NL0, SYS, SYS_shmget, { IPC_PRIVATE, 4096, IPC_CREAT | 0600 }, OK, 0, 0 },
	/* socket families */
	{ "socket(AF_UNIX) allowed", NL0, SYS, SYS_socket, { AF_UNIX, SOCK_STREAM, 0 }, OK, 0, 0 },
	{ "socket(AF_PACKET) → EAFNOSUPPORT", NL0, SYS, SYS_socket, { AF_PACKET, SOCK_RAW, 0 }, ERR, EAFNOSUPPORT, 0 },
	{ "socket(1<<32 | AF_UNIX) → EAFNOSUPPORT (high bits refused)", NL0, SYS, SYS_socket,
	  { 0x100000000UL | AF_UNIX, SOCK_STREAM, 0 }, ERR, EAFNOSUPPORT, 0 },
	{ "socket(AF_NETLINK, NETLINK_ROUTE), netlink_route 0 → EAFNOSUPPORT", NL0, SYS, SYS_socket,
	  { AF_NETLINK, SOCK_RAW, NETLINK_ROUTE }, ERR, EAFNOSUPPORT, 0 },
	{ "socket(AF_NETLINK, NETLINK_ROUTE), netlink_route 1 → allowed", NL1, SYS, SYS_socket,
	  { AF_NETLINK, SOCK_RAW, NETLINK_ROUTE }, OK, 0, 0 },
	{ "socket(AF_NETLINK, NETLINK_AUDIT), netlink_route 1 → EAFNOSUPPORT", NL1, SYS, SYS_socket,
	  { AF_NETLINK, SOCK_RAW, NETLINK_AUDIT }, ERR, EAFNOSUPPORT, 0 },
	{ "socket(AF_NETLINK, 1<<32 | NETLINK_ROUTE), netlink_route 1 → EAFNOSUPPORT", NL1, SYS, SYS_socket,
	  { AF_NETLINK, SOCK_RAW, 0x100000000UL | NETLINK_ROUTE }, ERR, EAFNOSUPPORT, 0 },
	{ "socketpair(AF_NETLINK), netlink_route 1 → EAFNOSUPPORT", NL1, SYS, SYS_socketpair,
	  { AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, BUF }, ERR, EAFNOSUPPORT, 0 },
	/* terminal injection, low 32 bits compared */
	{ "ioctl(TIOCSTI) → EPERM", NL0, SYS, SYS_ioctl, { 0, TIOCSTI, STR }, ERR, EPERM, 0 },
	{ "ioctl(1<<32 | TIOCSTI) → EPERM", NL0, SYS, SYS_ioctl, { 0, 0x100000000UL | TIOCSTI, STR }, ERR, EPERM, 0 },
	{ "ioctl(TIOCLINUX) → EPERM", NL0, SYS, SYS_ioctl, { 0, TIOCLINUX, STR }, ERR, EPERM, 0 },
	{ "ioctl(FIONREAD) on a pipe allowed", NL0, SYS, SYS_ioctl, { PFD, FIONREAD, BUF }, OK, 0, 0 },
	/* ids: the block's own (65534) or -1 pass, anything else is EPERM */
	{ "unfiltered: setuid(65533) succeeds as root (control)", NONE, SYS, SYS_setuid, { 65533 }, OK, 0, 0 },
	{ "setuid(65533) → EPERM", NL0, SYS, SYS_setuid, { 65533 }, ERR, EPERM, 0 },
	{ "setuid(1<<32 | 0) → EPERM (low 32 bits are the id)", NL0, SYS, SYS_setuid, { 0x100000000UL }, ERR, EPERM, 0 },
	{ "setuid(65534) allowed", NL0, SYS, SYS_setuid, { 65534 }, OK, 0, 0 },
	{ "setresgid(65534, -1, -1) allowed", NL0, SYS, SYS_setresgid, { 65534, NEG1, NEG1 }, OK, 0, 0 },
	{ "setresgid(5, -1, -1) → EPERM", NL0, SYS, SYS_setresgid, { 5, NEG1, NEG1 }, ERR, EPERM, 0 },
	{ "setresgid(-1, -1, 5) → EPERM", NL0, SYS, SYS_setresgid, { NEG1, NEG1, 5 }, ERR, EPERM, 0 },
	{ "setfsuid(0) → EPERM", NL0, SYS, SYS_setfsuid, { 0 }, ERR, EPERM, 0 },
	{ "unfiltered: fchown(pipe, 0, -1) succeeds as root (control)", NONE, SYS, SYS_fchown, { PFD, 0, NEG1 }, OK, 0, 0 },
	{ "fchown(pipe, 0, -1) → EPERM", NL0, SYS, SYS_fchown, { PFD, 0, NEG1 }, ERR, EPERM, 0 },
	{ "fchown(pipe, 65534, -1) allowed", NL0, SYS, SYS_fchown, { PFD, 65534, NEG1 }, OK, 0, 0 },
	/* other ABIs: the whole process dies */
	{ "x32 getpid (0x40000027) via syscall() → SIGSYS", NL0, SYS, 0x40000027, { 0 }, SIG, SIGSYS, 0 },
	{ "x32 getpid from a raw `syscall` instruction → SIGSYS", NL0, X32ASM, 0, { 0 }, SIG, SIGSYS, 0 },
};

static char page[4096];

static unsigned long arg(unsigned long v, int pfd)
{
	if (v == BUF)
		return (unsigned long)page;
	if (v == STR)
		return (unsigned long)"codellm";
	if (v == PFD)
		return (unsigned long)pfd;
	return v;
}

static long call(const struct row *r, const unsigned long *a)
{
	long ret;

	if (r->how == INT80) {
		/* i386 getpid (20) through the 32-bit entry */
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		return ret;
	}
	if (r->how == X32ASM) {
		__asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000027L) : "rcx", "r11", "memory");
		return ret;
	}
	return syscall(r->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

struct report {
	long ret;
	int err;
};

/* In the child: the filter, one call, the result on the pipe. */
__attribute__((noreturn))
static void child(const struct row *r, const struct sbx_bpf *f, int wfd)
{
	unsigned long a[6];
	struct report rep;
	int p[2];

	if (pipe(p) < 0)
		_exit(120);
	/* a probe that faults must die by its signal, as a program would:
	 * not in a sanitizer's handler (make sanitize installs them) */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	for (int i = 0; i < 6; i++)
		a[i] = arg(r->a[i], p[0]);
	if (f && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || sbx_seccomp_apply(f) < 0))
		_exit(121);
	errno = 0;
	rep.ret = call(r, a);
	rep.err = errno;
	/* the new process of a clone or fork leaves at once */
	if ((r->nr == SYS_clone || r->nr == SYS_fork) && r->how == SYS && rep.ret == 0)
		_exit(0);
	if ((r->nr == SYS_clone || r->nr == SYS_fork) && rep.ret > 0)
		waitpid((pid_t)rep.ret, NULL, 0);
	if (r->nr == SYS_shmget && rep.ret >= 0)
		shmctl((int)rep.ret, IPC_RMID, NULL);
	if (write(wfd, &rep, sizeof rep) != (ssize_t)sizeof rep)
		_exit(122);
	_exit(0);
}

/* Runs the row in a child: 0 and *rep when it reported, else the
 * signal that ended it (or -1). */
static int run(const struct row *r, const struct sbx_bpf *f, struct report *rep)
{
	int p[2], st;
	pid_t pid;
	ssize_t n;

	if (pipe(p) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		child(r, f, p[1]);
	}
	close(p[1]);
	n = read(p[0], rep, sizeof *rep);
	close(p[0]);
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return n == (ssize_t)sizeof *rep && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void check(const struct row *r, const struct sbx_bpf *f)
{
	struct report rep = { 0, 0 };
	int sig = run(r, f, &rep);

	if (r->kind == SIG) {
		tap_ok(sig == r->want || (r->alt && sig == r->alt), "%s", r->why);
		if (sig != r->want && sig != r->alt)
			tap_diag("ended with %d, ret %ld errno %d", sig, rep.ret, rep.err);
		return;
	}
	if (r->kind == OK)
		tap_ok(sig == 0 && rep.ret >= 0, "%s", r->why);
	else
		tap_ok(sig == 0 && rep.ret == -1 && (rep.err == r->want || (r->alt && rep.err == r->alt)),
		       "%s", r->why);
	if (sig != 0 || (r->kind == OK) != (rep.ret >= 0) ||
	    (r->kind == ERR && rep.err != r->want && rep.err != r->alt))
		tap_diag("ended with %d, ret %ld errno %d (%s)", sig, rep.ret, rep.err, strerror(rep.err));
}

/* Does this kernel run i386 code at all? Without IA32 emulation the
 * int 0x80 entry faults (SIGSEGV) before any filter sees it. */
static int ia32_absent(void)
{
	static const struct row probe = { "probe", NONE, INT80, 0, { 0 }, OK, 0, 0 };
	struct report rep;

	return run(&probe, NULL, &rep) == SIGSEGV;
}

int main(void)
{
	struct sbx_seccomp_cfg c0 = { .netlink_route = 0, .uid = 65534, .gid = 65534 };
	struct sbx_seccomp_cfg c1 = { .netlink_route = 1, .uid = 65534, .gid = 65534 };
	struct sbx_seccomp_cfg bad = { .uid = (uint32_t)-1, .gid = 65534 };
	struct sbx_bpf f[2] = { { 0 }, { 0 } }, none = { 0 };
	int root = geteuid() == 0, rc;

	if (!sbx_seccomp_available()) {
		tap_ok(getenv("CODELLM_MUST_SANDBOX") == NULL, "seccomp filters # SKIP the kernel has none");
		return tap_done();
	}
	rc = sbx_seccomp_build(&c0, &f[0]);
	tap_ok(rc == 0 && f[0].insns, "build (netlink_route 0): %d", rc);
	rc = sbx_seccomp_build(&c1, &f[1]);
	tap_ok(rc == 0 && f[1].insns, "build (netlink_route 1): %d", rc);
	/* the kernel takes at most BPF_MAXINSNS instructions per filter */
	tap_ok(f[0].len / sizeof(struct sock_filter) <= BPF_MAXINSNS &&
	       f[1].len / sizeof(struct sock_filter) <= BPF_MAXINSNS,
	       "filters fit the kernel's limit (%zu and %zu of %d instructions)",
	       f[0].len / sizeof(struct sock_filter), f[1].len / sizeof(struct sock_filter), BPF_MAXINSNS);
	rc = sbx_seccomp_build(&bad, &none);
	tap_ok(rc == -EINVAL && !none.insns, "build refuses -1 as the block's id: %d", rc);
	/* what the handler loads: compiled at build time, the same filters */
	for (int k = 0; k < 2; k++) {
		struct sbx_bpf pre = { 0 };

		rc = sbx_seccomp_prebuilt(k, &pre);
		tap_ok(rc == 0 && f[k].insns && pre.len == f[k].len &&
		       !memcmp(pre.insns, f[k].insns, pre.len),
		       "the filter embedded at build time (netlink_route %d) equals a fresh compile "
		       "(%zu bytes)", k, pre.len);
		sbx_bpf_free(&pre);
	}
	if (!f[0].insns || !f[1].insns)
		return tap_done();
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (rows[i].flt == NONE && !root) {
			tap_ok(1, "%s # SKIP not root", rows[i].why);
			continue;
		}
		check(&rows[i], rows[i].flt == NONE ? NULL : &f[rows[i].flt]);
	}
	{
		/* i386 getpid: killed by the filter as a foreign architecture */
		int absent = ia32_absent();
		struct row r = { absent ? "i386 getpid through int 0x80 → SIGSEGV: this kernel has "
				 "no IA32 emulation (an unfiltered child died by SIGSEGV too)" :
				 "i386 getpid through int 0x80 → SIGSYS", NL0, INT80, 0, { 0 },
				 SIG, absent ? SIGSEGV : SIGSYS, 0 };

		check(&r, &f[0]);
	}
	sbx_bpf_free(&f[0]);
	sbx_bpf_free(&f[1]);
	return tap_done();
}
