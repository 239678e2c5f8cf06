/* The pipeline: one process per block, started in two phases (every
 * block set up and waiting, then all released at once), with the handler
 * relaying each inter-block edge so every byte that crosses can be
 * counted and, for the debug surface, tapped on the same path. */
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"

#define RELAY_BUF 65536
#define SETUP_TIMEOUT_MS 10000

static void set_result(struct sbx_block_result *r, int status, long t0)
{
	if (WIFEXITED(status)) {
		r->exit_code = WEXITSTATUS(status);
		r->signal = 0;
	} else if (WIFSIGNALED(status)) {
		r->signal = WTERMSIG(status);
		r->exit_code = 128 + r->signal;
	}
	r->duration_ms = sbx_now_ms() - t0;
}


static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Relay state, private to one run. */
struct edge {
	int up;		/* block i's stdout, read end */
	int down;	/* block i+1's stdin, write end */
	char *buf;
	size_t off, len;
};

struct sbx_relay {
	struct edge *edges;
	int out;	/* last block's stdout */
	int *err;	/* each block's stderr */
	long t0;
	long give_up;	/* after the kill: when the pipes are closed undrained, or -1 */
};

static void free_fds(struct sbx_pipeline *p, struct sbx_relay *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->edges && i + 1 < p->n; i++) {
		close_fd(&f->edges[i].up);
		close_fd(&f->edges[i].down);
		free(f->edges[i].buf);
	}
	for (size_t i = 0; f->err && i < p->n; i++)
		close_fd(&f->err[i]);
	close_fd(&f->out);
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
static void open_to_block(int fd)
{
	fchmod(fd, 0666);
}

static int start_fail(struct sbx_pipeline *p, struct sbx_relay *f,
		      const char *what, int err)
{
	if (!p->error[0])
		snprintf(p->error, sizeof p->error, "%s: %s", what, strerror(err));
	free_fds(p, f);
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
	free(p->r.res);
	free(p->pids);
	free(p->ready_fds);
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
	p->r.taps = calloc(p->n, sizeof *p->r.taps);
	f = calloc(1, sizeof *f);
	if (!p->r.res || !p->pids || !p->ready_fds || !p->r.taps || !f)
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
		f->err[i] = -1;
		f->edges[i].up = f->edges[i].down = -1;
	}
	*ret = f;
	return 0;
}

/* Block i's uid/gid maps, written from the parent user namespace, then
 * "m" on its sync pipe: inside, the block is 65534; outside, the id the
 * run's files belong to. 0 or -errno. */
static int write_block_maps(const struct sbx_policy *pol, pid_t pid, int sync_wr)
{
	char umap[48], gmap[48];
	int rc;

	snprintf(umap, sizeof umap, "%d %u 1\n", SBX_BLOCK_ID, (unsigned)pol->map_uid);
	snprintf(gmap, sizeof gmap, "%d %u 1\n", SBX_BLOCK_ID, (unsigned)pol->map_gid);
	rc = sbx_write_maps(pid, umap, gmap);
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
		close_fd(in);
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
			close_fd(&outp[k]);
			close_fd(&errp[k]);
			close_fd(&readyp[k]);
			close_fd(&syncp[k]);
			close_fd(&nextp[k]);
		}
		close_fd(in);
		close(go[0]);
		return start_fail(p, f, "pipe", e);
	}
	open_to_block(outp[1]);
	open_to_block(errp[1]);
	cf = (struct sbx_child_fds){
		.in = *in, .out = outp[1], .err = errp[1], .ready = readyp[1],
		.go_rd = go[0], .go_wr = go[1], .sync = syncp[0],
	};
	pid = clone_block(flags);
	if (pid == 0)
		sbx_child_main(p, i, &cf);
	e = errno;
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
		close_fd(in);
		close(go[0]);
		p->error_layer = flags ? refused_ns(pol) : -1;
		snprintf(p->error, sizeof p->error, "block %zu: %s: %s", i,
			 p->error_layer >= 0 ? sbx_layer_name(p->error_layer) : "fork",
			 strerror(e));
		return start_fail(p, f, "clone", e);
	}
	p->pids[i] = pid;
	p->r.res[i].started = 1;
	if ((pol->layers & SBX_BIT(SBX_L_USERNS)) &&
	    (e = write_block_maps(pol, pid, syncp[1])) < 0) {
		close(syncp[1]);
		close_fd(in);
		close(go[0]);
		p->error_layer = SBX_L_USERNS;
		snprintf(p->error, sizeof p->error, "block %zu: userns: uid/gid maps: %s",
			 i, strerror(-e));
		return start_fail(p, f, "userns", -e);
	}
	close(syncp[1]);
	return 0;
}

/* Every block reports its setup, or why it failed, before any runs. */
static int await_ready(struct sbx_pipeline *p, struct sbx_relay *f)
{
	for (size_t i = 0; i < p->n; i++) {
		char msg[256];
		struct pollfd pfd = { .fd = p->ready_fds[i], .events = POLLIN };
		ssize_t r = 0;
		int pr;

		do
			pr = poll(&pfd, 1, SETUP_TIMEOUT_MS);
		while (pr < 0 && errno == EINTR);
		if (pr > 0)
			r = read(p->ready_fds[i], msg, sizeof msg - 1);
		if (r == 1 && msg[0] == 'R')
			continue;
		if (r > 1 && msg[0] == 'E') {
			size_t ln;

			msg[r] = '\0';
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
	in = stdin_fd(p);
	if (in < 0) {
		close(go[0]);
		return start_fail(p, f, "stdin", errno);
	}
	for (size_t i = 0; i < p->n; i++)
		if ((rc = spawn_block(p, f, i, flags, own_ipc, &in, go)) < 0)
			return rc;
	close(go[0]);
	/* the handler lets go of the last block's IPC namespace: it ends
	 * with that block */
	if (own_ipc)
		unshare(CLONE_NEWIPC);
	if ((rc = await_ready(p, f)) < 0)
		return rc;
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
		/* besteffort: the same setup again without what failed */
		drop = with_dependents(p->error_layer) & p->pol->layers;
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

/* The program's own wait status, as the block's init reported it. */
static int init_status(int ready_fd, int status)
{
	char msg[1 + sizeof(int)];
	int st;

	if (ready_fd < 0 || read(ready_fd, msg, sizeof msg) != (ssize_t)sizeof msg ||
	    msg[0] != 'S')
		return status;
	memcpy(&st, msg + 1, sizeof st);
	return st;
}

static void reap(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live)
{
	siginfo_t si;
	int status;

	for (;;) {
		pid_t w;

		/* look before reaping: while the exited process is a zombie
		 * its pid (and process group) cannot be reused, so what the
		 * block left in its session is killed, never a stranger */
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		w = si.si_pid;
		for (size_t i = 0; i < p->n; i++)
			if (p->pids[i] == w)
				kill(-w, SIGKILL);
		if (waitpid(w, &status, 0) != w)
			return;
		for (size_t i = 0; i < p->n; i++) {
			if (p->pids[i] != w)
				continue;
			set_result(&p->r.res[i], init_status(p->ready_fds[i], status), f->t0);
			p->pids[i] = -1;
			(*live)--;
		}
	}
}

static void kill_all(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live)
{
	for (size_t i = 0; i < p->n; i++) {
		int status;

		if (p->pids[i] <= 0)
			continue;
		kill(-p->pids[i], SIGKILL);
		kill(p->pids[i], SIGKILL);
		p->r.res[i].killed = 1;
		if (waitpid(p->pids[i], &status, 0) == p->pids[i]) {
			set_result(&p->r.res[i], init_status(p->ready_fds[i], status), f->t0);
			(*live)--;
		}
		p->pids[i] = -1;
	}
	sbx_kill_descendants();
}

static void end_run(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live,
		    enum sbx_end why)
{
	if (p->r.end == SBX_END_NORMAL)
		p->r.end = why;
	kill_all(p, f, live);
	/* every process of the run is gone; what is still in the pipes
	 * is read until EOF, but a process outside the run (possible with
	 * --sandbox off) may hold a write end open for ever */
	if (f->give_up < 0)
		f->give_up = sbx_now_ms() + SBX_DRAIN_AFTER_KILL_MS;
}

/* Reads what is there; returns bytes read, 0 at EOF, -1 when nothing now. */
static ssize_t drain(int fd, char *buf, size_t cap)
{
	ssize_t r;

	do
		r = read(fd, buf, cap);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	return r < 0 ? 0 : r;
}

static void handle_signals(struct sbx_pipeline *p, struct sbx_relay *f,
			   size_t *live)
{
	struct signalfd_siginfo si;

	while (read(p->sig_fd, &si, sizeof si) == sizeof si) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		p->r.end_signal = (int)si.ssi_signo;
		end_run(p, f, live, SBX_END_SIGNAL);
	}
	reap(p, f, live);
}

/* Reads what the client sent during the run (pipelined junk is dropped):
 * 1 while it is there, 0 at end of input, -1 when the connection broke. */
static int client_read(int fd)
{
	char junk[4096];
	ssize_t r = recv(fd, junk, sizeof junk, MSG_DONTWAIT);

	if (r < 0 && errno == ENOTSOCK)
		r = read(fd, junk, sizeof junk);
	if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
				errno == EINTR)))
		return 1;
	return r == 0 ? 0 : -1;
}

/* The client's side of the connection: end of its input is either a
 * half-close (nc -N, socat: it still reads the answer) or a full close.
 * When the caller can write to the client (probe_client), a byte sent
 * now tells them apart: a closed socket answers with a reset, which poll
 * reports as POLLERR/POLLHUP. Otherwise end of input counts as gone. */
static int client_event(struct sbx_pipeline *p, short revents, int *eof)
{
	if (revents & (POLLERR | POLLHUP))
		return -1;
	if (*eof)
		return 0;
	switch (client_read(p->client_fd)) {
	case 1:
		return 0;
	case 0:
		*eof = 1;
		if (p->probe_client && p->cb.keepalive &&
		    p->cb.keepalive(p->cb.ctx) == 0)
			return 0;
		return -1;
	}
	return -1;
}

/* Phase two's start: the relay's ends non-blocking, the clock started,
 * then one go byte per block, however many blocks (--max-blocks goes to
 * 256; the pipe holds 64 KiB, so this never blocks). */
static void relay_begin(struct sbx_pipeline *p, struct sbx_relay *f)
{
	char go[64];
	size_t left = p->n, k;

	for (size_t i = 0; i < p->n; i++) {
		fcntl(f->err[i], F_SETFL, O_NONBLOCK);
		if (i + 1 < p->n) {
			fcntl(f->edges[i].up, F_SETFL, O_NONBLOCK);
			fcntl(f->edges[i].down, F_SETFL, O_NONBLOCK);
		}
	}
	fcntl(f->out, F_SETFL, O_NONBLOCK);
	f->t0 = sbx_now_ms();
	memset(go, 'G', sizeof go);
	for (; left > 0; left -= k) {
		k = left < sizeof go ? left : sizeof go;
		if (sbx_write_all(p->go_fd, go, k) < 0)
			break;
	}
	close_fd(&p->go_fd);
}

/* A block's output still to be drained. */
static int open_reads(const struct sbx_pipeline *p, const struct sbx_relay *f)
{
	int n = f->out >= 0;

	for (size_t i = 0; i < p->n; i++)
		n += f->err[i] >= 0 || (i + 1 < p->n && f->edges[i].up >= 0);
	return n;
}

/* The wall deadline and the keep-alive: 1 when the run just ended
 * (the loop looks again before it waits). */
static int tick(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live,
		long now, long deadline, long *next_ka)
{
	if (p->r.end == SBX_END_NORMAL && now >= deadline) {
		end_run(p, f, live, SBX_END_TIMEOUT);
		return 1;
	}
	if (*next_ka >= 0 && now >= *next_ka) {
		*next_ka = now + p->keepalive_ms;
		if (p->r.end == SBX_END_NORMAL && p->cb.keepalive &&
		    p->cb.keepalive(p->cb.ctx) < 0) {
			end_run(p, f, live, SBX_END_CLIENT);
			return 1;
		}
	}
	return 0;
}

/* How long poll may sleep: until the deadline or the next keep-alive;
 * briefly while an ended run drains. */
static int next_wait(const struct sbx_pipeline *p, long now, long deadline, long next_ka)
{
	long wait = deadline - now;

	if (next_ka >= 0 && next_ka - now < wait)
		wait = next_ka - now;
	if (p->r.end != SBX_END_NORMAL)
		wait = 50;
	return wait < 0 ? 0 : (int)wait;
}

/* [0] signals, [1] the client, [2] the last block's stdout, then per
 * block its stderr and, for an edge, the side that can move now. */
static nfds_t fill_pollfds(const struct sbx_pipeline *p, const struct sbx_relay *f,
			   struct pollfd *pfd, int watch_client, int client_eof)
{
	nfds_t n = 0;

	pfd[n++] = (struct pollfd){ .fd = p->sig_fd, .events = POLLIN };
	pfd[n++] = (struct pollfd){
		.fd = watch_client ? p->client_fd : -1,
		.events = client_eof ? 0 : POLLIN | POLLRDHUP };
	pfd[n++] = (struct pollfd){ .fd = f->out, .events = POLLIN };
	for (size_t i = 0; i < p->n; i++) {
		const struct edge *e = &f->edges[i];

		pfd[n++] = (struct pollfd){ .fd = f->err[i], .events = POLLIN };
		if (i + 1 >= p->n)
			continue;
		if (e->len > 0 && e->down >= 0)
			pfd[n++] = (struct pollfd){ .fd = e->down, .events = POLLOUT };
		else if (e->up >= 0 && e->len == 0)
			pfd[n++] = (struct pollfd){ .fd = e->up, .events = POLLIN };
	}
	return n;
}

/* The last block's stdout: counted, kept up to the cap, streamed. */
static void on_stdout(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live,
		      char *scratch)
{
	ssize_t r = drain(f->out, scratch, RELAY_BUF);
	size_t kept = p->r.out.len;

	if (r == 0) {
		close_fd(&f->out);
		return;
	}
	if (r < 0)
		return;
	p->r.out_bytes += (uint64_t)r;
	p->r.res[p->n - 1].out_bytes += (uint64_t)r;
	sbx_capture_head(&p->r.out, p->max_stdout, scratch, (size_t)r);
	if (p->r.out_bytes > p->max_stdout)
		p->r.out_truncated = 1;
	/* when a cut output already decides the answer (agent mode),
	 * running on only burns time */
	if (p->r.out_truncated && p->stop_at_cap)
		end_run(p, f, live, SBX_END_OUTPUT);
	if (p->cb.output && p->r.out.len > kept && p->r.end == SBX_END_NORMAL &&
	    p->cb.output(p->cb.ctx, p->r.out.p + kept, p->r.out.len - kept) < 0)
		end_run(p, f, live, SBX_END_CLIENT);
}

/* Block i's stderr (its tail kept) and the edge to block i+1: read what
 * i wrote, write it on as i+1 takes it, tap what crossed. */
static void on_block(struct sbx_pipeline *p, struct sbx_relay *f, size_t i, char *scratch)
{
	struct edge *e = &f->edges[i];
	ssize_t r;

	if (f->err[i] >= 0 && (r = drain(f->err[i], scratch, RELAY_BUF)) >= 0) {
		if (r == 0) {
			close_fd(&f->err[i]);
		} else {
			p->r.res[i].err_bytes += (uint64_t)r;
			sbx_capture_tail(&p->r.res[i].err, p->max_stderr, scratch, (size_t)r);
		}
	}
	if (i + 1 >= p->n)
		return;
	if (e->len == 0 && e->up >= 0) {
		r = drain(e->up, e->buf, RELAY_BUF);
		if (r == 0) {
			close_fd(&e->up);
		} else if (r > 0) {
			e->off = 0;
			e->len = (size_t)r;
			p->r.res[i].out_bytes += (uint64_t)r;
		}
	}
	if (e->len > 0 && e->down >= 0) {
		ssize_t w = write(e->down, e->buf + e->off, e->len);

		if (w > 0) {
			/* the tap sees exactly what the next block got */
			p->r.taps[i].bytes += (uint64_t)w;
			if (p->tap)
				sbx_capture_head(&p->r.taps[i].data, p->max_tap, e->buf + e->off, (size_t)w);
			e->off += (size_t)w;
			e->len -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			/* the next block stopped reading: like a real pipe,
			 * the writer gets EPIPE/SIGPIPE */
			close_fd(&e->down);
			close_fd(&e->up);
			e->len = 0;
		}
	} else if (e->len > 0) {
		e->len = 0;
	}
	if (e->up < 0 && e->len == 0)
		close_fd(&e->down);
}

int sbx_pipeline_run(struct sbx_pipeline *p)
{
	struct sbx_relay *f = p->relay;
	size_t live = p->n;
	struct pollfd *pfd;
	char *scratch;
	long deadline, next_ka;
	int watch_client = p->client_fd >= 0, client_eof = 0, swept = 0;

	if (!f)
		return -EINVAL;
	pfd = calloc(2 * p->n + 3, sizeof *pfd);
	scratch = malloc(RELAY_BUF);
	if (!pfd || !scratch) {
		free(pfd);
		free(scratch);
		return -ENOMEM;
	}
	p->r.max_stdout = p->max_stdout;
	p->r.max_tap = p->max_tap;
	p->r.timeout_s = p->timeout_s;
	relay_begin(p, f);
	deadline = f->t0 + (long)(p->timeout_s * 1000.0);
	next_ka = p->keepalive_ms > 0 ? f->t0 + p->keepalive_ms : -1;
	for (;;) {
		long now = sbx_now_ms();
		nfds_t nfds;

		if (live == 0 && !open_reads(p, f))
			break;
		/* the hard stop: the answer goes out with what was read */
		if (f->give_up >= 0 && now >= f->give_up)
			break;
		if (live == 0 && !swept) {
			/* every block ended: what they left behind must not
			 * hold the pipes open */
			sbx_kill_descendants();
			swept = 1;
		}
		if (tick(p, f, &live, now, deadline, &next_ka))
			continue;
		nfds = fill_pollfds(p, f, pfd, watch_client, client_eof);
		if (poll(pfd, nfds, next_wait(p, now, deadline, next_ka)) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			handle_signals(p, f, &live);
		if (watch_client && pfd[1].revents &&
		    client_event(p, pfd[1].revents, &client_eof) < 0) {
			watch_client = 0;
			end_run(p, f, &live, SBX_END_CLIENT);
		}
		if (f->out >= 0 && pfd[2].revents)
			on_stdout(p, f, &live, scratch);
		for (size_t i = 0; i < p->n; i++)
			on_block(p, f, i, scratch);
	}
	p->r.duration_ms = sbx_now_ms() - f->t0;
	sbx_result_decide(&p->r);
	free(pfd);
	free(scratch);
	free_fds(p, f);
	p->relay = NULL;
	return 0;
}

void sbx_result_decide(struct sbx_result *r)
{
	r->decider = r->n ? r->n - 1 : 0;
	r->exit_code = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->res[i].exit_code != 0) {
			r->exit_code = r->res[i].exit_code;
			r->decider = i;
		}
	if (r->end == SBX_END_TIMEOUT)
		r->exit_code = 124;
}

void sbx_pipeline_abort(struct sbx_pipeline *p)
{
	close_fd(&p->go_fd);
	for (size_t i = 0; p->pids && i < p->n; i++) {
		if (p->pids[i] > 0) {
			kill(p->pids[i], SIGKILL);
			waitpid(p->pids[i], NULL, 0);
			p->pids[i] = -1;
		}
	}
	sbx_kill_descendants();
	free_fds(p, p->relay);
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
