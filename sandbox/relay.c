/* The pipeline's phase two: every block released at once, the handler
 * relaying each inter-block edge so every byte that crosses can be
 * counted and, for the debug surface, tapped on the same path; the wall
 * deadline, the keep-alive, the client, the reaping. spawn.c is phase
 * one. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/endrec.h"
#include "sandbox/internal.h"

static long tv_ms(struct timeval tv)
{
	return (long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void set_usage(struct sbx_block_result *r, const struct rusage *ru)
{
	r->usage.cpu_user_ms = tv_ms(ru->ru_utime);
	r->usage.cpu_sys_ms = tv_ms(ru->ru_stime);
	r->usage.max_rss_kib = ru->ru_maxrss;
}

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

/* The program's own wait status, as the block's init reported it in
 * its end record (sandbox/endrec.h) where the relay has not read it. */
static int init_status(int ready_fd, int status)
{
	char msg[SBX_END_LEN];
	int st;

	if (ready_fd < 0 || read(ready_fd, msg, sizeof msg) != (ssize_t)sizeof msg ||
	    msg[0] != SBX_END_TAG)
		return status;
	memcpy(&st, msg + SBX_END_STATUS, sizeof st);
	return st;
}

/* A 64-bit field of an end record */
static int64_t record_at(const char *msg, int off)
{
	int64_t v;

	memcpy(&v, msg + off, sizeof v);
	return v;
}

/* Block i's end record, once poll says it is there: the block has ended
 * (its program, and everything else of it, killed and reaped by its
 * init, which is on its way out), so it counts as ended now, with what
 * the record says; its init is reaped later (reap, kill_all, or
 * sbx_pipeline_abort after the answer). Without a record (the init was
 * killed) the pipe just closes, and reap decides as before. */
static void on_end_record(struct sbx_pipeline *p, struct sbx_relay *f, size_t i,
			  size_t *live)
{
	struct sbx_block_result *r = &p->r.res[i];
	char msg[SBX_END_LEN];
	ssize_t n;
	int st;

	do
		n = read(p->ready_fds[i], msg, sizeof msg);
	while (n < 0 && errno == EINTR);
	sbx_close_fd(&p->ready_fds[i]);
	if (n != (ssize_t)sizeof msg || msg[0] != SBX_END_TAG || p->pids[i] <= 0)
		return;
	memcpy(&st, msg + SBX_END_STATUS, sizeof st);
	set_result(r, st, f->t0);
	r->usage.cpu_user_ms = (long)(record_at(msg, SBX_END_UTIME_US) / 1000);
	r->usage.cpu_sys_ms = (long)(record_at(msg, SBX_END_STIME_US) / 1000);
	r->usage.max_rss_kib = (long)record_at(msg, SBX_END_MAXRSS_KIB);
	p->reported[i] = 1;
	(*live)--;
}

static void reap(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live)
{
	struct rusage ru;
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
		if (wait4(w, &status, 0, &ru) != w)
			return;
		for (size_t i = 0; i < p->n; i++) {
			if (p->pids[i] != w)
				continue;
			p->pids[i] = -1;
			/* a block whose end record came counts as it said */
			if (p->reported[i])
				continue;
			set_result(&p->r.res[i], init_status(p->ready_fds[i], status), f->t0);
			set_usage(&p->r.res[i], &ru);
			(*live)--;
		}
	}
}

static void kill_all(struct sbx_pipeline *p, struct sbx_relay *f, size_t *live)
{
	for (size_t i = 0; i < p->n; i++) {
		struct rusage ru;
		int status;

		if (p->pids[i] <= 0)
			continue;
		kill(-p->pids[i], SIGKILL);
		kill(p->pids[i], SIGKILL);
		/* an init that sent its end record had ended on its own */
		if (p->reported[i]) {
			waitpid(p->pids[i], NULL, 0);
			p->pids[i] = -1;
			continue;
		}
		p->r.res[i].killed = 1;
		if (wait4(p->pids[i], &status, 0, &ru) == p->pids[i]) {
			set_result(&p->r.res[i], init_status(p->ready_fds[i], status), f->t0);
			set_usage(&p->r.res[i], &ru);
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
	for (size_t i = 0; i < p->n; i++) {
		fcntl(f->err[i], F_SETFL, O_NONBLOCK);
		if (i + 1 < p->n) {
			fcntl(f->edges[i].up, F_SETFL, O_NONBLOCK);
			fcntl(f->edges[i].down, F_SETFL, O_NONBLOCK);
		}
	}
	fcntl(f->out, F_SETFL, O_NONBLOCK);
	sbx_pipeline_go(p);
}

void sbx_pipeline_go(struct sbx_pipeline *p)
{
	struct sbx_relay *f = p->relay;
	char go[64];
	size_t left = p->n, k;

	if (!f || p->go_fd < 0)
		return;
	if (p->go_sent) {
		sbx_close_fd(&p->go_fd);
		return;
	}
	f->t0 = sbx_now_ms();
	memset(go, 'G', sizeof go);
	for (; left > 0; left -= k) {
		k = left < sizeof go ? left : sizeof go;
		if (sbx_write_all(p->go_fd, go, k) < 0)
			break;
	}
	sbx_close_fd(&p->go_fd);
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
 * block its stderr, its init's end record and, for an edge, the side
 * that can move now (their indexes kept in the edge). */
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
		struct edge *e = &f->edges[i];

		e->err_pix = f->err[i] >= 0 ? (int)n : -1;
		e->pix = -1;
		if (f->err[i] >= 0)
			pfd[n++] = (struct pollfd){ .fd = f->err[i], .events = POLLIN };
		/* the init's end record, while the block runs */
		e->end_pix = -1;
		if (p->ready_fds[i] >= 0 && p->pids[i] > 0 && !p->reported[i]) {
			e->end_pix = (int)n;
			pfd[n++] = (struct pollfd){ .fd = p->ready_fds[i], .events = POLLIN };
		}
		if (i + 1 >= p->n)
			continue;
		if (e->len > 0 && e->down >= 0) {
			e->pix = (int)n;
			pfd[n++] = (struct pollfd){ .fd = e->down, .events = POLLOUT };
		} else if (e->up >= 0 && e->len == 0) {
			e->pix = (int)n;
			pfd[n++] = (struct pollfd){ .fd = e->up, .events = POLLIN };
		}
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
		sbx_close_fd(&f->out);
		return;
	}
	if (r < 0)
		return;
	sbx_phase_mark(SBX_PH_OUTPUT);
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

/* The next block stopped reading: like a real pipe, the writer gets
 * EPIPE/SIGPIPE. */
static void edge_broken(struct edge *e)
{
	sbx_close_fd(&e->down);
	sbx_close_fd(&e->up);
	e->len = 0;
}

/* An edge without a tap: the pipe buffers move from block i's pipe to
 * block i+1's (splice), never copied through the handler; counted as
 * they go. e->len is 1 while block i+1's pipe is full (the edge waits
 * to write), 0 while it waits for block i. */
static void splice_edge(struct sbx_pipeline *p, struct edge *e, size_t i)
{
	for (;;) {
		ssize_t r = splice(e->up, NULL, e->down, NULL, 1 << 20,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int queued = 0;

		if (r > 0) {
			e->len = 0;
			p->r.res[i].out_bytes += (uint64_t)r;
			p->r.taps[i].bytes += (uint64_t)r;
			continue;
		}
		if (r == 0) {
			sbx_close_fd(&e->up);
			e->len = 0;
		} else if (errno == EAGAIN) {
			/* nothing to read, or no room to write */
			e->len = ioctl(e->up, FIONREAD, &queued) == 0 && queued > 0;
		} else if (errno != EINTR) {
			edge_broken(e);
		} else {
			continue;
		}
		return;
	}
}

/* An edge with a tap (the debug pipeline): read what i wrote, write it
 * on as i+1 takes it, keep what crossed. */
static void copy_edge(struct sbx_pipeline *p, struct edge *e, size_t i)
{
	ssize_t r;

	if (e->len == 0 && e->up >= 0) {
		r = drain(e->up, e->buf, RELAY_BUF);
		if (r == 0) {
			sbx_close_fd(&e->up);
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
			sbx_capture_head(&p->r.taps[i].data, p->max_tap, e->buf + e->off, (size_t)w);
			e->off += (size_t)w;
			e->len -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			edge_broken(e);
		}
	} else if (e->len > 0) {
		e->len = 0;
	}
}

/* Block i's stderr (its tail kept) and the edge to block i+1, each
 * only once poll said it can move. */
static void on_block(struct sbx_pipeline *p, struct sbx_relay *f, size_t i, char *scratch,
		     const struct pollfd *pfd)
{
	struct edge *e = &f->edges[i];
	ssize_t r;

	if (e->err_pix >= 0 && pfd[e->err_pix].revents && f->err[i] >= 0 &&
	    (r = drain(f->err[i], scratch, RELAY_BUF)) >= 0) {
		if (r == 0) {
			sbx_close_fd(&f->err[i]);
		} else {
			p->r.res[i].err_bytes += (uint64_t)r;
			sbx_capture_tail(&p->r.res[i].err, p->max_stderr, scratch, (size_t)r);
		}
	}
	if (i + 1 >= p->n)
		return;
	if (e->pix >= 0 && pfd[e->pix].revents) {
		if (p->tap)
			copy_edge(p, e, i);
		else if (e->up >= 0 && e->down >= 0)
			splice_edge(p, e, i);
		else
			e->len = 0;
	}
	if (e->up < 0 && e->len == 0)
		sbx_close_fd(&e->down);
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
	pfd = calloc(3 * p->n + 3, sizeof *pfd);
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
		if (live == 0 && !swept && !sbx_pipeline_settled(p)) {
			/* every block ended: what they left behind must not
			 * hold the pipes open (an init that sent its end
			 * record has left nothing) */
			sbx_kill_descendants();
			swept = 1;
		}
		if (tick(p, f, &live, now, deadline, &next_ka))
			continue;
		nfds = fill_pollfds(p, f, pfd, watch_client, client_eof);
		if (poll(pfd, nfds, next_wait(p, now, deadline, next_ka)) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < p->n; i++)
			if (f->edges[i].end_pix >= 0 && pfd[f->edges[i].end_pix].revents)
				on_end_record(p, f, i, &live);
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
			on_block(p, f, i, scratch, pfd);
	}
	p->r.duration_ms = sbx_now_ms() - f->t0;
	sbx_result_decide(&p->r);
	/* every block has ended: what the run's cgroup saw */
	sbx_cgroup_stats(p->pol->cg, &p->r.usage);
	free(pfd);
	free(scratch);
	sbx_free_fds(p, f);
	p->relay = NULL;
	return 0;
}

int sbx_pipeline_settled(const struct sbx_pipeline *p)
{
	if (!p->reported || !p->n)
		return 0;
	for (size_t i = 0; i < p->n; i++)
		if (!p->reported[i])
			return 0;
	return 1;
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
	memset(&r->usage, 0, sizeof r->usage);
	for (size_t i = 0; i < r->n; i++) {
		const struct sbx_usage *u = &r->res[i].usage;

		r->usage.cpu_user_ms += u->cpu_user_ms;
		r->usage.cpu_sys_ms += u->cpu_sys_ms;
		if (u->max_rss_kib > r->usage.max_rss_kib)
			r->usage.max_rss_kib = u->max_rss_kib;
	}
}
