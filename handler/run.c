/* A run: the sandbox's settings, the run slot, the run's files and
 * pipeline, and the answer's frame every face shares (run mode's early
 * head, a stream's head, its text in whole UTF-8 sequences, its
 * keep-alive comments). What the answer says is the face's
 * (x->face: chat.c, responses.c, mcp.c, debug.c); nothing here names
 * one. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "http/reply.h"
#include "sandbox/phase.h"
#include "sandbox/run.h"
#include "sandbox/sandbox.h"

/* A root handler's run takes its slot's own uid (THREATS.md #17); the
 * checks without a slot (/healthz, --probe) take the one after them. */
void sandbox_config(struct sbx_config *c, int slot)
{
	memset(c, 0, sizeof *c);
	c->run_uid = (uid_t)-1;
	if (geteuid() == 0 && opt.slot_uid_base)
		c->run_uid = (uid_t)(opt.slot_uid_base +
				     (slot >= 0 ? (unsigned long long)slot : opt.max_concurrent));
	c->share = (unsigned)opt.max_concurrent;
	/* the slot's own cgroup, kept between its runs: named by the
	 * runtime directory (its inode: two servers' slot 0 differ) */
	if (slot >= 0) {
		static char dir[PATH_MAX];
		struct stat st;

		if (runtime_dir(dir, sizeof dir) == 0 && stat(dir, &st) == 0) {
			snprintf(c->cgroup_slot, sizeof c->cgroup_slot, "slot-%lx-%lx-%d",
				 (unsigned long)st.st_dev, (unsigned long)st.st_ino, slot);
			/* and its blocks' /etc, kept there between its runs */
			c->keep_dir = dir;
			c->slot = slot;
		}
	}
	c->shm_bytes = opt.shm_bytes;
	c->mode = opt.sandbox;
	c->allow_network = opt.sandbox_network;
	c->share_netns = opt.share_netns;
	c->lim.memory = opt.memory_max;
	c->run_memory_max = opt.run_memory_max == ULLONG_MAX ? opt.memory_max / 2 :
			    opt.run_memory_max;
	c->lim.address_space = opt.address_space_max;
	c->lim.file_bytes = opt.max_file_bytes;
	c->lim.procs = opt.max_procs;
	c->lim.open_files = opt.max_open_files;
	/* RLIMIT_CPU follows each run's own timeout (sbx_cpu_rlimit) */
	c->lim.cpu_s = opt.max_cpu_seconds;
	c->workdir_bytes = opt.workdir_bytes;
	c->workdir_inodes = opt.workdir_inodes;
	c->run_bytes = 2 * opt.max_request_bytes + (4u << 20);
	c->tmp_parent = getenv("TMPDIR");
	if (!c->tmp_parent || c->tmp_parent[0] != '/')
		c->tmp_parent = "/tmp";
}

/* A run slot (SPEC §9), shared by all instances through flock on files
 * in the runtime directory; taken only now that the request is read,
 * authenticated and valid, held until exit. */
int take_slot(struct ctx *x)
{
	char dir[PATH_MAX];
	unsigned idx;
	int fd;

	if ((fd = runtime_dir(dir, sizeof dir)) < 0) {
		errno = -fd;
		goto unusable;
	}
	fd = sbx_slot_take(dir, (unsigned)opt.max_concurrent, &idx);
	if (fd == -EBUSY) {
		fprintf(stderr, "codellm: %s: all %llu run slots are busy: 429\n", x->id,
			opt.max_concurrent);
		return refuse(x, REF_SLOTS_BUSY, "Retry-After: 1\r\n",
			    "Rate limit reached for codellm on concurrent runs: Limit %llu, "
			    "Used %llu, Requested 1. Please try again in 1s. codellm: all run "
			    "slots are busy (--max-concurrent)",
			    opt.max_concurrent, opt.max_concurrent);
	}
	if (fd < 0) {
		errno = -fd;
		goto unusable;
	}
	x->slot_fd = fd;
	x->slot = (int)idx;
	sbx_phase_mark(SBX_PH_SLOT);
	return 0;
unusable:
	fprintf(stderr, "codellm: %s: the run slot directory %s is unusable: %s (it must be "
		"the service user's, or one where it may make its own private subdirectory: "
		"--runtime-dir)\n", x->id, dir, strerror(errno));
	return refuse(x, REF_MISCONFIGURED, NULL,
		    "the server cannot take a run slot; see its journal");
}

void release_slot(struct ctx *x)
{
	if (x->slot_fd >= 0)
		close(x->slot_fd);
	x->slot_fd = -1;
}

static int keepalive(void *ctx)
{
	struct ctx *x = ctx;

	return conn_write_nb(&x->c, " ", 1);
}

static void say_layers(const char *id, const char *what, unsigned bits)
{
	char names[256];

	sbx_layer_list(names, sizeof names, bits, ", ");
	fprintf(stderr, "codellm: %s: %s: %s\n", id, what, names);
}

static void audit_result(struct audit *a, const struct sbx_result *res)
{
	const struct sbx_layers *l = &res->layers;
	size_t n;

	a->has_result = 1;
	a->exit_code = res->exit_code;
	a->timed_out = res->end == SBX_END_TIMEOUT;
	a->duration_ms = res->duration_ms;
	a->cpu_user_ms = res->usage.cpu_user_ms;
	a->cpu_sys_ms = res->usage.cpu_sys_ms;
	a->max_rss_kib = res->usage.max_rss_kib;
	a->cgroup = res->usage.cgroup;
	a->memory_peak_kib = res->usage.memory_peak_kib;
	a->oom_kills = res->usage.oom_kills;
	n = (size_t)snprintf(a->sandbox, sizeof a->sandbox, "%s net=%s%s",
			     sbx_mode_name(l->mode), sbx_net_name(l->net),
			     l->absent ? " missing=" : "");
	if (n < sizeof a->sandbox)
		sbx_layer_list(a->sandbox + n, sizeof a->sandbox - n, l->absent, ",");
}

/* Agent mode's audit: the paths the tool calls write, one per line,
 * each made safe for the journal (the block's output chose them). */
void audit_paths(struct audit *a, const struct agent_output *o)
{
	for (size_t i = 0; i < o->n; i++) {
		char shown[PATH_MAX];

		audit_text(shown, sizeof shown, o->changes[i].path, strlen(o->changes[i].path));
		if (a->write_paths.len)
			jbuf_puts(&a->write_paths, "\n");
		jbuf_puts(&a->write_paths, shown);
	}
}

/* ---- a stream's frame: its head, its text, its quiet ---------------- */

static void stream_head(struct ctx *x, const struct resp_run *rr)
{
	x->ctype = "text/event-stream";
	send_head(x, 200, "Cache-Control: no-cache\r\n", -1, 1);
	x->st_rr = rr;
	x->st_last = conn_now_ms();
	x->face->begin(x, rr);
}

/* The last block's stdout, as it is produced, to the face; a UTF-8
 * sequence split between two reads waits for its end (the face's end
 * takes what is left in x->st_pend). */
static int stream_output(void *ctx, const char *data, size_t len)
{
	struct ctx *x = ctx;
	struct jbuf all = {0};
	size_t n;
	int rc = 0;

	jbuf_append(&all, x->st_pend, x->st_npend);
	jbuf_append(&all, data, len);
	if (all.oom)
		rc = -1;
	n = rc ? 0 : jstr_utf8_prefix(all.p, all.len);
	x->st_npend = rc ? 0 : all.len - n;
	if (x->st_npend)
		memcpy(x->st_pend, all.p + n, x->st_npend);
	if (n)
		rc = x->face->text(x, all.p, n);
	jbuf_free(&all);
	return rc;
}

/* ": ping" while the stream is quiet: a comment every client ignores */
static int stream_ping(void *ctx)
{
	struct ctx *x = ctx;

	if (conn_now_ms() - x->st_last < (long)(opt.keepalive_s * 1000) - 100)
		return 0;
	x->st_last = conn_now_ms();
	return http_sse_comment(&x->c, "ping", write_deadline(x));
}

/* What the pipeline takes from the request and the options; the mode's
 * own settings (callbacks, the stop at the cap) follow once it started. */
static void pipeline_inputs(struct ctx *x, const struct chat_request *r,
			    struct sbx_run *run, struct sbx_pipeline *p, char **names)
{
	p->n = r->nblocks;
	p->pol = &run->pol;
	p->files = (const char *const *)names;
	p->stdin_data = r->stdin_data;
	p->stdin_len = r->stdin_len;
	p->timeout_s = r->timeout_s > 0 && r->timeout_s < opt.timeout_s ?
		       r->timeout_s : opt.timeout_s;
	p->max_stdout = opt.max_stdout_bytes;
	p->max_stderr = opt.max_stderr_bytes;
	/* the debug pipeline keeps what crosses each edge; the relay counts
	 * and taps on the same path in every run */
	p->tap = x->face->taps;
	p->max_tap = opt.max_tap_bytes;
	p->unbuffered = r->stream;	/* python output flows as printed */
	p->client_fd = x->c.in;
	p->probe_client = 1;	/* the 200 head goes out before the run */
	p->go_at_ready = 1;	/* start_run releases the blocks once ready */
	p->sig_fd = x->c.sig_fd;
	p->keepalive_ms = (long)(opt.keepalive_s * 1000);
	p->cb.keepalive = keepalive;
	p->cb.ctx = x;
}

/* One run's parts, from the sandbox's preparation to its cleanup. */
struct run_parts {
	struct sbx_run run;
	struct sbx_pipeline p;
	char **names;		/* each block's file in the run directory */
	char *const **argv;	/* each block's interpreter */
	int prepared;		/* run was prepared (maybe in part): finish it */
	struct sbx_artifacts files;	/* /work/out once every block ended */
};

static int refuse_sandbox(struct ctx *x, int layer, const char *why)
{
	return refuse(x, REF_SANDBOX, NULL,
		    "the sandbox layer \"%s\" cannot be applied (%s); nothing ran",
		    sbx_layer_name(layer), why);
}

/* The run directory with each block's file and the bag, the pipeline's
 * inputs and each block's argv. 0, or the status of the refusal sent. */
static int prepare_run(struct ctx *x, struct chat_request *r, struct run_parts *rp)
{
	struct sbx_config cfg;
	char msg[256];
	int rc, layer;

	sandbox_config(&cfg, x->slot);
	if (x->env.name[0])
		cfg.sysroot = x->env.root;
	/* finished however it ends: a failed preparation may hold mounts */
	rp->prepared = 1;
	if (sbx_run_prepare(&rp->run, &cfg, r->nblocks, &layer, msg, sizeof msg) < 0) {
		fprintf(stderr, "codellm: %s: sandbox unavailable: %s\n", x->id, msg);
		return refuse_sandbox(x, layer, msg);
	}
	rp->names = calloc(r->nblocks, sizeof *rp->names);
	rp->argv = calloc(r->nblocks, sizeof *rp->argv);
	if (!rp->names || !rp->argv)
		goto oom;
	for (size_t i = 0; i < r->nblocks; i++) {
		struct jbuf code = {0};

		if (req_block_file(r, i, &rp->names[i], &code) < 0)
			goto oom;
		rc = code.oom ? -ENOMEM : sbx_run_add_file(&rp->run, rp->names[i],
							   code.p ? code.p : "", code.len);
		jbuf_free(&code);
		if (rc < 0)
			goto io_fail;
		rp->argv[i] = r->blocks[i].interp->argv;
	}
	if (r->bag && (rc = sbx_run_add_bag(&rp->run, r->bag, r->bag_len)) < 0)
		goto io_fail;
	for (size_t i = 0; i < r->nfiles; i++)
		if ((rc = sbx_run_add_input(&rp->run, r->files[i].name, r->files[i].data,
					    r->files[i].len)) < 0)
			goto io_fail;
	pipeline_inputs(x, r, &rp->run, &rp->p, rp->names);
	rp->p.argv = (char *const *const *)rp->argv;
	return 0;
oom:
	/* before any block started: nothing ran, a retry may find memory */
	return refuse(x, REF_OVERLOADED, NULL,
		    "the server is out of memory preparing this run; retry");
io_fail:
	return refuse(x, REF_WORKDIR, NULL,
		    "cannot write the run's files: %s", strerror(-rc));
}

/* Phase one: every block set up, nothing run. A failure here is still
 * a clean refusal; after it, code runs. */
static int start_run(struct ctx *x, struct run_parts *rp)
{
	sbx_phase_mark(SBX_PH_PREPARED);
	if (sbx_pipeline_start(&rp->p) < 0) {
		fprintf(stderr, "codellm: %s: sandbox setup failed: %s\n", x->id, rp->p.error);
		return refuse_sandbox(x, rp->p.error_layer, rp->p.error);
	}
	/* the code starts now: the head and the log lines go out while
	 * it does */
	sbx_pipeline_go(&rp->p);
	x->au.kind = AUDIT_RAN;
	if (opt.sandbox == SBX_OFF)
		fprintf(stderr, "codellm: %s: --sandbox off: blocks run without confinement\n",
			x->id);
	else if (rp->run.missing | rp->p.missing)
		say_layers(x->id, "--sandbox besteffort: running without",
			   rp->run.missing | rp->p.missing);
	return 0;
}

/* What the answer mode needs before the run. Run mode: the status is
 * fixed once code runs, so it goes out now and whitespace keeps the
 * connection alive until the object is ready. Agent mode's status (200
 * or 422) is known only at the end: no early head, no keep-alive, and
 * end of input means gone. A stream starts once every block is set up,
 * so a refusal before this point is still a plain HTTP error. A debug
 * answer is one JSON object once the run ended (as agent mode's,
 * without its stop at the output cap). */
static void begin_answer(struct ctx *x, const struct chat_request *r, struct sbx_pipeline *p,
			 struct resp_run *rr)
{
	if (!x->face->chat_modes) {
		p->cb.keepalive = NULL;
		p->probe_client = 0;
	} else if (r->stream) {
		stream_head(x, rr);
		p->cb.keepalive = stream_ping;
		if (!r->agent)
			p->cb.output = stream_output;
		else
			p->stop_at_cap = 1;
	} else if (!r->agent) {
		send_head(x, 200, NULL, -1, 1);
	} else {
		p->cb.keepalive = NULL;
		p->probe_client = 0;
		p->stop_at_cap = 1;
	}
}

/* After the run: the stream's end, or the face's answer. */
static int end_answer(struct ctx *x, const struct chat_request *r, struct run_parts *rp,
		      struct resp_run *rr)
{
	if (rp->p.r.end == SBX_END_CLIENT) {
		fprintf(stderr, "codellm: %s: client went away; run ended\n", x->id);
		return 200;
	}
	rr->res = sbx_run_result(&rp->run, &rp->p);
	audit_result(&x->au, rr->res);
	if (rr->res->end == SBX_END_SIGNAL)
		fprintf(stderr, "codellm: %s: run ended by signal %d\n", x->id,
			rr->res->end_signal);
	if (x->face->chat_modes && r->stream) {
		x->face->end(x, rr);
		return 200;
	}
	return x->face->answer(x, rr);
}

/* Every block has ended: what they left in /work/out rides in the
 * answer's codellm object, and its names, sizes and digests in the
 * journal record. */
static void collect_files(struct ctx *x, struct run_parts *rp, struct resp_run *rr)
{
	int rc = sbx_run_artifacts(&rp->run, (size_t)opt.max_artifacts,
				   (size_t)opt.max_artifact_bytes, &rp->files);

	if (rc < 0)
		fprintf(stderr, "codellm: %s: reading /work/out: %s\n", x->id, strerror(-rc));
	rr->files = &rp->files;
	audit_files_out(&x->au, &rp->files);
}

/* A run and its answer: prepare, start, begin the answer, run, end it. */
int run_request(struct ctx *x, struct chat_request *r)
{
	struct run_parts rp = {0};
	struct resp_run rr = {
		.id = x->id, .created = (long)time(NULL), .req = r, .changes = -1,
		.env_name = x->env.name[0] ? x->env.name : NULL, .env_digest = x->env.digest,
	};
	int rc, settled, status = prepare_run(x, r, &rp);

	if (status == 0)
		status = start_run(x, &rp);
	if (status == 0) {
		begin_answer(x, r, &rp.p, &rr);
		sbx_pipeline_run(&rp.p);
		sbx_phase_mark(SBX_PH_ENDED);
		collect_files(x, &rp, &rr);
		status = end_answer(x, r, &rp, &rr);
	}
	/* The run slot is free for the next run before the answer's end (a
	 * client's next request may come as soon as it has this answer):
	 * once every block process is gone, or, where every block's init
	 * reported its end (nothing of the run can run again), with those
	 * inits still on their way out (their exit tears the blocks'
	 * namespaces down), reaped after the end. */
	settled = sbx_pipeline_settled(&rp.p);
	if (!settled)
		sbx_pipeline_abort(&rp.p);
	release_slot(x);
	/* whatever the answer was, it is whole: the client need not wait
	 * for the cleanup below */
	sbx_phase_mark(SBX_PH_ANSWERED);
	conn_end_answer(&x->c);
	if (settled)
		sbx_pipeline_abort(&rp.p);
	sbx_pipeline_free(&rp.p);
	sbx_artifacts_free(&rp.files);
	if (rp.prepared && (rc = sbx_run_finish(&rp.run)) < 0)
		fprintf(stderr, "codellm: %s: removing the run directory: %s\n", x->id,
			strerror(-rc));
	for (size_t i = 0; rp.names && i < r->nblocks; i++)
		free(rp.names[i]);
	free(rp.names);
	free(rp.argv);
	return status;
}

/* A follow-up turn: running again would repeat every effect. The face
 * answers from the conversation alone (rr.res NULL): agent mode with
 * finish alone, or, once the conversation holds a finish call (or its
 * result), with that call's answer in text and finish_reason "stop"
 * (the ordinary tool loop ends on a text answer); run mode with an
 * empty content. */
int answer_without_run(struct ctx *x, struct chat_request *r)
{
	struct resp_run rr = {
		.id = x->id, .created = (long)time(NULL), .req = r, .res = NULL,
		.changes = r->agent ? 0 : -1,
		.text = r->agent ? r->finish_answer : NULL,
	};

	x->au.kind = AUDIT_NOTHING;
	if (r->stream) {
		stream_head(x, &rr);
		x->face->end(x, &rr);
		return 200;
	}
	return x->face->answer(x, &rr);
}

int run_chat(struct ctx *x, struct chat_request *r)
{
	int status;

	if (r->rerun_guard)
		return answer_without_run(x, r);
	if ((status = env_select(x, r)) <= 1 && (status = take_slot(x)) == 0)
		status = run_request(x, r);
	return status;
}
