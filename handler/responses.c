/* POST /v1/responses (stateless): the Responses face. The body is
 * translated into chat's (json/responses.c), run exactly as a chat
 * request is (run_chat), answered as a "response" object or its typed
 * stream events; every other /v1/responses route a 400: nothing is
 * stored. The face's state is the translation's (struct rsp_face). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "http/reply.h"
#include "json/agent.h"
#include "json/responses.h"

/* GET, DELETE /v1/responses/{id}, …/cancel, …/input_items: there is
 * nothing stored to find. */
int route_responses_stateless(struct ctx *x)
{
	struct req_error e = {
		.status = 400, .type = "invalid_request_error", .code = "stateless_server",
	};

	x->au.kind = AUDIT_NOTHING;
	snprintf(e.message, sizeof e.message,
		 "%.*s %.200s: this server keeps no state: nothing is stored, so there is no "
		 "response to get, delete, cancel or list; every POST /v1/responses answers "
		 "in full and carries the whole conversation in input",
		 (int)x->hr.method_len, x->hr.method, x->path_log);
	return fail_req(x, &e);
}

static int send_events(struct ctx *x, struct jbuf *b)
{
	int rc = b->oom ? -1 : http_sse_typed(&x->c, b->p, b->len, write_deadline(x));

	b->len = 0;
	x->st_last = conn_now_ms();
	return rc;
}

static void rsp_begin(struct ctx *x, const struct resp_run *rr)
{
	struct jbuf ev = {0};
	const struct chat_request *r = rr->req;

	rsp_sse_begin(&ev, (struct rsp_face *)x->face_state, rr, !r->agent || rr->text);
	send_events(x, &ev);
	jbuf_free(&ev);
}

static int rsp_text(struct ctx *x, const char *data, size_t len)
{
	struct jbuf ev = {0};
	int rc;

	rsp_sse_text(&ev, (struct rsp_face *)x->face_state, x->st_rr, data, len);
	rc = send_events(x, &ev);
	jbuf_free(&ev);
	return rc;
}

/* After the run (or none): run mode's (or a finished conversation's)
 * last text, or agent mode's function calls, or response.failed. */
static void rsp_end(struct ctx *x, struct resp_run *rr)
{
	const struct chat_request *r = rr->req;
	const struct sbx_result *p = rr->res;
	struct agent_output o = AGENT_OUTPUT_NONE;
	struct rsp_out out = { .calls = &o };
	struct jbuf ev = {0};
	char msg[2048];

	if (!r->agent || rr->text) {
		out.calls = NULL;
		out.text = p ? p->out.p : rr->text;
		out.len = p ? p->out.len : strlen(rr->text ? rr->text : "");
		if (rr->text && *rr->text)
			rsp_sse_text(&ev, (struct rsp_face *)x->face_state, rr, rr->text, strlen(rr->text));
		if (x->st_npend)
			rsp_sse_text(&ev, (struct rsp_face *)x->face_state, rr, x->st_pend, x->st_npend);
		rsp_run_status(p, &out);
		rsp_sse_text_end(&ev, (struct rsp_face *)x->face_state, rr, &out);
	} else if (p && (out.err_code = agent_outcome(p, r, &o, msg, sizeof msg))) {
		fprintf(stderr, "codellm: %s: agent run refused (%s), in the stream\n", x->id,
			out.err_code);
		out.status = "failed";
		out.err_msg = msg;
	} else {
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		rsp_sse_calls(&ev, (struct rsp_face *)x->face_state, rr, &o);
	}
	if (!out.status)
		out.status = "completed";
	rsp_sse_end(&ev, (struct rsp_face *)x->face_state, rr, &out);
	send_events(x, &ev);
	jbuf_free(&ev);
	agent_output_free(&o);
}

/* Run mode, not streamed: the head went out before the run. */
static void answer_text(struct ctx *x, const struct resp_run *rr)
{
	struct rsp_out out = {
		.text = rr->res ? rr->res->out.p : rr->text,
		.len = rr->res ? rr->res->out.len : strlen(rr->text ? rr->text : ""),
	};
	struct jbuf b = {0};

	rsp_run_status(rr->res, &out);
	rsp_response(&b, (struct rsp_face *)x->face_state, rr, &out);
	jbuf_puts(&b, "\n");
	conn_write(&x->c, b.p, b.len, write_deadline(x));
	jbuf_free(&b);
}

/* Agent mode, not streamed: the function calls, or chat's 422
 * execution_error. Never 5xx once code ran. */
static int agent_answer(struct ctx *x, struct resp_run *rr)
{
	struct agent_output o = AGENT_OUTPUT_NONE;
	struct rsp_out out = { .status = "completed", .calls = &o };
	struct jbuf b = {0};
	char msg[2048];
	const char *code = rr->res ? agent_outcome(rr->res, rr->req, &o, msg, sizeof msg) : NULL;
	int status = code ? 422 : 200;

	if (code) {
		fprintf(stderr, "codellm: %s: agent run refused (%s)\n", x->id, code);
		resp_execution_error(&b, code, msg, rr);
	} else {
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		rsp_response(&b, (struct rsp_face *)x->face_state, rr, &out);
	}
	respond(x, status, NULL, &b, rr->res ? 1 : 0);
	jbuf_free(&b);
	agent_output_free(&o);
	return status;
}

/* Not a stream: agent mode's function calls (or 422), or the text (the
 * head of a run's answer went out before the run; a follow-up turn's
 * goes out now). */
static int rsp_answer(struct ctx *x, struct resp_run *rr)
{
	if (rr->req->agent && !rr->text)
		return agent_answer(x, rr);
	if (!rr->res)
		send_head(x, 200, NULL, -1, 0);
	answer_text(x, rr);
	return 200;
}

static const struct face responses_face = {
	.chat_modes = 1,
	.begin = rsp_begin,
	.text = rsp_text,
	.end = rsp_end,
	.answer = rsp_answer,
};

int route_responses(struct ctx *x)
{
	struct rsp_face f;
	struct chat_request r;
	struct req_error e;
	int status;

	if (rsp_translate(x->body, x->body_len, &f, &e) < 0)
		return refuse_request(x, &e);
	if (req_parse(f.chat, f.chat_len, &x->reg, limits(), &r, &e) < 0) {
		rsp_fix_error(&f, &e);
		rsp_face_free(&f);
		return refuse_request(x, &e);
	}
	/* the chat body is read: only the map and the metadata stay */
	free(f.chat);
	f.chat = NULL;
	audit_request(&x->au, &r, r.agent ? "agent" : "run");
	x->face = &responses_face;
	x->face_state = &f;
	status = run_chat(x, &r);
	x->face_state = NULL;
	req_free(&r);
	rsp_face_free(&f);
	return status;
}
