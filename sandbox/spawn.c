/* The pipeline's phase one: one process per block (its pipes, the clone
 * into its namespaces, its uid/gid maps), every block set up and waiting
 * before any runs; and the pipeline's teardown. relay.c is phase two:
 * all released at once, the handler relaying each inter-block edge. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/raw.h"

#define SETUP_TIMEOUT_MS (SBX_SETUP_TIMEOUT_S * 1000)

void sbx_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

void sbx_free_fds(struct sbx_pipeline *p, struct sbx_relay *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->edges && i + 1 < p->n; i++) {
		sbx_close_fd(&f->edges[i].up);
		sbx_close_fd(&f->edges[i].down);
		free(f->edges[i].buf);
	}
	for (size_t i = 0; f->err && i < p->n; i++)
		sbx_close_fd(&f->err[i]);
	sbx_close_fd(&f->out);
	free(f->edges);
	free(f->err);
	free(f);
}

/* Block 0's stdin: /dev/null, or the stdin message in a sealed memfd
 * (any size, no pipe to feed, nothing on disk), opened again read-only:
 * the block can read and seek it, never write or grow it — shared memory
 * no limit would count (THREATS.md #18). */
static int stdin_fd(const struct sbx_pipeline *p)
{
	char path[64];
	int fd, ro;

	if (p->stdin_len == 0)
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	fd = memfd_create("codellm-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (sbx_write_all(fd, p->stdin_data, p->stdin_len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
		  F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	close(fd);
	return ro;
}

/* The block's stdio pipes belong to the handler's uid, mode 0600; a
 * block whose uid differs could not open /dev/stdout or /dev/stderr
 * again. Only the block's own processes can reach them. */
/* An edge's two pipes hold what the policy gives them (see
 * edge_pipe_bytes in run.c): the relay wakes once for that much moved,
 * not for every 64 KiB. Where the kernel refuses, the default stays. */
static void widen_edge(const struct sbx_policy *pol, int up, int down)
{
	if (!pol->edge_pipe_bytes)
		return;
	fcntl(up, F_SETPIPE_SZ, (int)pol->edge_pipe_bytes);
	fcntl(down, F_SETPIPE_SZ, (int)pol->edge_pipe_bytes);
}

static void open_to_block(int fd)
{
	fchmod(fd, 0666);
}

static int start_fail(struct sbx_pipeline *p, struct sbx_relay *f,
		      const char *what, int err)
{
	if (!p->error[0])
		snprintf(p->error, sizeof p->error, "%s: %s", what, strerror(err));
	sbx_free_fds(p, f);
	p->relay = NULL;
	sbx_pipeline_abort(p);
	return -err;
}

static const struct { int layer; unsigned long flag; } ns_layers[] = {
	{ SBX_L_USERNS, CLONE_NEWUSER }, { SBX_L_PIDNS, CLONE_NEWPID },
	{ SBX_L_MOUNTNS, CLONE_NEWNS }, { SBX_L_NETNS, CLONE_NEWNET },
	{ SBX_L_IPCNS, CLONE_NEWIPC }, { SBX_L_UTSNS, CLONE_NEWUTS },
	{ SBX_L_CGROUPNS, CLONE_NEWCGROUP },
};

static unsigned long clone_flags(const struct sbx_policy *pol)
{
	unsigned long flags = 0;

	for (size_t i = 0; i < sizeof ns_layers / sizeof ns_layers[0]; i++)
		if (pol->layers & SBX_BIT(ns_layers[i].layer))
			flags |= ns_layers[i].flag;
	return flags;
}

/* fork(), or the block's first process in its new namespaces: a raw
 * clone continues on a copy of our stack like fork does (the bubblewrap
 * way), and the child is PID 1 of its PID namespace. */
static pid_t clone_block(unsigned long flags)
{
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* Which namespace the kernel refused, by trying each alone (with the
 * user namespace that grants the others). */
static int refused_ns(const struct sbx_policy *pol)
{
	unsigned long user = pol->layers & SBX_BIT(SBX_L_USERNS) ? CLONE_NEWUSER : 0;

	for (size_t i = 0; i < sizeof ns_layers / sizeof ns_layers[0]; i++) {
		pid_t pid;

		if (!(pol->layers & SBX_BIT(ns_layers[i].layer)))
			continue;
		pid = clone_block(user | ns_layers[i].flag);
		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return ns_layers[i].layer;
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void release_arrays(struct sbx_pipeline *p)
{
	for (size_t i = 0; p->ready_fds && i < p->n; i++)
		if (p->ready_fds[i] >= 0)
			close(p->ready_fds[i]);
	/* the last references: the blocks' mounts go now, in the handler */
	for (size_t i = 0; p->mnt_fds && i < p->n; i++)
		if (p->mnt_fds[i] >= 0)
			close(p->mnt_fds[i]);
	free(p->r.res);
	free(p->pids);
	free(p->ready_fds);
	free(p->reported);
	p->reported = NULL;
	free(p->mnt_fds);
	p->mnt_fds = NULL;
	free(p->r.taps);
	p->r.res = NULL;
	p->pids = NULL;
	p->ready_fds = NULL;
	p->r.taps = NULL;
}

static int alloc_run(struct sbx_pipeline *p, struct sbx_relay **ret)
{
	struct sbx_relay *f;

	release_arrays(p);
	p->r.res = calloc(p->n, sizeof *p->r.res);
	p->pids = calloc(p->n, sizeof *p->pids);
	p->ready_fds = calloc(p->n, sizeof *p->ready_fds);
	p->reported = calloc(p->n, sizeof *p->reported);
	p->mnt_fds = calloc(p->n, sizeof *p->mnt_fds);
	p->r.taps = calloc(p->n, sizeof *p->r.taps);
	f = calloc(1, sizeof *f);
	if (!p->r.res || !p->pids || !p->ready_fds || !p->reported || !p->mnt_fds ||
	    !p->r.taps || !f)
		return start_fail(p, f, "memory", ENOMEM);
	p->r.n = p->n;
	f->out = -1;
	f->give_up = -1;
	f->edges = calloc(p->n, sizeof *f->edges);
	f->err = calloc(p->n, sizeof *f->err);
	if (!f->edges || !f->err)
		return start_fail(p, f, "memory", ENOMEM);
	for (size_t i = 0; i < p->n; i++) {
		p->pids[i] = -1;
		p->ready_fds[i] = -1;
		p->mnt_fds[i] = -1;
		f->err[i] = -1;
		f->edges[i].up = f->edges[i].down = -1;
	}
	*ret = f;
	return 0;
}

/* A lone block whose go byte is in its pipe already: nothing waits for
 * the rest of a pipeline, so its program may exec once set up. */
static int lone_released(const struct sbx_pipeline *p)
{
	return p->n == 1 && p->go_sent;
}

/* Without a sandbox, such a block needs no process of its own around
 * the program (sbx_spawn_direct). */
static int direct(const struct sbx_pipeline *p)
{
	return p->pol->layers == 0 && lone_released(p);
}

#if SBX_SHARED_START
#define SHARED_STACK (256 * 1024)

/* The shared start: a lone native block, released already, whose
 * uid/gid maps it may write itself (one line of the handler's own ids).
 * Its first process and its program run in the handler's memory
 * (CLONE_VM) until each execs, so nothing copies the handler's page
 * tables and no side takes a copy-on-write fault (about 20 us each on a
 * paravirtualized machine). One of the three runs libc code at a time:
 * the block while the handler sleeps (shared_wait), then the program,
 * set up beside the block's init exec, until its "q"; from then on the
 * handler, the program making system calls only (child.c). */
static int shared(const struct sbx_pipeline *p)
{
	const struct sbx_policy *pol = p->pol;
	unsigned need = SBX_BIT(SBX_L_USERNS) | SBX_BIT(SBX_L_INIT);

	return SBX_SHARED_START && (pol->layers & need) == need && lone_released(p) &&
	       pol->map_uid == geteuid() && pol->map_gid == getegid();
}

static char *stack_map(void)
{
	char *s = mmap(NULL, SHARED_STACK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (s == MAP_FAILED)
		return NULL;
	/* a guard page below */
	if (mprotect(s, 4096, PROT_NONE) < 0) {
		munmap(s, SHARED_STACK);
		return NULL;
	}
	return s;
}

/* The handler's oom_score_adj, as /proc/self has it ("" if unreadable). */
static void save_oom(char *buf, size_t len)
{
	int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

#endif

/* Once the shared start's program has exec'd (or, gone, every process
 * of the run is reaped), the handler's memory is its own again: the
 * program's stack goes, and the handler takes back its oom_score_adj,
 * which the block raised (for all that shared this memory) to 1000. */
static void shared_settle(struct sbx_pipeline *p, int gone)
{
	struct sbx_shared *s = p->shared;
	struct pollfd pfd;
	char c;
	int fd;

	if (!s)
		return;
	if (!gone) {
		pfd = (struct pollfd){ .fd = s->exec_fd, .events = POLLIN };
		if (poll(&pfd, 1, SETUP_TIMEOUT_MS) <= 0 || read(s->exec_fd, &c, 1) != 0)
			return;		/* sbx_pipeline_abort settles it */
	}
	close(s->exec_fd);
	munmap(s->stack, s->stack_len);
	munmap(s->block_stack, s->stack_len);
	if (s->oom[0] && (fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) >= 0) {
		if (write(fd, s->oom, strlen(s->oom)) < 0)
			fprintf(stderr, "codellm: restoring oom_score_adj: %s\n", strerror(errno));
		close(fd);
	}
	free(s);
	p->shared = NULL;
}

/* A block's mount namespace (its root, some sixty mounts) is torn down
 * by the last process to leave it, its init on the way out, waiting
 * for an expedited RCU grace period; the relay waits for that exit
 * before it answers (about 0.2 ms here). Held here instead, it goes
 * when the handler lets go (sbx_pipeline_free), after the answer.
 * Opened before the block goes on ("m" on its sync pipe), while it
 * still has the handler's ids and memory: once its init is exec'd and
 * undumpable, the kernel lets only a holder of CAP_SYS_PTRACE over the
 * init's memory open it, which the handler need not be (an open after
 * the ready report failed in 15 of 40 runs under strace). System calls
 * only: in the shared start the block runs libc code in this memory. */
static void hold_mounts(struct sbx_pipeline *p, size_t i, pid_t pid)
{
	char path[32] = "/proc/", digits[12];
	const char *d = sbx_utoa(digits + sizeof digits - 1, (unsigned)pid);
	size_t n = 6;
	long fd;

	if (!(p->pol->layers & SBX_BIT(SBX_L_MOUNTNS)))
		return;
	while (*d)
		path[n++] = *d++;
	memcpy(path + n, "/ns/mnt", 8);
	fd = sbx_raw(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC);
	p->mnt_fds[i] = fd < 0 ? -1 : (int)fd;
}

#if SBX_SHARED_START
/* While the block and then its program run libc code in our memory:
 * system calls only, until the program's "q" (or the end of both: EOF).
 * A setup that hangs is killed (the block is PID 1 of the namespace the
 * program is in) and waited for, left unreaped for the caller. */
static void shared_wait(pid_t pid, int rd, int wr)
{
	struct pollfd pfd = { .fd = rd, .events = POLLIN };
	struct timespec ts = { SBX_SETUP_TIMEOUT_S, 0 };
	siginfo_t si;
	long r;
	char c;

	sbx_raw(SYS_close, wr, 0, 0);
	for (;;) {
		r = sbx_sys6(SYS_ppoll, (long)&pfd, 1, (long)&ts, 0, 0, 0);
		if (r == -EINTR)
			continue;
		if (r != 1)
			break;
		do
			r = sbx_raw(SYS_read, rd, &c, 1);
		while (r == -EINTR);
		return;
	}
	sbx_raw(SYS_kill, pid, SIGKILL, 0);
	sbx_sys6(SYS_waitid, P_PID, pid, (long)&si, WEXITED | WNOWAIT, 0, 0);
}

static pid_t start_shared(struct sbx_pipeline *p, size_t i, struct sbx_child_fds *cf,
			  unsigned long flags, int *err)
{
	struct sbx_child_arg arg = { p, i, cf };
	struct sbx_shared *s = calloc(1, sizeof *s);
	int ex[2] = { -1, -1 }, q[2] = { -1, -1 };
	pid_t pid;

	*err = 0;
	if (!s || !(s->block_stack = stack_map()) || !(s->stack = stack_map()) ||
	    pipe2(ex, O_CLOEXEC) < 0 || pipe2(q, O_CLOEXEC) < 0) {
		*err = errno ? errno : ENOMEM;
		goto fail;
	}
	s->stack_len = SHARED_STACK;
	s->exec_fd = ex[0];
	if (p->pol->layers & SBX_BIT(SBX_L_RLIMITS))
		save_oom(s->oom, sizeof s->oom);
	cf->prog_stack = s->stack + SHARED_STACK;
	cf->exec_wr = ex[1];
	cf->quiet_wr = q[1];
	pid = clone(sbx_child_entry, s->block_stack + SHARED_STACK,
		    (int)(flags | CLONE_VM | SIGCHLD), &arg);
	if (pid < 0) {
		*err = errno;
		goto fail;
	}
	/* the block waits for "m" as in the ordinary start (a write to a
	 * new pipe cannot fail; were it to, the setup timeout ends both) */
	hold_mounts(p, i, pid);
	if (p->pol->layers & SBX_BIT(SBX_L_USERNS))
		sbx_raw(SYS_write, cf->sync_wr, (long)"m", 1);
	shared_wait(pid, q[0], q[1]);
	p->shared = s;
	close(q[0]);
	close(ex[1]);
	return pid;
fail:
	for (int k = 0; k < 2; k++) {
		if (ex[k] >= 0)
			close(ex[k]);
		if (q[k] >= 0)
			close(q[k]);
	}
	if (s && s->stack)
		munmap(s->stack, SHARED_STACK);
	if (s && s->block_stack)
		munmap(s->block_stack, SHARED_STACK);
	free(s);
	return -1;
}
#endif

/* Block i's first process: the clone into its namespaces, or (direct)
 * the program itself. Its pid, or -1 with *err set. */
static pid_t start_block(struct sbx_pipeline *p, size_t i,
			 struct sbx_child_fds *cf, unsigned long flags, int *err)
{
	pid_t pid;

	sbx_phase_mark(SBX_PH_CLONE);
#if SBX_SHARED_START
	if (shared(p))
		return start_shared(p, i, cf, flags, err);
#endif
	if (direct(p)) {
		pid = sbx_spawn_direct(p, i, cf);
		*err = pid < 0 ? (int)-pid : 0;
		return pid < 0 ? -1 : pid;
	}
	pid = clone_block(flags);
	if (pid == 0)
		sbx_child_main(p, i, cf);
	*err = errno;
	if (pid > 0)
		hold_mounts(p, i, pid);	/* before its maps and "m" */
	return pid;
}

/* Block i's uid/gid maps, written from the parent user namespace, then
 * "m" on its sync pipe: inside, the block is 65534; outside, the id the
 * run's files belong to. 0 or -errno. */
static int write_block_maps(const struct sbx_policy *pol, pid_t pid, int sync_wr)
{
	int rc = sbx_write_block_maps(pid, pol->map_uid, pol->map_gid);

	if (rc == 0 && write(sync_wr, "m", 1) != 1)
		rc = -EIO;
	return rc;
}

/* One block: its IPC namespace (where the handler makes it), its pipes,
 * the clone, its maps. *in is its standard input and becomes the next
 * block's; on failure the run is torn down and why is in p->error. */
static int spawn_block(struct sbx_pipeline *p, struct sbx_relay *f, size_t i,
		       unsigned long flags, int own_ipc, int *in, const int go[2])
{
	const struct sbx_policy *pol = p->pol;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, readyp[2] = { -1, -1 },
	    nextp[2] = { -1, -1 }, syncp[2] = { -1, -1 }, e;
	struct sbx_child_fds cf;
	pid_t pid;

	if (own_ipc && (e = sbx_block_ipc_ns(pol->shm_bytes)) < 0) {
		sbx_close_fd(in);
		close(go[0]);
		p->error_layer = SBX_L_IPCNS;
		snprintf(p->error, sizeof p->error, "block %zu: ipcns: %s", i, strerror(-e));
		return start_fail(p, f, "ipcns", -e);
	}
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(readyp, O_CLOEXEC) < 0 || pipe2(syncp, O_CLOEXEC) < 0 ||
	    (i + 1 < p->n && pipe2(nextp, O_CLOEXEC) < 0)) {
		e = errno;
		for (int k = 0; k < 2; k++) {
			sbx_close_fd(&outp[k]);
			sbx_close_fd(&errp[k]);
			sbx_close_fd(&readyp[k]);
			sbx_close_fd(&syncp[k]);
			sbx_close_fd(&nextp[k]);
		}
		sbx_close_fd(in);
		close(go[0]);
		return start_fail(p, f, "pipe", e);
	}
	open_to_block(outp[1]);
	open_to_block(errp[1]);
	if (i + 1 < p->n)
		widen_edge(p->pol, outp[0], nextp[0]);
	cf = (struct sbx_child_fds){
		.in = *in, .out = outp[1], .err = errp[1], .ready = readyp[1],
		.go_rd = go[0], .go_wr = go[1], .sync = syncp[0], .sync_wr = syncp[1], .exec_wr = -1,
		.quiet_wr = -1,
	};
	pid = start_block(p, i, &cf, flags, &e);
	close(*in);
	close(outp[1]);
	close(errp[1]);
	close(readyp[1]);
	close(syncp[0]);
	*in = nextp[0];
	f->err[i] = errp[0];
	p->ready_fds[i] = readyp[0];
	if (i + 1 < p->n) {
		f->edges[i].up = outp[0];
		f->edges[i].down = nextp[1];
	} else {
		f->out = outp[0];
	}
	if (pid < 0) {
		close(syncp[1]);
		sbx_close_fd(in);
		close(go[0]);
		p->error_layer = flags ? refused_ns(pol) : -1;
		snprintf(p->error, sizeof p->error, "block %zu: %s: %s", i,
			 p->error_layer >= 0 ? sbx_layer_name(p->error_layer) : "fork",
			 strerror(e));
		return start_fail(p, f, "clone", e);
	}
	p->pids[i] = pid;
	p->r.res[i].started = 1;
	if ((pol->layers & SBX_BIT(SBX_L_USERNS)) && !cf.prog_stack &&
	    (e = write_block_maps(pol, pid, syncp[1])) < 0) {
		close(syncp[1]);
		sbx_close_fd(in);
		close(go[0]);
		p->error_layer = SBX_L_USERNS;
		snprintf(p->error, sizeof p->error, "block %zu: userns: uid/gid maps: %s",
			 i, strerror(-e));
		return start_fail(p, f, "userns", -e);
	}
	close(syncp[1]);
	return 0;
}

/* Every block reports its setup, or why it failed, before any runs. The
 * ready byte is read alone: a lone block, released early, may have run
 * and ended already, and the init's "S" record behind it is the
 * relay's to read. */
static int await_ready(struct sbx_pipeline *p, struct sbx_relay *f)
{
	for (size_t i = 0; i < p->n; i++) {
		char msg[256];
		struct pollfd pfd = { .fd = p->ready_fds[i], .events = POLLIN };
		ssize_t r = 0, more;
		int pr;

		do
			pr = poll(&pfd, 1, SETUP_TIMEOUT_MS);
		while (pr < 0 && errno == EINTR);
		if (pr > 0)
			r = read(p->ready_fds[i], msg, 1);
		if (r == 1 && msg[0] == 'R')
			continue;
		if (r == 1 && msg[0] == 'E' &&
		    (more = read(p->ready_fds[i], msg + 1, sizeof msg - 2)) > 0) {
			size_t ln;

			r += more;
			msg[r] = '\0';
			msg[strcspn(msg, "\n")] = '\0';
			ln = strcspn(msg + 1, ":");
			p->error_layer = sbx_layer_from_name(msg + 1, ln);
			snprintf(p->error, sizeof p->error, "block %zu: %.200s", i, msg + 1);
			return start_fail(p, f, "setup", EPERM);
		}
		snprintf(p->error, sizeof p->error,
			 "block %zu: setup %s", i, pr == 0 ? "timed out" : "died");
		return start_fail(p, f, "setup", EIO);
	}
	return 0;
}

static int start_once(struct sbx_pipeline *p)
{
	const struct sbx_policy *pol = p->pol;
	/* where the handler is root in the run's user namespace, it makes
	 * each block's IPC namespace itself, with bounded SysV limits */
	int own_ipc = (pol->layers & SBX_BIT(SBX_L_IPCNS)) &&
		      (pol->layers & SBX_BIT(SBX_L_WORKDIR));
	unsigned long flags = clone_flags(pol) & ~(own_ipc ? (unsigned long)CLONE_NEWIPC : 0);
	struct sbx_relay *f = NULL;
	int go[2], in, rc;

	p->self = getpid();
	p->go_fd = -1;
	p->error[0] = '\0';
	p->error_layer = -1;
	if ((rc = alloc_run(p, &f)) < 0)
		return rc;
	if (pipe2(go, O_CLOEXEC) < 0)
		return start_fail(p, f, "pipe", errno);
	p->go_fd = go[1];
	p->go_sent = 0;
	/* A lone block has no other block whose setup could still fail:
	 * its go byte goes in now, and it execs the moment it is set up,
	 * without waiting for the handler to read its ready and answer
	 * (two wakeups on the critical path). The clock starts here. */
	if (p->go_at_ready && p->n == 1 && write(go[1], "G", 1) == 1) {
		p->go_sent = 1;
		f->t0 = sbx_now_ms();
	}
	in = stdin_fd(p);
	if (in < 0) {
		close(go[0]);
		return start_fail(p, f, "stdin", errno);
	}
	/* every block is born in the run's cgroup: the handler is in it
	 * while it creates them (its memory there is a few pages) */
	if (pol->cg && (rc = sbx_cgroup_enter(pol->cg)) < 0) {
		close(go[0]);
		sbx_close_fd(&in);
		snprintf(p->error, sizeof p->error, "the run's cgroup %.200s: %s", pol->cg->run,
			 strerror(-rc));
		return start_fail(p, f, "cgroup", -rc);
	}
	for (size_t i = 0; i < p->n; i++)
		if ((rc = spawn_block(p, f, i, flags, own_ipc, &in, go)) < 0) {
			sbx_cgroup_leave(pol->cg);
			return rc;
		}
	if (pol->cg && (rc = sbx_cgroup_leave(pol->cg)) < 0) {
		close(go[0]);
		snprintf(p->error, sizeof p->error, "leaving the run's cgroup: %s", strerror(-rc));
		return start_fail(p, f, "cgroup", -rc);
	}
	close(go[0]);
	/* The last block's IPC namespace stays the handler's too, until it
	 * exits after the answer: letting go here would mean making a third
	 * namespace while the block sets up. The block's segments and
	 * queues live on only as long as this process. */
	if ((rc = await_ready(p, f)) < 0)
		return rc;
	shared_settle(p, 0);
	for (size_t i = 0; i + 1 < p->n; i++) {
		f->edges[i].buf = malloc(RELAY_BUF);
		if (!f->edges[i].buf)
			return start_fail(p, f, "memory", ENOMEM);
	}
	p->relay = f;
	return 0;
}

/* Layers that cannot stand without another. */
static unsigned with_dependents(int layer)
{
	unsigned bits = SBX_BIT(layer);

	if (layer == SBX_L_MOUNTNS)
		bits |= SBX_BIT(SBX_L_ROOT) | SBX_BIT(SBX_L_PROC);
	/* a proc mount in a user namespace needs a PID namespace it owns */
	if (layer == SBX_L_PIDNS || layer == SBX_L_USERNS)
		bits |= SBX_BIT(SBX_L_PROC);
	if (layer == SBX_L_ROOT)
		bits |= SBX_BIT(SBX_L_PROC);
	if (layer == SBX_L_NNP)
		bits |= SBX_BIT(SBX_L_LANDLOCK) | SBX_BIT(SBX_L_SECCOMP);
	return bits;
}

int sbx_pipeline_start(struct sbx_pipeline *p)
{
	for (;;) {
		int rc = start_once(p);
		unsigned drop;

		if (rc == 0 || p->pol->mode != SBX_BESTEFFORT || p->error_layer < 0 ||
		    p->error_layer == SBX_L_WORKDIR)
			return rc;
		/* besteffort: the same setup again without what failed; but
		 * an environment's blocks never go without their root (they
		 * would run on the host's trees instead) */
		drop = with_dependents(p->error_layer) & p->pol->layers;
		if (p->pol->sysroot && (drop & SBX_BIT(SBX_L_ROOT)))
			return rc;
		p->pol->layers &= ~drop;
		p->missing |= drop;
		/* without a namespace of their own, blocks are on the handler's
		 * network */
		if (drop & SBX_BIT(SBX_L_NETNS)) {
			p->pol->net = SBX_NET_HOST;
			/* the filter let netlink route queries see a namespace
			 * of the block's own, not the handler's network */
			if ((p->pol->layers & SBX_BIT(SBX_L_SECCOMP)) &&
			    sbx_policy_seccomp(p->pol) < 0) {
				p->pol->layers &= ~SBX_BIT(SBX_L_SECCOMP);
				p->missing |= SBX_BIT(SBX_L_SECCOMP);
			}
		}
		if (!drop)
			return rc;
	}
}

void sbx_pipeline_abort(struct sbx_pipeline *p)
{
	sbx_close_fd(&p->go_fd);
	for (size_t i = 0; p->pids && i < p->n; i++) {
		if (p->pids[i] > 0) {
			/* its group too, as reap does: the pid (and so the
			 * group) is ours until it is reaped below */
			kill(-p->pids[i], SIGKILL);
			kill(p->pids[i], SIGKILL);
			waitpid(p->pids[i], NULL, 0);
			p->pids[i] = -1;
		}
	}
	sbx_kill_descendants();
	shared_settle(p, 1);
	sbx_free_fds(p, p->relay);
	p->relay = NULL;
}

void sbx_pipeline_free(struct sbx_pipeline *p)
{
	for (size_t i = 0; p->r.res && i < p->n; i++)
		sbx_capture_free(&p->r.res[i].err);
	for (size_t i = 0; p->r.taps && i < p->n; i++)
		sbx_capture_free(&p->r.taps[i].data);
	sbx_capture_free(&p->r.out);
	release_arrays(p);
}
