/* POST /v1/chat/completions: the chat face. Its body is the chat
 * request json/request.c parses; its answers are json/response.c's:
 * run mode's content after the early head, agent mode's tool calls
 * (or 422 execution_error), a stream's chunks framed by
 * http_sse_send, and the answers of a follow-up turn that runs
 * nothing. */
#include <stdio.h>
#include <string.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "http/reply.h"
#include "json/agent.h"

static int sse_send(struct ctx *x, struct jbuf *b)
{
	int rc = http_sse_send(&x->c, b->p, b->len, write_deadline(x));

	b->len = 0;
	x->st_last = conn_now_ms();
	return rc;
}

static void chat_begin(struct ctx *x, const struct resp_run *rr)
{
	struct jbuf ev = {0};

	resp_sse_role(&ev, rr);
	sse_send(x, &ev);
	jbuf_free(&ev);
}

static int chat_text(struct ctx *x, const char *data, size_t len)
{
	struct jbuf ev = {0};
	int rc;

	resp_sse_content(&ev, x->st_rr, data, len);
	rc = sse_send(x, &ev);
	jbuf_free(&ev);
	return rc;
}

/* The end of a stream: run mode's rest and final chunk, or agent mode's
 * tool calls (or its execution_error event, with no tool call before
 * it); usage when asked; [DONE]. */
static void chat_end(struct ctx *x, struct resp_run *rr)
{
	const struct chat_request *r = rr->req;
	const struct sbx_result *p = rr->res;
	struct jbuf ev = {0};
	struct agent_output o = AGENT_OUTPUT_NONE;

	if (!r->agent || rr->text) {
		/* a follow-up turn after finish: its answer, in text */
		if (rr->text && *rr->text)
			resp_sse_content(&ev, rr, rr->text, strlen(rr->text));
		if (x->st_npend)
			resp_sse_content(&ev, rr, x->st_pend, x->st_npend);
		resp_sse_final(&ev, rr, p && (p->out_truncated || p->end != SBX_END_NORMAL) ?
			       "length" : "stop");
	} else if (p) {
		char msg[2048];
		const char *code = agent_outcome(p, r, &o, msg, sizeof msg);

		if (code) {
			fprintf(stderr, "codellm: %s: agent run refused (%s), in the stream\n",
				x->id, code);
			resp_sse_error(&ev, code, "execution_error", msg, rr);
			sse_send(x, &ev);
			goto out;
		}
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		resp_sse_tool_calls(&ev, rr, &o);
		resp_sse_final(&ev, rr, "tool_calls");
	} else {
		/* a follow-up turn: finish alone */
		resp_sse_tool_calls(&ev, rr, &o);
		resp_sse_final(&ev, rr, "tool_calls");
	}
	if (r->include_usage)
		resp_sse_usage(&ev, rr);
	resp_sse_done(&ev);
	sse_send(x, &ev);
out:
	jbuf_free(&ev);
	agent_output_free(&o);
}

/* Agent mode after the run: tool calls, or 422 execution_error with the
 * block, its stderr's tail and the codellm object. Never 5xx: the SDKs
 * retry those, and a retry runs the code again. */
static int agent_answer(struct ctx *x, struct resp_run *rr)
{
	struct jbuf b = {0}, calls = {0};
	struct agent_output o = AGENT_OUTPUT_NONE;
	char msg[2048];
	const char *code = agent_outcome(rr->res, rr->req, &o, msg, sizeof msg);

	if (!code) {
		resp_tool_calls(&calls, &o, rr->id);
		if (calls.oom) {
			code = "invalid_changes";
			agent_refusal(rr->res, "out of memory building the tool calls", msg,
				      sizeof msg);
		}
	}
	if (code) {
		fprintf(stderr, "codellm: %s: agent run refused (%s)\n", x->id, code);
		resp_execution_error(&b, code, msg, rr);
		respond(x, 422, NULL, &b, 1);
	} else {
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		resp_agent_completion(&b, rr, calls.p, calls.len);
		respond(x, 200, NULL, &b, 1);
	}
	jbuf_free(&b);
	jbuf_free(&calls);
	agent_output_free(&o);
	return code ? 422 : 200;
}

/* A follow-up turn (nothing ran): finish alone, or the conversation's
 * answer in text, or run mode's empty content; one whole answer. */
static int answer_no_run(struct ctx *x, struct resp_run *rr)
{
	struct jbuf b = {0}, calls = {0};

	if (rr->req->agent && !rr->text) {
		agent_finish_only(&calls, x->id);
		resp_agent_completion(&b, rr, calls.p, calls.len);
		jbuf_free(&calls);
	} else {
		resp_completion(&b, rr);
	}
	respond(x, 200, NULL, &b, 0);
	jbuf_free(&b);
	return 200;
}

/* Not a stream: agent mode's answer, or run mode's completion after
 * the head that went out before the run. */
static int chat_answer(struct ctx *x, struct resp_run *rr)
{
	struct jbuf b = {0};

	if (!rr->res)
		return answer_no_run(x, rr);
	if (rr->req->agent)
		return agent_answer(x, rr);
	resp_completion(&b, rr);
	jbuf_puts(&b, "\n");
	conn_write(&x->c, b.p, b.len, write_deadline(x));
	jbuf_free(&b);
	return 200;
}

static const struct face chat_face = {
	.chat_modes = 1,
	.begin = chat_begin,
	.text = chat_text,
	.end = chat_end,
	.answer = chat_answer,
};

int route_chat(struct ctx *x)
{
	struct chat_request r;
	struct req_error e;
	int status;

	if (req_parse(x->body, x->body_len, &x->reg, limits(), &r, &e) < 0)
		return refuse_request(x, &e);
	audit_request(&x->au, &r, r.agent ? "agent" : "run");
	x->face = &chat_face;
	status = run_chat(x, &r);
	req_free(&r);
	return status;
}
