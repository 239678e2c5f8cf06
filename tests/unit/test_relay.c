/* The relay's end of a block (sandbox/relay.c): a block has ended once
 * its init's end record (sandbox/endrec.h) arrives, whether or not the
 * init has exited yet; the record's status and usage are the block's.
 * Without a record (an init that was killed, or one that wrote half of
 * one) the block ends when it is reaped, with its wait status.
 *
 * Each case drives sbx_pipeline_run over one stand-in block: a child
 * process with the pipes a block has (stdout, stderr, the ready pipe)
 * that writes what a block's init would, then either lingers (as an
 * init does while its exit tears the block's namespaces down, here for
 * 30 s, so a relay that waited for it would show) or exits. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/endrec.h"
#include "sandbox/internal.h"
#include "tests/tap.h"

struct child_plan {
	const char *out;	/* written to stdout, then stdout closed */
	const char *record;	/* bytes on the ready pipe, or NULL */
	size_t record_len;
	int linger;		/* then sleep 30 s instead of exiting */
	int exit_code;		/* else _exit with this */
};

static void put64(char *at, int64_t v)
{
	memcpy(at, &v, sizeof v);
}

static void make_record(char *msg, int status, int64_t ut_us, int64_t st_us, int64_t rss)
{
	msg[0] = SBX_END_TAG;
	memcpy(msg + SBX_END_STATUS, &status, sizeof status);
	put64(msg + SBX_END_UTIME_US, ut_us);
	put64(msg + SBX_END_STIME_US, st_us);
	put64(msg + SBX_END_MAXRSS_KIB, rss);
}

struct run {
	struct sbx_pipeline p;
	struct sbx_policy pol;
	pid_t pid;
	int rc;
	long ms;
};

/* Starts the stand-in block and relays it to its end. */
static void run_one(struct run *r, const struct child_plan *plan, int sig_fd)
{
	struct sbx_pipeline *p = &r->p;
	struct sbx_relay *f = calloc(1, sizeof *f);
	int out[2], err[2], ready[2];
	long t0;

	memset(r, 0, sizeof *r);
	if (!f || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0) {
		perror("test_relay: setup");
		exit(2);
	}
	r->pid = fork();
	if (r->pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		if (plan->out && write(out[1], plan->out, strlen(plan->out)) < 0)
			_exit(90);
		close(out[1]);
		close(err[1]);
		if (plan->record && write(ready[1], plan->record, plan->record_len) < 0)
			_exit(91);
		if (plan->linger) {
			sleep(30);
			_exit(92);
		}
		_exit(plan->exit_code);
	}
	close(out[1]);
	close(err[1]);
	close(ready[1]);
	p->n = 1;
	p->pol = &r->pol;
	p->timeout_s = 60;
	p->max_stdout = 1 << 20;
	p->max_stderr = 1 << 16;
	p->max_tap = 0;
	p->client_fd = -1;
	p->sig_fd = sig_fd;
	p->go_fd = -1;
	p->r.n = 1;
	p->r.res = calloc(1, sizeof *p->r.res);
	p->r.taps = calloc(1, sizeof *p->r.taps);
	p->pids = calloc(1, sizeof *p->pids);
	p->ready_fds = calloc(1, sizeof *p->ready_fds);
	p->reported = calloc(1, sizeof *p->reported);
	p->mnt_fds = calloc(1, sizeof *p->mnt_fds);
	f->edges = calloc(1, sizeof *f->edges);
	f->err = calloc(1, sizeof *f->err);
	if (!p->r.res || !p->r.taps || !p->pids || !p->ready_fds || !p->reported ||
	    !p->mnt_fds || !f->edges || !f->err) {
		fputs("test_relay: out of memory\n", stderr);
		exit(2);
	}
	p->pids[0] = r->pid;
	p->ready_fds[0] = ready[0];
	p->mnt_fds[0] = -1;
	f->out = out[0];
	f->err[0] = err[0];
	f->edges[0].up = f->edges[0].down = -1;
	f->give_up = -1;
	f->t0 = sbx_now_ms();
	p->relay = f;
	t0 = sbx_now_ms();
	r->rc = sbx_pipeline_run(p);
	r->ms = sbx_now_ms() - t0;
}

/* 1 while pid has not ended (not even as a zombie: WNOWAIT leaves it) */
static int still_running(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

static int gone(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD && kill(pid, 0) < 0;
}

static void done_with(struct run *r)
{
	sbx_pipeline_abort(&r->p);
	sbx_pipeline_free(&r->p);
}

int main(void)
{
	char rec[SBX_END_LEN];
	struct child_plan plan;
	struct run r;
	int sig_fd = sbx_signals_init();

	if (sig_fd < 0) {
		perror("test_relay: signalfd");
		return 2;
	}

	/* an end record, then an init that takes its time to go */
	make_record(rec, 0, 1234567, 2500, 4321);
	plan = (struct child_plan){ "hi\n", rec, sizeof rec, 1, 0 };
	run_one(&r, &plan, sig_fd);
	tap_ok(r.rc == 0 && r.p.r.out.len == 3 && !memcmp(r.p.r.out.p, "hi\n", 3),
	       "the block's output is relayed (rc %d, %zu bytes)", r.rc, r.p.r.out.len);
	tap_ok(still_running(r.pid),
	       "the relay ends at the end record, with the init still there (%ld ms)", r.ms);
	tap_ok(r.p.r.res[0].exit_code == 0 && r.p.r.res[0].signal == 0 && !r.p.r.res[0].killed,
	       "the record's status is the block's: exit 0, not killed");
	tap_ok(r.p.r.res[0].usage.cpu_user_ms == 1234 && r.p.r.res[0].usage.cpu_sys_ms == 2 &&
	       r.p.r.res[0].usage.max_rss_kib == 4321,
	       "the record's usage is the block's: %ld ms user, %ld ms system, %ld KiB",
	       r.p.r.res[0].usage.cpu_user_ms, r.p.r.res[0].usage.cpu_sys_ms,
	       r.p.r.res[0].usage.max_rss_kib);
	tap_ok(r.p.r.usage.cpu_user_ms == 1234 && r.p.r.exit_code == 0,
	       "the run's totals count it");
	tap_ok(sbx_pipeline_settled(&r.p), "the pipeline is settled: the caller may answer first");
	done_with(&r);
	tap_ok(gone(r.pid), "sbx_pipeline_abort reaps the lingering init");

	/* a program ended by a signal: the record says so */
	make_record(rec, SIGSEGV, 1000, 1000, 100);
	plan = (struct child_plan){ "", rec, sizeof rec, 1, 0 };
	run_one(&r, &plan, sig_fd);
	tap_ok(r.rc == 0 && r.p.r.res[0].exit_code == 128 + SIGSEGV &&
	       r.p.r.res[0].signal == SIGSEGV && still_running(r.pid),
	       "a record of a program killed by SIGSEGV: exit %d, signal %d, without waiting "
	       "for the init", r.p.r.res[0].exit_code, r.p.r.res[0].signal);
	tap_ok(r.p.r.exit_code == 128 + SIGSEGV, "… and it decides the run (%d)", r.p.r.exit_code);
	done_with(&r);
	tap_ok(gone(r.pid), "… its init reaped after");

	/* no record: the block ends when it is reaped, with its own status */
	plan = (struct child_plan){ "x\n", NULL, 0, 0, 3 };
	run_one(&r, &plan, sig_fd);
	tap_ok(r.rc == 0 && r.p.r.res[0].exit_code == 3 && gone(r.pid),
	       "no end record: the block's wait status once reaped (exit %d)",
	       r.p.r.res[0].exit_code);
	tap_ok(!sbx_pipeline_settled(&r.p), "… and the pipeline is not settled by a record");
	done_with(&r);

	/* half a record is no record */
	make_record(rec, 0, 5000000, 0, 1);
	plan = (struct child_plan){ "y\n", rec, 7, 0, 5 };
	run_one(&r, &plan, sig_fd);
	tap_ok(r.rc == 0 && r.p.r.res[0].exit_code == 5 && r.p.r.res[0].usage.cpu_user_ms < 5000,
	       "a short record is ignored: the wait status (exit %d) and wait4's usage (%ld ms)",
	       r.p.r.res[0].exit_code, r.p.r.res[0].usage.cpu_user_ms);
	done_with(&r);

	/* a record with another tag is no record */
	make_record(rec, 0, 5000000, 0, 1);
	rec[0] = 'X';
	plan = (struct child_plan){ "z\n", rec, sizeof rec, 0, 6 };
	run_one(&r, &plan, sig_fd);
	tap_ok(r.rc == 0 && r.p.r.res[0].exit_code == 6,
	       "a record that does not start with its tag is ignored (exit %d)",
	       r.p.r.res[0].exit_code);
	done_with(&r);
	return tap_done();
}
