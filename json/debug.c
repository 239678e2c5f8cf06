#include <cJSON.h>
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/debug.h"
#include "json/response.h"

/* A signal's name without "SIG" (glibc's sigabbrev_np; musl has none). */
static const char *sig_abbrev(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "HUP", [SIGINT] = "INT", [SIGQUIT] = "QUIT",
		[SIGILL] = "ILL", [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",
		[SIGBUS] = "BUS", [SIGFPE] = "FPE", [SIGKILL] = "KILL",
		[SIGUSR1] = "USR1", [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
		[SIGPIPE] = "PIPE", [SIGALRM] = "ALRM", [SIGTERM] = "TERM",
		[SIGSTKFLT] = "STKFLT", [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",
		[SIGSTOP] = "STOP", [SIGTSTP] = "TSTP", [SIGTTIN] = "TTIN",
		[SIGTTOU] = "TTOU", [SIGURG] = "URG", [SIGXCPU] = "XCPU",
		[SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF",
		[SIGWINCH] = "WINCH", [SIGIO] = "IO", [SIGPWR] = "PWR",
		[SIGSYS] = "SYS",
	};

	if (sig > 0 && (size_t)sig < sizeof names / sizeof names[0] && names[sig])
		return names[sig];
	return "?";
}

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
			 sig_abbrev(br->signal));
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
	jbuf_puts(b, ",\"usage\":");
	resp_usage(b, &br->usage, 0);
	jbuf_puts(b, ",\"sandbox\":");
	resp_sandbox(b, &res->layers);
	if (d->files)
		resp_files(b, d->files, 1);
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
	jbuf_puts(b, ",\"usage\":");
	resp_usage(b, &res->usage, 1);
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
		jbuf_puts(b, ",\"usage\":");
		resp_usage(b, &br->usage, 0);
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
		jstr_base64(b, data, t->data.len);
		jbuf_puts(b, "\",\"text\":");
		jstr_escape(b, data, t->data.len);
		jbuf_printf(b, ",\"truncated\":%s}",
			    t->bytes > t->data.len ? "true" : "false");
	}
	jbuf_printf(b, "],\"max_tap_bytes\":%zu,\"sandbox\":", res->max_tap);
	resp_sandbox(b, &res->layers);
	if (d->files)
		resp_files(b, d->files, 1);
	jbuf_puts(b, "}");
}


/* ---- the requests: a debug route's JSON body or query ---- */

/* A string member's text, taken out of the tree (NULL when the member
 * is not a string). */
static char *take_string(cJSON *v, size_t *ret_len)
{
	char *p = cJSON_IsString(v) ? v->valuestring : NULL;

	if (p) {
		v->valuestring = NULL;
		*ret_len = strlen(p);
	}
	return p;
}

/* The members' types: "body" a string, "stdin" a string or null,
 * "block" an index for run-block and absent for run-pipeline. */
static int check_members(const cJSON *root, enum req_debug what, size_t *ret_block,
			 struct req_error *err)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "stdin");
	const cJSON *blk = cJSON_GetObjectItemCaseSensitive(root, "block");

	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "body")))
		return req_fail(err, 400, "invalid_value", "body",
				"\"body\" must be a string: the markdown, inline");
	if (in && !cJSON_IsNull(in) && !cJSON_IsString(in))
		return req_fail(err, 400, "invalid_value", "stdin", "\"stdin\" must be a string");
	if (what == REQ_DEBUG_BLOCK) {
		double v = cJSON_IsNumber(blk) ? blk->valuedouble : -1;

		if (!cJSON_IsNumber(blk) || v < 0 || v != floor(v) || v > 1e9)
			return req_fail(err, 400, "invalid_value", "block",
					"\"block\" must be a block's index: an integer from 0");
		*ret_block = (size_t)v;
	} else if (blk && what == REQ_DEBUG_PIPELINE) {
		return req_fail(err, 400, "invalid_value", "block",
				"\"block\" is for /debug/run-block; the pipeline runs every block");
	}
	return 0;
}

/* What a run needs, taken out of the tree: the stdin and the bag (a
 * string is the bag's text, as a fleet_input message is; another value
 * its compact JSON). */
static int take_inputs(cJSON *root, struct jbuf *in, char **bag, size_t *bag_len,
		       struct req_error *err)
{
	cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "input");

	in->p = take_string(cJSON_GetObjectItemCaseSensitive(root, "stdin"), &in->len);
	*bag = take_string(b, bag_len);
	if (!*bag && b && !cJSON_IsNull(b)) {
		*bag = cJSON_PrintUnformatted(b);
		if (!*bag)
			return req_oom(err);
		*bag_len = strlen(*bag);
	}
	return 0;
}

/* A body that will run: one runnable block at least, the asked block
 * there, and what would run allowed. */
static int check_runnable(const struct chat_request *r, const struct registry *reg,
			  enum req_debug what, size_t block, struct req_error *err)
{
	int one = what == REQ_DEBUG_BLOCK;

	if (r->nblocks == 0)
		return req_fail(err, 400, "no_runnable_block", "body",
				"the body has no fenced block whose label names an interpreter");
	if (one && block >= r->nblocks)
		return req_fail(err, 400, "invalid_value", "block",
				"block %zu does not exist: the body has %zu runnable block%s (0..%zu)",
				block, r->nblocks, r->nblocks == 1 ? "" : "s", r->nblocks - 1);
	return req_check_allowed(r, reg, one ? block : 0, one ? block + 1 : r->nblocks,
				 "body", err);
}

/* run-block: a pipeline of the one block */
static void narrow(struct chat_request *r, size_t block)
{
	for (size_t i = 0; i < r->nblocks; i++)
		if (i != block) {
			free(r->blocks[i].label);
			free(r->blocks[i].code);
		}
	r->blocks[0] = r->blocks[block];
	r->nblocks = 1;
}

int dbg_parse(const char *body, size_t len, const struct registry *reg,
		    const struct req_limits *lim, enum req_debug what,
		    struct chat_request *r, size_t *ret_block, struct req_error *err)
{
	struct jbuf in = {0};
	struct chat_request files = {0};
	char *md = NULL, *bag = NULL;
	size_t md_len = 0, bag_len = 0;
	cJSON *root;
	int rc = -1;

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (!(root = req_parse_object(body, len, err)))
		return -1;
	if (check_members(root, what, ret_block, err) < 0 ||
	    (what != REQ_DEBUG_LIST && take_inputs(root, &in, &bag, &bag_len, err) < 0) ||
	    (what != REQ_DEBUG_LIST &&
	     req_take_files(cJSON_GetObjectItemCaseSensitive(root, "files"), lim, &files, err) < 0))
		goto out;
	/* the tree let go before the blocks are copied, so the two never
	 * add up */
	md = take_string(cJSON_GetObjectItemCaseSensitive(root, "body"), &md_len);
	cJSON_Delete(root);
	root = NULL;
	rc = req_take_markdown(md, md_len, reg, lim, r, err);
	md = NULL;
	if (rc < 0 || what == REQ_DEBUG_LIST)
		goto out;	/* the list: only the blocks, nothing will run */
	if ((rc = check_runnable(r, reg, what, *ret_block, err)) < 0) {
		req_free(r);
		goto out;
	}
	/* request.h: stdin is NULL when empty */
	if (in.len) {
		r->stdin_data = in.p;
		r->stdin_len = in.len;
		in.p = NULL;
	}
	r->bag = bag;
	r->bag_len = bag_len;
	bag = NULL;
	r->files = files.files;
	r->nfiles = files.nfiles;
	r->files_bytes = files.files_bytes;
	files.files = NULL;
	files.nfiles = 0;
	if (what == REQ_DEBUG_BLOCK)
		narrow(r, *ret_block);
out:
	free(md);
	free(in.p);
	free(bag);
	req_free(&files);
	cJSON_Delete(root);
	return rc;
}

int dbg_parse_query(int qrc, const char *md, size_t len, const struct registry *reg,
			  const struct req_limits *lim, struct chat_request *r,
			  struct req_error *err)
{
	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (qrc == -3)
		return req_oom(err);
	if (qrc == -2)
		return req_fail(err, 400, "invalid_value", "body",
				"the body query parameter is not valid form encoding");
	if (qrc < 0 || !md)
		return req_fail(err, 400, "invalid_value", "body",
				"GET /debug/blocks needs ?body=<markdown, form-encoded>; "
				"or POST {\"body\": …}");
	/* the markdown is text: a NUL (%00) or invalid UTF-8 is refused as
	 * in a JSON body */
	if (memchr(md, '\0', len) || !jstr_utf8_valid(md, len))
		return req_fail(err, 400, "invalid_value", "body",
				"the body query parameter holds a NUL byte or invalid UTF-8");
	return req_from_markdown(md, len, reg, lim, r, err);
}
