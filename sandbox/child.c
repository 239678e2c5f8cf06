/* A block's processes. The first one (created by the handler with the
 * block's namespaces, so PID 1 of its PID namespace) builds the root,
 * starts the program and then execs codellm-init (sandbox/init/), so the
 * block's init holds nothing of the handler; the program process waits
 * until the init has exec'd, applies the per-process layers in the order
 * that works — rlimits, the uid, the parent-death signal, descriptors,
 * no_new_privs, capabilities, Landlock, seccomp last — reports "setup
 * finished" and waits for the handler's go before it execs.
 *
 * The program is not a fork: it shares the first process's memory
 * (CLONE_VM, on a stack of its own), which saves copying the handler's
 * page tables, about 1 ms a block on the reference machine. The two
 * never run libc code at the same time: with an init to exec, the
 * program's first act is to wait for that exec, after which the memory
 * is the program's alone; without one (--sandbox off, or besteffort
 * where the init could not be exec'd) the first process sleeps until
 * the program has exec'd or ended (CLONE_VFORK). The handler is
 * single-threaded, so after fork any libc call is safe here; raise()
 * and abort() are not, since a raw clone leaves libc's cached thread id
 * stale.
 *
 * The shared start (spawn.c) goes one step further for a lone native
 * block: the first process itself runs in the handler's memory while
 * the handler waits for the program's "q", and one of the three runs
 * libc code at a time: the first process builds the root and clones the
 * program, then makes system calls only and execs the init at once;
 * the program sets itself up beside that exec, says "q", and from then
 * on (the handler running again) makes system calls only too: it waits
 * for the init to be undumpable before it execs (quiet_exec).
 *
 * --sandbox off runs a lone block without a first process at all
 * (sbx_spawn_direct, at the end): the program is the handler's child,
 * set up in the handler's memory while the handler sleeps (CLONE_VFORK)
 * and exec'd at once, its go byte being in the pipe already. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/endrec.h"
#include "sandbox/internal.h"
#include "sandbox/raw.h"

static const char *const exec_path[] = { "/usr/local/bin", "/usr/bin", "/bin" };


/* "E<layer>: <reason>\n" on the ready pipe: the handler refuses the run
 * naming the layer (native) or retries without it (besteffort). The
 * newline ends it: the init's "S" record may follow in the same read. */
__attribute__((noreturn))
static void child_fail(int ready_fd, const char *layer, int err)
{
	char msg[200];
	int n = snprintf(msg, sizeof msg, "E%.80s: %.100s\n", layer, strerror(err));

	if (n > 0)
		sbx_write_all(ready_fd, msg, (size_t)n);
	_exit(126);
}

/* The four parts and a newline in buf (its length), without stdio: a
 * shared start's processes are past their libc days when they report
 * (exec_init, quiet_exec), and AddressSanitizer's printf maps memory
 * beyond the block's RLIMIT_AS. sbx_errno_text only reads a table. */
static size_t line_of(char *buf, size_t cap, const char *a, const char *b,
		      const char *c, int err)
{
	const char *why = sbx_errno_text(err);
	const char *parts[] = { a, b, c, why ? why : "Unknown error" };
	size_t n = 0;

	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		for (size_t k = 0; parts[i][k] && k < 400 && n + 2 < cap; k++)
			buf[n++] = parts[i][k];
	buf[n++] = '\n';
	return n;
}

/* "codellm: cannot execute ARGV0: WHY\n" */
static size_t exec_failure(char *buf, size_t cap, const char *argv0, int err)
{
	return line_of(buf, cap, "codellm: cannot execute ", argv0, ": ", err);
}

/* child_fail without libc: "ELAYER: WHY" (err is -errno) */
__attribute__((noreturn))
static void raw_fail(int ready_fd, const char *layer, long err)
{
	char msg[160];

	sbx_raw(SYS_write, ready_fd, (long)msg,
		(long)line_of(msg, sizeof msg, "E", layer, ": ", (int)-err));
	sbx_raw_exit(126);
}

__attribute__((noreturn))
static void child_exec(char *const argv[], char *const envp[])
{
	char msg[900];
	size_t n;
	int err = ENOENT;

	sbx_phase_mark(SBX_PH_EXEC);
	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		err = errno;
	} else {
		for (size_t i = 0; i < sizeof exec_path / sizeof exec_path[0]; i++) {
			char path[512];

			snprintf(path, sizeof path, "%s/%s", exec_path[i], argv[0]);
			execve(path, argv, envp);
			if (errno != ENOENT)
				err = errno;
		}
	}
	n = exec_failure(msg, sizeof msg, argv[0], err);
	if (write(2, msg, n) < 0)
		_exit(126);
	_exit(err == ENOENT ? 127 : 126);
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 1);

	if (s) {
		memcpy(s, a, la);
		memcpy(s + la, b, lb + 1);
	}
	return s;
}

static char *subst_file(const char *arg, const char *file)
{
	const char *at = strstr(arg, "{file}");
	char *head, *out;

	if (!at)
		return strdup(arg);
	head = strndup(arg, (size_t)(at - arg));
	if (!head)
		return NULL;
	out = malloc(strlen(head) + strlen(file) + strlen(at + 6) + 1);
	if (out)
		sprintf(out, "%s%s%s", head, file, at + 6);
	free(head);
	return out;
}

/* The block's whole environment (SPEC §7); nothing is inherited. */
static char **build_env(const struct sbx_pipeline *p, const char *work)
{
	char **env = calloc(10, sizeof *env);
	size_t n = 0;

	if (!env)
		return NULL;
	env[n++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[n++] = join("HOME=", work);
	env[n++] = join("TMPDIR=", work);
	env[n++] = strdup("LANG=C.UTF-8");
	env[n++] = strdup("PYTHONHASHSEED=0");
	env[n++] = strdup("PYTHONDONTWRITEBYTECODE=1");
	if (p->pol->has_bag) {
		char *w = join(work, "/" SBX_BAG_NAME);

		env[n++] = w ? join("FLEET_INPUT=", w) : NULL;
		free(w);
	}
	if (p->unbuffered)
		env[n++] = strdup("PYTHONUNBUFFERED=1");
	for (size_t i = 0; i < n; i++)
		if (!env[i])
			return NULL;
	return env;
}

static char **build_argv(const struct sbx_pipeline *p, size_t i, const char *code)
{
	char *const *t = p->argv[i];
	char *file = malloc(strlen(code) + strlen(p->files[i]) + 2);
	char **argv;
	size_t n = 0;

	while (t[n])
		n++;
	argv = calloc(n + 1, sizeof *argv);
	if (!file || !argv)
		return NULL;
	sprintf(file, "%s/%s", code, p->files[i]);
	for (size_t k = 0; k < n; k++)
		if (!(argv[k] = subst_file(t[k], file)))
			return NULL;
	return argv;
}

/* Closes every descriptor from 3 up but the `n` in keep (ascending). */
static void keep_only(const int *keep, size_t n)
{
	unsigned next = 3;

	for (size_t k = 0; k < n; k++) {
		if (keep[k] < (int)next)
			continue;
		if ((unsigned)keep[k] > next)
			sbx_close_range(next, (unsigned)keep[k] - 1, 0);
		next = (unsigned)keep[k] + 1;
	}
	sbx_close_range(next, ~0U, 0);
}

static void sort_fds(int *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

static int oom_first(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "1000", 4) != 4)
		rc = -errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* The handler is gone when every write end of the go pipe is closed. */
static int handler_alive(int go_fd)
{
	struct pollfd pfd = { .fd = go_fd, .events = POLLIN };

	return !(poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)));
}

/* Which of sbx_sys_dirs the block's root has as directories: set by
 * the block as it builds the root, read by its program, which shares
 * its memory. A symlink there (usr-merged /bin -> usr/bin) leads into
 * one of them, or nowhere: a rule of its own would add nothing. */
static unsigned root_sys_dirs;

/* The program's file-system view as Landlock rights. With a root of its
 * own: the system trees to read and run, / and /dev to list, its own
 * devices (ptys included, with their ioctls), and /work, /tmp and
 * /dev/shm to write. Without one (besteffort) only the run's own
 * directories, never the host's /tmp, /dev/shm or terminals. */
static void landlock_spec(const struct sbx_policy *pol, int root,
			  struct sbx_landlock_spec *ll, const char **ro,
			  const char **rw, const char *exec[SBX_SYS_DIRS + 1])
{
	static const char *const dirs[] = { "/", NULL };
	static const char *const dev_ro[] = { "/dev/zero", "/dev/random", "/dev/urandom", NULL };
	static const char *const dev_rw[] = {
		"/dev/null", "/dev/full", "/dev/tty", "/dev/pts", NULL
	};
	static const char *const dev_rw_host[] = { "/dev/null", "/dev/full", NULL };
	size_t n = 0;

	for (unsigned k = 0; sbx_sys_dirs[k]; k++)
		if (!root || (root_sys_dirs & (1u << k)))
			exec[n++] = sbx_sys_dirs[k];
	exec[n] = NULL;
	ro[0] = "/etc";
	ro[1] = root ? SBX_IN_CODE : pol->code;
	ro[2] = "/proc";
	ro[3] = NULL;
	rw[0] = root ? SBX_IN_WORK : pol->work;
	rw[1] = root ? SBX_IN_TMP : pol->tmp;
	rw[2] = root ? SBX_IN_SHM : NULL;
	rw[3] = NULL;
	*ll = (struct sbx_landlock_spec){
		.exec_paths = exec, .ro_paths = ro, .dir_paths = root ? dirs : NULL,
		.dev_ro = dev_ro, .dev_rw = root ? dev_rw : dev_rw_host, .rw_paths = rw,
		/* TCP only where nothing but the block's own loopback is, or
		 * where the operator opened the network */
		.allow_tcp = pol->net == SBX_NET_OWN || pol->allow_network,
	};
}

/* Until the block's init has exec'd and made itself undumpable (it
 * closes its end of this pipe then), nothing of the program may run:
 * the init would still hold the handler's memory, and share the
 * program's. A raw read: errno is shared until then. */
static int await_init(int sync_rd)
{
	char c;
	long r;

	do
		r = syscall(SYS_read, sync_rd, &c, 1);
	while (r == -1 && errno == EINTR);
	close(sync_rd);
	return r == 0 ? 0 : -EPROTO;
}

#if SBX_SHARED_START
/* The shared start's program, set up: it tells the handler (which then
 * runs again in this memory), and from then on makes system calls
 * only, with what it holds on its own stack:
 * it waits for the init to have exec'd and become undumpable, reports
 * ready, takes the go byte and execs. */
__attribute__((noreturn))
static void quiet_exec(char **argv, char **envp, int ready, int go_rd,
		       int sync_rd, int quiet_wr)
{
	char paths[3][512], msg[900];
	const char *cand[3];
	size_t nc = 0, ml;
	long r, err = ENOENT;
	char c;

	if (strchr(argv[0], '/'))
		cand[nc++] = argv[0];
	else
		for (size_t k = 0; k < 3; k++) {
			snprintf(paths[k], sizeof paths[k], "%s/%s", exec_path[k], argv[0]);
			cand[nc++] = paths[k];
		}
	if (sbx_raw(SYS_write, quiet_wr, (long)"q", 1) != 1)
		sbx_raw_exit(126);
	do
		r = sbx_raw(SYS_read, sync_rd, (long)&c, 1);
	while (r == -EINTR);
	if (r != 0 || sbx_raw(SYS_write, ready, (long)"R", 1) != 1)
		sbx_raw_exit(126);
	do
		r = sbx_raw(SYS_read, go_rd, (long)&c, 1);
	while (r == -EINTR);
	if (r != 1 || c != 'G')
		sbx_raw_exit(126);
	sbx_phase_mark(SBX_PH_EXEC);
	for (size_t k = 0; k < nc; k++) {
		r = sbx_raw(SYS_execve, (long)cand[k], (long)argv, (long)envp);
		if (r != -ENOENT)
			err = -r;
	}
	ml = exec_failure(msg, sizeof msg, argv[0], (int)err);
	sbx_raw(SYS_write, 2, (long)msg, (long)ml);
	sbx_raw_exit(err == ENOENT ? 127 : 126);
}
#endif

__attribute__((noreturn))
static void program(const struct sbx_pipeline *p, size_t i,
		    const struct sbx_child_fds *f, pid_t init, int sync_rd,
		    int quiet_wr)
{
	const struct sbx_policy *pol = p->pol;
	unsigned L = pol->layers;
	int root = !!(L & SBX_BIT(SBX_L_ROOT));
	const char *work = root ? SBX_IN_WORK : pol->work;
	const char *code = root ? SBX_IN_CODE : pol->code;
	const char *ro[4], *rw[4], *exec[SBX_SYS_DIRS + 1];
	struct sbx_landlock_spec ll;
	sigset_t none;
	char **argv, **envp, go;
	int rc;

	sbx_phase_mark(SBX_PH_PROGRAM);
	/* first: until then the init runs in this memory (in the shared
	 * start the init waits for us instead: quiet_exec) */
	if (quiet_wr < 0 && sync_rd >= 0 && (rc = await_init(sync_rd)) < 0)
		child_fail(f->ready, "init", -rc);
	landlock_spec(pol, root, &ll, ro, rw, exec);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* rlimits first: they bind everything after, the program's own
	 * children too (RLIMIT_NPROC counts per user namespace; RLIMIT_CPU
	 * per process, each child's count from zero) */
	if ((L & SBX_BIT(SBX_L_RLIMITS)) &&
	    (rc = sbx_rlimits_apply(&pol->lim, p->timeout_s)) < 0)
		child_fail(f->ready, "rlimits", -rc);
	/* uid/gid 65534: a user namespace maps it already; a root handler
	 * without one must drop to it (not with --sandbox off: bare) */
	if (pol->mode != SBX_OFF && !(L & SBX_BIT(SBX_L_USERNS)) && geteuid() == 0) {
		/* the bounding set can only be emptied while CAP_SETPCAP is
		 * still held, so before the uid change takes it */
		if ((L & SBX_BIT(SBX_L_CAPS)) && (rc = sbx_bounding_drop()) < 0)
			child_fail(f->ready, "caps", -rc);
		if (setgroups(0, NULL) < 0 || setresgid(SBX_BLOCK_ID, SBX_BLOCK_ID, SBX_BLOCK_ID) < 0 ||
		    setresuid(SBX_BLOCK_ID, SBX_BLOCK_ID, SBX_BLOCK_ID) < 0)
			child_fail(f->ready, "userns", errno);
	}
	/* after the uid change, which clears it; the check closes the race
	 * with an init that died before prctl */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != init)
		_exit(126);
	/* only 0-2 reach the program: the rest (the connection, the
	 * listening socket, the key file, these pipes) close at exec */
	if (sbx_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(f->ready, "fds", errno);
	argv = build_argv(p, i, code);
	envp = build_env(p, work);
	if (!argv || !envp)
		child_fail(f->ready, "memory", ENOMEM);
	/* no_new_privs before Landlock and seccomp, which need it, and so
	 * no setuid binary under the bound /usr gains anything */
	if ((L & SBX_BIT(SBX_L_NNP)) &&
	    (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	     prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1))
		child_fail(f->ready, "no_new_privs", errno ? errno : EPERM);
	if ((L & SBX_BIT(SBX_L_CAPS)) && (rc = sbx_caps_drop()) < 0)
		child_fail(f->ready, "caps", -rc);
	if ((L & SBX_BIT(SBX_L_LANDLOCK)) && (rc = sbx_landlock_apply(&ll)) < 0)
		child_fail(f->ready, "landlock", -rc);
	/* seccomp last: everything above needed calls it denies */
	if ((L & SBX_BIT(SBX_L_SECCOMP)) && (rc = sbx_seccomp_apply(&pol->bpf)) < 0)
		child_fail(f->ready, "seccomp", -rc);
	if ((L & SBX_BIT(SBX_L_SECCOMP)) && pol->no_memfd && (rc = sbx_seccomp_deny_memfd()) < 0)
		child_fail(f->ready, "seccomp", -rc);
#if SBX_SHARED_START
	if (quiet_wr >= 0)
		quiet_exec(argv, envp, f->ready, f->go_rd, sync_rd, quiet_wr);
#endif
	if (sbx_write_all(f->ready, "R", 1) < 0)
		_exit(126);
	/* phase two: nothing runs until the handler says so */
	if (read(f->go_rd, &go, 1) != 1 || go != 'G')
		_exit(126);
	child_exec(argv, envp);
}

/* The block's init becomes codellm-init (sandbox/init/), exec'd from the
 * run's sealed memfd: from here on PID 1 holds nothing of the handler,
 * and its command line is its own. It keeps the ready pipe as fd 3 (the
 * program's status goes back on it) and the sync pipe as fd 4 (closed
 * once it is undumpable); everything else closes. System calls only:
 * in the shared start the program runs libc code in this memory
 * meanwhile. A failure kills the program first (it must not report
 * ready after us). */
__attribute__((noreturn))
static void exec_init(int init_fd, pid_t prog, int ready, int sync_wr)
{
	char pid[16], name[] = "codellm-init", *argv[] = { name, NULL, NULL };
	char *envp[] = { NULL };
	long r = sbx_raw(SYS_fcntl, ready, F_DUPFD_CLOEXEC, 10);
	long s = sbx_raw(SYS_fcntl, sync_wr, F_DUPFD_CLOEXEC, 10);
	long e = sbx_raw(SYS_fcntl, init_fd, F_DUPFD_CLOEXEC, 10), err;
	int report = r >= 0 ? (int)r : ready;

	argv[1] = sbx_utoa(pid + sizeof pid - 1, (unsigned)prog);
	err = r < 0 ? r : s < 0 ? s : e;
	if (err < 0)
		goto fail;
	if ((err = sbx_raw(SYS_dup3, r, 3, 0)) != 3 || (err = sbx_raw(SYS_dup3, s, 4, 0)) != 4)
		goto fail;
	report = 3;
	sbx_raw(SYS_close_range, 0, 2, 0);
	if (e > 5)
		sbx_raw(SYS_close_range, 5, e - 1, 0);
	sbx_raw(SYS_close_range, e + 1, ~0U, 0);
	err = sbx_sys6(SYS_execveat, e, (long)"", (long)argv, (long)envp, AT_EMPTY_PATH, 0);
fail:
	sbx_raw(SYS_kill, prog, SIGKILL, 0);
	raw_fail(report, "init", err);
}

/* The end record (sandbox/endrec.h), counted as the exec'd init counts
 * it: this process and everything it reaped. */
static void end_record(char *msg, int status)
{
	struct rusage self, kids;
	int ok = getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &kids) == 0;

	SBX_END_RECORD(msg, status, ok, self, kids, memcpy);
}

/* The block's init: a subreaper for everything the program starts; when
 * the program ends, or the handler dies (its parent-death signal is a
 * caught SIGTERM), it kills all of it and ends the way the program
 * ended. In a PID namespace it is PID 1, and its exit takes the whole
 * namespace with it. */
__attribute__((noreturn))
static void init_wait(pid_t prog, int ready_fd)
{
	sigset_t wait_set;
	siginfo_t si;
	pid_t self = getpid(), w;
	int status = 0, st, done = 0, sig = 0;

	sbx_wait_set(&wait_set);
	/* nothing of /proc/1 for the program: the handler's memory is
	 * still here when the clean init could not be exec'd (besteffort) */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* the pipes must reach EOF when the program and its children
	 * close them, not stay open here; the ready pipe carries the
	 * program's wait status back */
	if (ready_fd > 0)
		sbx_close_range(0, (unsigned)ready_fd - 1, 0);
	sbx_close_range((unsigned)ready_fd + 1, ~0U, 0);
	while (!done) {
		if (sigwaitinfo(&wait_set, &si) < 0)
			continue;
		if (si.si_signo != SIGCHLD) {
			sig = si.si_signo;
			break;
		}
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == prog) {
				status = st;
				done = 1;
			}
	}
	sbx_kill_descendants();
	/* the end record (sandbox/endrec.h): PID 1 of a namespace cannot
	 * end by its own signal, so the handler learns the status this way */
	if (!sig) {
		char msg[SBX_END_LEN];

		end_record(msg, status);
		sbx_write_all(ready_fd, msg, sizeof msg);
		sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	if (sig) {
		struct rlimit no_core = { 0, 0 };
		sigset_t one;

		/* end by the same signal, so the handler sees what the
		 * program saw; no core file of this process. PID 1 of a
		 * namespace ignores its own signals, so the exit status
		 * then says 128+N instead. */
		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		kill(self, sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

/* The block's ids, its own session and standard descriptors, and
 * nothing else of what the handler had open. */
static void become_block(const struct sbx_policy *pol, const struct sbx_child_fds *f)
{
	unsigned L = pol->layers;
	int rc, keep[5];
	char sync;

	/* Kernel memory held through descriptors (socket and pipe buffers)
	 * no rlimit counts; under memory pressure the OOM killer must take
	 * a block, never the handler. Inherited by everything the block
	 * starts; written first, while this process still has the
	 * handler's credentials and /proc is the host's. */
	if ((L & SBX_BIT(SBX_L_RLIMITS)) && (rc = oom_first()) < 0)
		child_fail(f->ready, "rlimits", -rc);
	if (L & SBX_BIT(SBX_L_USERNS)) {
		/* the handler holds our mount namespace (spawn.c,
		 * hold_mounts: it can while we have its ids and memory)
		 * and writes our uid/gid maps, then says so; in the shared
		 * start it then sleeps, and we write them: a single line
		 * of our own ids, which a process may map in its new
		 * namespace itself (user_namespaces(7)) */
		if (read(f->sync, &sync, 1) != 1 || sync != 'm')
			_exit(126);
		if (f->prog_stack &&
		    (rc = sbx_write_block_maps(0, pol->map_uid, pol->map_gid)) < 0)
			child_fail(f->ready, "userns", -rc);
		/* become the mapped ids (a root handler's 0 is not mapped
		 * here): files this process makes need a mapped owner, and
		 * capabilities stay, as no uid 0 exists in this namespace */
		if (setresgid(SBX_BLOCK_ID, SBX_BLOCK_ID, SBX_BLOCK_ID) < 0 ||
		    setresuid(SBX_BLOCK_ID, SBX_BLOCK_ID, SBX_BLOCK_ID) < 0)
			child_fail(f->ready, "userns", errno);
	}
	/* its own session: no controlling terminal to inject into
	 * (TIOCSTI), and a process group the handler can kill whole */
	if (setsid() < 0)
		child_fail(f->ready, "setsid", errno);
	if (dup2(f->in, 0) < 0 || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0)
		child_fail(f->ready, "stdio", errno);
	/* Everything else the handler had open (the other blocks' pipes,
	 * the connection) goes now, before any limit on open files
	 * applies; only the ready and go pipes and the init's memfd stay,
	 * until exec. */
	keep[0] = f->ready;
	keep[1] = f->go_rd;
	keep[2] = pol->files.init_fd;
	keep[3] = f->exec_wr;
	keep[4] = f->quiet_wr;
	sort_fds(keep, 5);
	keep_only(keep, 5);
}

/* The block's root (or, without one, the workdir), its hostname and
 * its loopback. */
static void build_block(const struct sbx_policy *pol, size_t i,
			const struct sbx_child_fds *f)
{
	unsigned L = pol->layers;
	const char *layer;
	int rc;

	if (L & SBX_BIT(SBX_L_ROOT)) {
		if ((rc = sbx_block_root(pol, i, &layer, &root_sys_dirs)) < 0)
			child_fail(f->ready, layer, -rc);
	} else if (chdir(pol->work) < 0) {
		child_fail(f->ready, "workdir", errno);
	}
	if ((L & SBX_BIT(SBX_L_UTSNS)) && sethostname("codellm", 7) < 0)
		child_fail(f->ready, "utsns", errno);
	/* a network namespace of its own: its loopback, nothing else */
	if ((L & SBX_BIT(SBX_L_NETNS)) && pol->net == SBX_NET_OWN &&
	    (rc = sbx_net_lo_up()) < 0)
		child_fail(f->ready, "netns", -rc);
}

struct program_args {
	const struct sbx_pipeline *p;
	size_t i;
	const struct sbx_child_fds *f;
	pid_t init;
	int sync_rd, sync_wr;
	int quiet_wr;		/* the shared start: "q" once set up, or -1 */
};

static int program_entry(void *arg)
{
	const struct program_args *a = arg;

	/* the init's end, in our own descriptor table */
	if (a->sync_wr >= 0)
		close(a->sync_wr);
	program(a->p, a->i, a->f, a->init, a->sync_rd, a->quiet_wr);
}

/* AddressSanitizer keeps one stack per thread: on a stack it did not
 * make, its no-return hook reports, and a report's mmap fails under the
 * block's RLIMIT_AS, killing the program before it can say why. Its
 * builds fork the program instead (the order with the init stays). */
#if defined(__SANITIZE_ADDRESS__)
#define PROGRAM_FORKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROGRAM_FORKS 1
#endif
#endif

#define PROGRAM_STACK (256 * 1024)

/* The program process, in this process's memory on a stack of its own
 * (a guard page below it): see the top of this file. Its pid, or
 * -errno; *stack is the stack, for a caller that outlives the program's
 * exec to unmap. */
static pid_t start_program(int (*entry)(void *), struct program_args *a,
			   int with_init, char **stack)
{
#ifdef PROGRAM_FORKS
	pid_t pid = fork();

	(void)with_init;
	*stack = NULL;
	if (pid == 0)
		entry(a);
	return pid < 0 ? -errno : pid;
#else
	const size_t page = 4096;
	pid_t pid;

	*stack = mmap(NULL, PROGRAM_STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (*stack == MAP_FAILED) {
		*stack = NULL;
		return -errno;
	}
	if (mprotect(*stack, page, PROT_NONE) < 0)
		return -errno;
	pid = clone(entry, *stack + PROGRAM_STACK,
		    CLONE_VM | (with_init ? 0 : CLONE_VFORK) | SIGCHLD, a);
	return pid < 0 ? -errno : pid;
#endif
}

#if SBX_SHARED_START
int sbx_child_entry(void *arg)
{
	const struct sbx_child_arg *a = arg;

	sbx_child_main(a->p, a->i, a->f);
}
#endif

void sbx_child_main(const struct sbx_pipeline *p, size_t i,
		    const struct sbx_child_fds *f)
{
	const struct sbx_policy *pol = p->pol;
	int with_init = !!(pol->layers & SBX_BIT(SBX_L_INIT)), syncp[2];
	struct program_args a;
	sigset_t wait_set;
	char *stack;
	pid_t prog;

	/* the handler ignores SIGPIPE and blocks SIGCHLD/TERM/INT/HUP;
	 * programs expect the defaults */
	sbx_phase_mark(SBX_PH_BLOCK);
	signal(SIGPIPE, SIG_DFL);
	/* our copy of the go pipe's write end would hide the handler's
	 * death from the read below */
	close(f->go_wr);
	become_block(pol, f);
	build_block(pol, i, f);
	sbx_phase_mark(SBX_PH_ROOT);
	/* SIGTERM is this process's parent-death signal: caught, so a dying
	 * handler still has the whole block killed */
	sbx_wait_set(&wait_set);
	if (sigprocmask(SIG_BLOCK, &wait_set, NULL) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		child_fail(f->ready, "pdeathsig", errno);
	if (!handler_alive(f->go_rd))
		_exit(126);
	/* not close-on-exec: the exec'd init keeps the write end */
	if (with_init && pipe2(syncp, 0) < 0)
		child_fail(f->ready, "init", errno);
	a = (struct program_args){ p, i, f, getpid(), with_init ? syncp[0] : -1,
				   with_init ? syncp[1] : -1, -1 };
#if SBX_SHARED_START
	if (f->prog_stack) {
		/* the program, on the stack the handler gave, tells the
		 * handler "q" once it is done with libc; it runs libc code
		 * in this memory from now on, so we make system calls only
		 * and become the init at once, beside it */
		/* f is on the handler's stack, the handler's again once the
		 * program says "q": what we need of it is read before */
		const int ready = f->ready;

		a.quiet_wr = f->quiet_wr;
		prog = clone(program_entry, f->prog_stack, CLONE_VM | SIGCHLD, &a);
		if (prog < 0)
			child_fail(ready, "fork", errno);
		sbx_raw(SYS_close, syncp[0], 0, 0);
		exec_init(pol->files.init_fd, prog, ready, syncp[1]);
	}
#endif
	prog = start_program(program_entry, &a, with_init, &stack);
	if (prog < 0)
		child_fail(f->ready, "fork", -prog);
	if (with_init) {
		close(syncp[0]);
		exec_init(pol->files.init_fd, prog, f->ready, syncp[1]);
	}
	init_wait(prog, f->ready);
}

/* The handler's own half of a direct start: the block's setup that
 * --sandbox off keeps (its session, its descriptors, the workdir), then
 * the program, in the handler's memory until it execs. */
static int direct_entry(void *arg)
{
	const struct program_args *a = arg;

	signal(SIGPIPE, SIG_DFL);
	close(a->f->go_wr);
	become_block(a->p->pol, a->f);
	build_block(a->p->pol, a->i, a->f);
	program(a->p, a->i, a->f, a->init, -1, -1);
}

pid_t sbx_spawn_direct(const struct sbx_pipeline *p, size_t i,
		       const struct sbx_child_fds *f)
{
	struct program_args a = { p, i, f, getpid(), -1, -1, -1 };
	char *stack;
	pid_t pid = start_program(direct_entry, &a, 0, &stack);

	/* CLONE_VFORK: the program has exec'd or ended, the stack is free */
	if (stack)
		munmap(stack, PROGRAM_STACK);
	return pid;
}
