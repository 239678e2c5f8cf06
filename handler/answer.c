/* The answer's head and the refusals: what every route body, face and
 * the entry say to the client before or instead of an answer of their
 * own. The OpenAI error object, or the face's own words for a refusal
 * (struct face's refusal: MCP's JSON-RPC error). Calls only down: the
 * entry and its parts call these, never the other way. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "http/reply.h"

long write_deadline(struct ctx *x)
{
	return conn_now_ms() + (long)(opt.body_timeout_s * 1000);
}

/* Response head; Content-Length when the body is known, otherwise the
 * body runs to the close (run mode's early headers). after_run: 1 says
 * x-should-retry: false (code ran, or retrying cannot help), 2 says
 * x-should-retry: true (the server was short of memory). */
void send_head(struct ctx *x, int status, const char *extra,
		      long content_length, int after_run)
{
	const struct http_reply r = {
		.status = status, .server = "codellm/" CODELLM_VERSION,
		.content_type = x->ctype, .request_id = x->id, .retry = after_run,
		.extra = extra, .content_length = content_length,
	};

	http_reply_head(&x->c, &r, write_deadline(x));
	if (!x->au.status)
		x->au.status = status;
}

void respond(struct ctx *x, int status, const char *extra,
		    const struct jbuf *body, int after_run)
{
	send_head(x, status, extra, (long)body->len, after_run);
	conn_write(&x->c, body->p, body->len, write_deadline(x));
}

static const struct { int status; const char *type, *code; } refusals[] = {
	[REF_BAD_REQUEST] = { 400, "invalid_request_error", "bad_request" },
	[REF_INCOMPLETE] = { 400, "invalid_request_error", "incomplete_request" },
	[REF_TIMEOUT] = { 408, "invalid_request_error", "request_timeout" },
	[REF_LENGTH_REQUIRED] = { 411, "invalid_request_error", "length_required" },
	[REF_TOO_LARGE] = { 413, "invalid_request_error", "request_too_large" },
	[REF_HEADERS_TOO_LARGE] = { 431, "invalid_request_error", "headers_too_large" },
	[REF_TE_UNSUPPORTED] = { 501, "invalid_request_error", "unsupported_transfer_coding" },
	[REF_BAD_KEY] = { 401, "invalid_request_error", "invalid_api_key" },
	[REF_CROSS_ORIGIN] = { 403, "permission_error", "cross_origin_request" },
	[REF_CROSS_SITE] = { 403, "permission_error", "cross_site_request" },
	[REF_HOST] = { 403, "permission_error", "host_not_allowed" },
	[REF_LOOPBACK] = { 403, "permission_error", "loopback_only" },
	[REF_NOT_FOUND] = { 404, "invalid_request_error", "not_found" },
	[REF_MODEL_NOT_FOUND] = { 404, "invalid_request_error", "model_not_found" },
	[REF_METHOD] = { 405, "invalid_request_error", "method_not_allowed" },
	[REF_MEDIA_TYPE] = { 415, "invalid_request_error", "unsupported_media_type" },
	[REF_SLOTS_BUSY] = { 429, "rate_limit_error", "rate_limit_exceeded" },
	[REF_NO_KEY] = { 503, "server_error", "api_key_not_configured" },
	[REF_MISCONFIGURED] = { 503, "server_error", "server_misconfigured" },
	[REF_SANDBOX] = { 503, "server_error", "sandbox_unavailable" },
	[REF_ENVIRONMENT] = { 503, "server_error", "environment_unavailable" },
	[REF_ENV_LANGUAGE] = { 400, "invalid_request_error", "language_not_available" },
	[REF_WORKDIR] = { 503, "server_error", "workdir_unavailable" },
	[REF_OVERLOADED] = { 503, "server_error", "server_overloaded" },
	[REF_ANSWER_OOM] = { 500, "server_error", "out_of_memory" },
};

/* What a refusal says of retrying (send_head's after_run): every 501
 * and 503 says x-should-retry: false (a retry cannot help), but
 * server_overloaded, which says true (the server was short of memory;
 * nothing ran); other refusals leave it to the client. */
static int retry_rule(int status, const char *code)
{
	if (code && !strcmp(code, "server_overloaded"))
		return 2;
	return status == 503 || status == 501;
}

/* A refusal: the OpenAI error object. */
__attribute__((format(printf, 4, 5)))
int refuse(struct ctx *x, enum refusal why, const char *extra, const char *fmt, ...)
{
	const int status = refusals[why].status;
	struct jbuf b = {0};
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (x->face && x->face->refusal)
		x->face->refusal(x, &b, msg, status, refusals[why].code);
	else
		resp_error(&b, msg, refusals[why].type, NULL, refusals[why].code);
	respond(x, status, extra, &b, retry_rule(status, refusals[why].code));
	jbuf_free(&b);
	return status;
}

int fail_req(struct ctx *x, const struct req_error *e)
{
	struct jbuf b = {0};

	resp_error(&b, e->message, e->type, e->param, e->code);
	respond(x, e->status, NULL, &b, retry_rule(e->status, e->code));
	jbuf_free(&b);
	return e->status;
}

/* A request its parser refused: the error object, and the journal
 * line an operator needs when the refusal is the server's setting. */
int refuse_request(struct ctx *x, const struct req_error *e)
{
	if (e->status == 403 && e->code && !strcmp(e->code, "execution_disabled"))
		fprintf(stderr, "codellm: %s: code execution is disabled: "
			"--allowed-programs is empty\n", x->id);
	return fail_req(x, e);
}

int method_is(const struct ctx *x, const char *m)
{
	return x->hr.method_len == strlen(m) && !memcmp(x->hr.method, m, x->hr.method_len);
}
