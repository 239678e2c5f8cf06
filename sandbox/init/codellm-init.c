/* codellm-init: the block's minimal init, after exec (THREATS.md #19).
 *
 * The block's first process is a clone of the handler: it builds the
 * root, forks the program, then execs this file from a sealed memfd so
 * that PID 1 holds nothing of the handler (no key, no request, no heap,
 * no command line) while the program runs. Freestanding: no libc, raw
 * system calls only, a few KiB embedded in the handler.
 *
 *   argv: codellm-init PID      (the program's pid, as this init sees it)
 *   fd 3: the ready pipe        (the end record: sandbox/endrec.h)
 *   fd 4: the sync pipe         (closed once this process is undumpable;
 *                                the program waits for that before it
 *                                reports "ready")
 * SIGCHLD, SIGTERM, SIGINT and SIGHUP arrive blocked (the signal mask
 * survives execve); SIGTERM is the parent-death signal, which also
 * survives execve.
 *
 * It reaps everything, and when the program ends (or the handler dies)
 * kills whatever is left and ends the way the program ended. */
#include <asm/signal.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/wait.h>
#include <sys/syscall.h>

#define READY_FD 3
#define SYNC_FD 4
#define EINTR 4
#define ECHILD 10
#define WNOHANG_ 1

typedef unsigned long ulong;

#include "../endrec.h"
#include "../sys6.h"

#if !SBX_HAVE_SYS6
#error "codellm-init: add this architecture's system-call entry (sandbox/sys6.h)"
#endif
#define sys6 sbx_sys6

#if defined(__x86_64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call init_main\n"
	"	hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x0, sp\n"
	"	bl init_main\n"
	"	brk #0\n");
#endif

#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

struct ksigaction {
	ulong handler;
	ulong flags;
	ulong restorer;
	ulong mask;
};

__attribute__((noreturn)) static void die(int code)
{
	for (;;)
		sys1(SYS_exit_group, code);
}

static ulong sigbit(int sig)
{
	return 1UL << (sig - 1);
}

static int parse_pid(const char *s)
{
	int v = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000000)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* PID 1 of a namespace: kill(-1) reaches every other process in it.
 * Elsewhere (besteffort without a PID namespace) only our own children,
 * listed by the kernel, are ours to kill; killing one re-parents its
 * children to us (we are a child subreaper), so repeat until none. */
static void kill_children(int pid1)
{
	char path[64] = "/proc/self/task/", buf[4096];
	long self = sys1(SYS_getpid, 0), fd, n;
	int i = 16, k = 0;
	char digits[16];

	if (pid1) {
		sys2(SYS_kill, -1, SIGKILL);
		return;
	}
	/* /proc/self/task/<tid>/children (we are single-threaded) */
	do
		digits[k++] = (char)('0' + self % 10);
	while ((self /= 10) > 0);
	while (k > 0)
		path[i++] = digits[--k];
	for (const char *s = "/children"; *s; s++)
		path[i++] = *s;
	path[i] = '\0';
	fd = sys4(SYS_openat, -100, path, 02000000 /* O_CLOEXEC */, 0);
	if (fd < 0)
		return;
	n = sys3(SYS_read, fd, buf, sizeof buf - 1);
	sys1(SYS_close, fd);
	for (long p = 0, v = 0; p < n; p++) {
		if (buf[p] >= '0' && buf[p] <= '9') {
			v = v * 10 + (buf[p] - '0');
			continue;
		}
		if (v > 0) {
			/* the group first: the pid is ours until we reap it */
			sys2(SYS_kill, -v, SIGKILL);
			sys2(SYS_kill, v, SIGKILL);
		}
		v = 0;
	}
}

static void kill_all_and_reap(int pid1)
{
	for (;;) {
		long w;

		kill_children(pid1);
		w = sys4(SYS_wait4, -1, 0, __WALL, 0);
		if (w == -ECHILD)
			return;
	}
}

static void put(char *at, const void *v, unsigned len)
{
	const volatile char *s = v;

	for (unsigned k = 0; k < len; k++)
		at[k] = s[k];
}

/* sandbox/endrec.h: the status, and what this process and everything
 * it reaped used (wait4's rusage of this process, less its exit) */
static void end_record(char *msg, int status)
{
	struct rusage self, kids;
	int ok = sys2(SYS_getrusage, RUSAGE_SELF, &self) == 0 &&
		 sys2(SYS_getrusage, RUSAGE_CHILDREN, &kids) == 0;

	SBX_END_RECORD(msg, status, ok, self, kids, put);
}

__attribute__((noreturn, used)) void init_main(long *sp);

void init_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	ulong wait_set = sigbit(SIGCHLD) | sigbit(SIGTERM) | sigbit(SIGINT) | sigbit(SIGHUP);
	int prog = parse_pid(argc > 1 ? argv[1] : 0);
	int pid1 = sys1(SYS_getpid, 0) == 1;
	int status = 0, done = 0, sig = 0;

	if (prog <= 0)
		die(126);
	/* undumpable first: /proc/1 then answers nothing to the program
	 * (no fd list, no maps, no memory); only then may it run */
	if (sys2(SYS_prctl, PR_SET_DUMPABLE, 0) < 0)
		die(126);
	/* exec'd from a descriptor, the kernel names us after its number */
	sys2(SYS_prctl, PR_SET_NAME, "codellm-init");
	sys1(SYS_close, SYNC_FD);
	while (!done) {
		struct { int signo, errno_, code, pad[29]; } si;
		long r = sys4(SYS_rt_sigtimedwait, &wait_set, &si, 0, sizeof(ulong));

		if (r < 0)
			continue;	/* EINTR */
		if (r != SIGCHLD) {
			sig = (int)r;
			break;
		}
		for (;;) {
			int st = 0;
			long w = sys4(SYS_wait4, -1, &st, WNOHANG_ | __WALL, 0);

			if (w <= 0)
				break;
			if (w == prog) {
				status = st;
				done = 1;
			}
		}
	}
	kill_all_and_reap(pid1);
	/* the end record: the block has ended, nothing of it is left but
	 * this process, and PID 1 of a namespace cannot end by its own
	 * signal, so the handler learns the program's status this way */
	if (!sig) {
		char msg[SBX_END_LEN];

		end_record(msg, status);
		sys3(SYS_write, READY_FD, msg, sizeof msg);
		sig = (status & 0x7f) && (status & 0x7f) != 0x7f ? status & 0x7f : 0;
	}
	if (sig) {
		struct rlimit no_core = { 0, 0 };
		struct ksigaction dfl = { 0, 0, 0, 0 };
		ulong one = sigbit(sig);

		/* end by the same signal, without a core file; PID 1 of a
		 * namespace ignores its own signals, so the exit status then
		 * says 128+N instead */
		sys4(SYS_prlimit64, 0, RLIMIT_CORE, &no_core, 0);
		sys4(SYS_rt_sigaction, sig, &dfl, 0, sizeof(ulong));
		sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, 0, sizeof(ulong));
		sys2(SYS_kill, sys1(SYS_getpid, 0), sig);
		die(128 + sig);
	}
	die((status & 0x7f) == 0 ? (status >> 8) & 0xff : 126);
}
