#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/target.h"
#include "json/debug.h"
#include "json/response.h"

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s ? s : "", s ? strlen(s) : 0);
}

void dbg_blocks(struct jbuf *b, const struct chat_request *r)
{
	jbuf_puts(b, "{\"object\":\"codellm.debug.blocks\",\"blocks\":[");
	for (size_t i = 0; i < r->nblocks; i++) {
		const struct req_block *k = &r->blocks[i];

		jbuf_printf(b, "%s{\"index\":%zu,\"label\":", i ? "," : "", i);
		str(b, k->label);
		jbuf_puts(b, ",\"lang\":");
		str(b, k->interp->name);
		jbuf_puts(b, ",\"program\":");
		str(b, k->interp->argv[0]);
		jbuf_printf(b, ",\"allowed\":%s,\"start_line\":%u,\"end_line\":%u}",
			    k->interp->allowed ? "true" : "false", k->start_line,
			    k->end_line);
	}
	jbuf_puts(b, "],");
	resp_skipped_fences(b, r);
	jbuf_puts(b, "}");
}

/* How block i did, as a sentence; NULL when it did fine. */
static const char *block_error(const struct dbg_run *d, size_t i, char *msg,
			       size_t msglen)
{
	const struct sbx_result *res = d->res;
	const struct sbx_block_result *br = &res->res[i];
	int last = i + 1 == res->n;

	if (!br->started)
		snprintf(msg, msglen, "the block did not start");
	else if (br->killed && res->end == SBX_END_TIMEOUT)
		snprintf(msg, msglen, "timed out after %g s (--timeout)", res->timeout_s);
	else if (br->killed && res->end == SBX_END_SIGNAL)
		snprintf(msg, msglen, "ended: the handler got signal %d", res->end_signal);
	else if (br->signal)
		snprintf(msg, msglen, "killed by signal %d (%s)", br->signal,
			 sigabbrev_np(br->signal) ? sigabbrev_np(br->signal) : "?");
	else if (br->exit_code)
		snprintf(msg, msglen, "exited with status %d", br->exit_code);
	else if (last && res->out_truncated)
		snprintf(msg, msglen, "stdout passed --max-stdout-bytes (%zu bytes kept of %llu)",
			 res->max_stdout, (unsigned long long)res->out_bytes);
	else
		return NULL;
	return msg;
}

static void err_field(struct jbuf *b, const char *e)
{
	jbuf_puts(b, ",\"error\":");
	if (e)
		str(b, e);
	else
		jbuf_puts(b, "null");
}

/* The fields a block and a run share. */
static void outcome(struct jbuf *b, const struct dbg_run *d, size_t i,
		    int exit_code, int sig, long ms, const char *e)
{
	const struct sbx_result *res = d->res;

	jbuf_printf(b, ",\"exit_code\":%d,\"signal\":%d,\"ok\":%s,\"timed_out\":%s,"
		    "\"duration_ms\":%ld",
		    exit_code, sig, e ? "false" : "true",
		    res->end == SBX_END_TIMEOUT && (i == (size_t)-1 || res->res[i].killed) ?
		    "true" : "false", ms);
	err_field(b, e);
}

static void last_stdout(struct jbuf *b, const struct sbx_result *res)
{
	jbuf_puts(b, ",\"stdout\":");
	jstr_escape(b, res->out.p ? res->out.p : "", res->out.len);
	jbuf_printf(b, ",\"stdout_bytes\":%llu,\"stdout_truncated\":%s",
		    (unsigned long long)res->out_bytes, res->out_truncated ? "true" : "false");
}

void dbg_block_result(struct jbuf *b, const struct dbg_run *d)
{
	const struct sbx_result *res = d->res;
	const struct req_block *k = &d->req->blocks[0];
	const struct sbx_block_result *br = &res->res[0];
	char msg[256];

	jbuf_puts(b, "{\"object\":\"codellm.debug.block\",\"id\":");
	str(b, d->id);
	jbuf_printf(b, ",\"index\":%zu,\"label\":", d->index);
	str(b, k->label);
	jbuf_puts(b, ",\"lang\":");
	str(b, k->interp->name);
	last_stdout(b, res);
	jbuf_puts(b, ",\"stderr\":");
	jstr_escape(b, br->err.p ? br->err.p : "", br->err.len);
	jbuf_printf(b, ",\"stderr_bytes\":%llu", (unsigned long long)br->err_bytes);
	outcome(b, d, 0, res->exit_code, br->signal,
		br->duration_ms, block_error(d, 0, msg, sizeof msg));
	jbuf_puts(b, ",\"sandbox\":");
	resp_sandbox(b, &res->layers);
	jbuf_puts(b, "}");
}

void dbg_pipeline_result(struct jbuf *b, const struct dbg_run *d)
{
	const struct sbx_result *res = d->res;
	const char *first = NULL;
	char msg[256], firstmsg[300];

	jbuf_puts(b, "{\"object\":\"codellm.debug.pipeline\",\"id\":");
	str(b, d->id);
	last_stdout(b, res);
	/* the run failed where a block failed first */
	for (size_t i = 0; i < res->n && !first; i++)
		if (block_error(d, i, msg, sizeof msg)) {
			snprintf(firstmsg, sizeof firstmsg, "block %zu: %s", i, msg);
			first = firstmsg;
		}
	outcome(b, d, (size_t)-1, res->exit_code, 0, res->duration_ms, first);
	jbuf_puts(b, ",\"blocks\":[");
	for (size_t i = 0; i < res->n; i++) {
		const struct req_block *k = &d->req->blocks[i];
		const struct sbx_block_result *br = &res->res[i];

		jbuf_printf(b, "%s{\"index\":%zu,\"label\":", i ? "," : "", i);
		str(b, k->label);
		jbuf_puts(b, ",\"lang\":");
		str(b, k->interp->name);
		outcome(b, d, i, br->exit_code, br->signal, br->duration_ms,
			block_error(d, i, msg, sizeof msg));
		jbuf_puts(b, ",\"stderr\":");
		jstr_escape(b, br->err.p ? br->err.p : "", br->err.len);
		jbuf_printf(b, ",\"stderr_bytes\":%llu,\"stdout_bytes\":%llu}",
			    (unsigned long long)br->err_bytes,
			    (unsigned long long)br->out_bytes);
	}
	jbuf_puts(b, "],\"edges\":[");
	for (size_t i = 0; i + 1 < res->n; i++) {
		const struct sbx_tap *t = &res->taps[i];
		const char *data = t->data.p ? t->data.p : "";

		jbuf_printf(b, "%s{\"from\":%zu,\"to\":%zu,\"bytes\":%llu,\"data_b64\":\"",
			    i ? "," : "", i, i + 1, (unsigned long long)t->bytes);
		dbg_base64(b, data, t->data.len);
		jbuf_puts(b, "\",\"text\":");
		jstr_escape(b, data, t->data.len);
		jbuf_printf(b, ",\"truncated\":%s}",
			    t->bytes > t->data.len ? "true" : "false");
	}
	jbuf_printf(b, "],\"max_tap_bytes\":%zu,\"sandbox\":", res->max_tap);
	resp_sandbox(b, &res->layers);
	jbuf_puts(b, "}");
}

void dbg_base64(struct jbuf *b, const void *data, size_t n)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = data;
	char out[4096];
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;

		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		out[k++] = abc[v >> 18 & 63];
		out[k++] = abc[v >> 12 & 63];
		out[k++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? abc[v & 63] : '=';
		if (k + 4 > sizeof out) {
			jbuf_append(b, out, k);
			k = 0;
		}
	}
	jbuf_append(b, out, k);
}

int dbg_query_param(const char *target, size_t n, const char *name,
		    char **ret, size_t *ret_len)
{
	return http_query_param(target, n, name, ret, ret_len);
}
