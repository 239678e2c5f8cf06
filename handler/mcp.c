/* POST /mcp: MCP over streamable HTTP, stateless (codellm(7), MCP). One
 * JSON-RPC request per POST; a tools/call runs as the chat completion
 * it translates to (json/mcp.c): the same parse, limits, slot, sandbox
 * and journal record; its answer is the MCP face's (mcp_answer), and
 * a refusal of the handler's own during the call a JSON-RPC error
 * (mcp_refusal). The face's state is the call's message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "json/mcp.h"

static void header(const struct ctx *x, const char *name, const char **v, size_t *n)
{
	const struct http_header *h = http_find_header(&x->hr, name, NULL);

	*v = h ? h->value : NULL;
	*n = h ? h->value_len : 0;
}

/* Whether one media range of Accept is one of the two given. */
static int range_is(const char *r, size_t n, const char *a, const char *b)
{
	return (strlen(a) == n && !strncasecmp(r, a, n)) ||
	       (strlen(b) == n && !strncasecmp(r, b, n));
}

/* JSON unless Accept takes server-sent events and not JSON. */
static int wants_sse(const struct ctx *x)
{
	const char *v, *end;
	size_t n;
	int json = 0, sse = 0;

	header(x, "accept", &v, &n);
	if (!v)
		return 0;
	for (end = v + n; v < end; v++) {
		size_t len;

		v += strspn(v, " \t");
		len = strcspn(v, ",;");
		if (v + len > end)
			len = (size_t)(end - v);
		while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
		json |= range_is(v, len, "application/json", "application/*") ||
			range_is(v, len, "*/*", "*/*");
		sse |= range_is(v, len, "text/event-stream", "text/*");
		v += strcspn(v, ",");
		if (v >= end)
			break;
	}
	return sse && !json;
}

/* The JSON-RPC answer, as JSON or as one "message" event. */
static int send_body(struct ctx *x, const struct mcp_msg *m, struct jbuf *b, int status,
		     int after_run)
{
	struct jbuf ev = {0};

	if (!m || !m->sse || status != 200) {
		jbuf_puts(b, "\n");
		respond(x, status, NULL, b, after_run);
		return status;
	}
	x->ctype = "text/event-stream";
	jbuf_puts(&ev, "event: message\ndata: ");
	jbuf_append(&ev, b->p, b->len);
	jbuf_puts(&ev, "\n\n");
	respond(x, status, "Cache-Control: no-cache\r\n", &ev, after_run);
	jbuf_free(&ev);
	return status;
}

static int send_error(struct ctx *x, const struct mcp_msg *m, const struct mcp_error *e)
{
	struct jbuf b = {0};
	int status;

	mcp_error_body(&b, m->id, e);
	status = send_body(x, m, &b, e->http_status, 0);
	jbuf_free(&b);
	return status;
}

/* A call refused before anything ran: a tool error, not a JSON-RPC one,
 * so the model reads why. */
static int send_refused(struct ctx *x, const struct mcp_msg *m, const char *code,
			const char *why)
{
	struct jbuf b = {0};
	int status;

	fprintf(stderr, "codellm: %s: tools/call refused (%s)\n", x->id, code);
	mcp_tool_refused(&b, m, code, why);
	status = send_body(x, m, &b, 200, 0);
	jbuf_free(&b);
	return status;
}

/* After a tools/call's run: the tool's result. */
static int mcp_answer(struct ctx *x, struct resp_run *rr)
{
	const struct mcp_msg *m = x->face_state;
	struct jbuf b = {0};
	int status = 200;

	mcp_tool_result(&b, m, rr);
	if (b.oom)
		status = refuse(x, REF_ANSWER_OOM, "x-should-retry: false\r\n",
				"the answer did not fit in memory; lower --max-artifact-bytes");
	else
		send_body(x, m, &b, 200, 1);
	jbuf_free(&b);
	return status;
}

/* A refusal of the handler's own (busy, sandbox) during a tools/call:
 * a JSON-RPC error with the refusal's status and code as its data. */
static void mcp_refusal(struct ctx *x, struct jbuf *b, const char *msg, int status,
			const char *code)
{
	const struct mcp_msg *m = x->face_state;

	mcp_server_error(b, m->id, msg, status, code);
}

static const struct face mcp_face = { .answer = mcp_answer, .refusal = mcp_refusal };

/* tools/call: the chat request it stands for, parsed as chat's; then a
 * slot and a run. */
static int call_tool(struct ctx *x, struct mcp_msg *m)
{
	struct chat_request r;
	struct req_error re;
	struct mcp_error e;
	char *body = NULL, why[512];
	int rc = mcp_tool_request(m, &x->reg, &body, why, sizeof why, &e), status;

	if (rc < 0)
		return send_error(x, m, &e);
	if (rc > 0)
		return send_refused(x, m, "invalid_arguments", why);
	rc = req_parse(body, strlen(body), &x->reg, limits(), &r, &re);
	free(body);
	if (rc < 0 && re.status == 503) {
		e = (struct mcp_error){ .http_status = 503, .code = MCP_INTERNAL_ERROR };
		snprintf(e.message, sizeof e.message, "%s", re.message);
		return send_error(x, m, &e);
	}
	if (rc < 0) {
		if (re.code && !strcmp(re.code, "execution_disabled"))
			fprintf(stderr, "codellm: %s: code execution is disabled: "
				"--allowed-programs is empty\n", x->id);
		return send_refused(x, m, re.code ? re.code : "invalid_request", re.message);
	}
	audit_request(&x->au, &r, "run");
	x->face = &mcp_face;
	x->face_state = m;
	status = take_slot(x);
	if (status == 0)
		status = run_request(x, &r);
	req_free(&r);
	return status;
}

int route_mcp(struct ctx *x)
{
	struct mcp_headers h;
	struct mcp_msg m;
	struct mcp_error e;
	struct jbuf b = {0};
	int status;

	header(x, "mcp-protocol-version", &h.version, &h.version_len);
	header(x, "mcp-method", &h.method, &h.method_len);
	header(x, "mcp-name", &h.name, &h.name_len);
	if (mcp_parse(x->body, x->body_len, &h, &m, &e) < 0) {
		status = send_error(x, &m, &e);
	} else if (m.sse = wants_sse(x), m.notification) {
		/* accepted, nothing to answer */
		x->au.kind = AUDIT_NOTHING;
		send_head(x, 202, NULL, 0, 0);
		status = 202;
	} else if (!strcmp(m.method, "tools/call")) {
		status = call_tool(x, &m);
	} else if (mcp_answer_method(&b, &m, &x->reg, CODELLM_VERSION, &e) < 0) {
		status = send_error(x, &m, &e);
	} else {
		x->au.kind = AUDIT_NOTHING;
		status = send_body(x, &m, &b, 200, 0);
	}
	x->face = NULL;
	x->face_state = NULL;
	jbuf_free(&b);
	mcp_free(&m);
	return status;
}

