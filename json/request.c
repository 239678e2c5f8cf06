#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/debug.h"
#include "json/fence.h"
#include "json/jstr.h"
#include "json/precheck.h"
#include "json/request.h"

__attribute__((format(printf, 5, 6)))
static int fail(struct req_error *err, int status, const char *code,
		const char *param, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	err->type = status == 403 ? "permission_error" :
		    status == 503 ? "server_error" : "invalid_request_error";
	err->code = code;
	err->param = param;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* An allocation failed while reading the request: the server's
 * condition, never the client's (a 4xx would tell it not to retry a
 * request that is fine). */
static int oom(struct req_error *err)
{
	return fail(err, 503, "server_overloaded", NULL,
		    "the server is out of memory reading this request; retry");
}

/* The body as one JSON object; NULL with err filled. precheck_json
 * refuses what cJSON would read wrongly or not whole, so a body it
 * passes is one cJSON takes in full. */
static cJSON *parse_object(const char *body, size_t len, struct req_error *err)
{
	struct precheck pc;
	cJSON *root;

	if (precheck_json(body, len, &pc) < 0) {
		fail(err, 400, "invalid_json", NULL, "request body %s", pc.message);
		return NULL;
	}
	root = cJSON_ParseWithLength(body, len);
	if (!root) {
		/* the text passed precheck_json: only memory is left */
		oom(err);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		fail(err, 400, "invalid_json", NULL, "request body must be a JSON object");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

struct msg {
	const char *role;
	const char *name;	/* NULL when absent */
	char *text;
	size_t len;
	int codeable;		/* system/developer/user without a reserved name */
};

static int is_role(const char *r, const char *want)
{
	return r && !strcmp(r, want);
}

/* content: a string, an array of text parts (concatenated, nothing in
 * between), null or absent (empty). */
static int msg_text(const cJSON *content, size_t idx, struct msg *m,
		    struct req_error *err)
{
	struct jbuf b = {0};
	const cJSON *part;

	if (!content || cJSON_IsNull(content)) {
		m->text = strdup("");
		m->len = 0;
		return m->text ? 0 : oom(err);
	}
	if (cJSON_IsString(content)) {
		m->len = strlen(content->valuestring);
		m->text = strdup(content->valuestring);
		return m->text ? 0 : oom(err);
	}
	if (!cJSON_IsArray(content))
		return fail(err, 400, "invalid_type", "messages",
			    "messages[%zu].content must be a string, an array of text parts or null",
			    idx);
	cJSON_ArrayForEach(part, content) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");

		if (!cJSON_IsObject(part) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
			jbuf_free(&b);
			return fail(err, 400, "invalid_type", "messages",
				    "messages[%zu].content: only parts of type \"text\" with a string \"text\" are accepted",
				    idx);
		}
		jbuf_puts(&b, text->valuestring);
	}
	if (!jbuf_cstr(&b)) {
		jbuf_free(&b);
		return oom(err);
	}
	m->text = b.p;
	m->len = b.len;
	return 0;
}

static const struct interp *fence_interp(const struct chat_request *r,
					 const struct registry *reg,
					 const char *text,
					 const struct fence_block *f)
{
	if (f->label_len == 0)
		return r->model_interp;
	return reg_lookup(reg, text + f->label_off, f->label_len);
}

static size_t count_runnable(const struct chat_request *r,
			     const struct registry *reg, const struct msg *m,
			     struct fence_block *fb, size_t nf)
{
	size_t k = 0;

	for (size_t i = 0; i < nf; i++)
		if (fence_interp(r, reg, m->text, &fb[i]))
			k++;
	return k;
}

static char *dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Lists every fence label of the candidate messages for the "no runnable
 * block" error, each label once; -1 when memory ran out. */
static int labels_seen(const struct msg *msgs, size_t nmsgs, char *out,
		       size_t outlen)
{
	struct jbuf b = {0};

	for (size_t i = 0; i < nmsgs; i++) {
		struct fence_block fb[64];
		size_t nf;

		if (!msgs[i].codeable)
			continue;
		nf = fence_extract(msgs[i].text, msgs[i].len, fb, 64);
		for (size_t k = 0; k < nf && k < 64; k++) {
			const char *l = msgs[i].text + fb[k].label_off;
			size_t ll = fb[k].label_len;
			char quoted[80];
			int q = snprintf(quoted, sizeof quoted, "\"%.*s\"",
					 (int)(ll > 64 ? 64 : ll), l);

			if (b.len && memmem(b.p, b.len, quoted, (size_t)q))
				continue;
			if (b.len)
				jbuf_puts(&b, ", ");
			jbuf_append(&b, quoted, (size_t)q);
		}
	}
	if (!jbuf_cstr(&b)) {
		jbuf_free(&b);
		return -1;
	}
	snprintf(out, outlen, "%s", b.len ? b.p : "none");
	jbuf_free(&b);
	return 0;
}

static int parse_tools(const cJSON *tools, struct chat_request *r,
		       struct req_error *err)
{
	const cJSON *t;
	size_t n;

	if (!tools || cJSON_IsNull(tools))
		return 0;
	if (!cJSON_IsArray(tools))
		return fail(err, 400, "invalid_type", "tools", "tools must be an array");
	n = (size_t)cJSON_GetArraySize(tools);
	if (n > REQ_MAX_TOOLS)
		return fail(err, 400, "invalid_value", "tools",
			    "at most %d tools are accepted", REQ_MAX_TOOLS);
	r->tools = calloc(n + 1, sizeof *r->tools);
	if (!r->tools)
		return oom(err);
	cJSON_ArrayForEach(t, tools) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

		if (!cJSON_IsObject(t) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "function") || !cJSON_IsObject(fn) ||
		    !cJSON_IsString(name) || !name->valuestring[0])
			return fail(err, 400, "invalid_type", "tools",
				    "tools[%zu] must be {\"type\":\"function\",\"function\":{\"name\":…}}",
				    r->ntools);
		r->tools[r->ntools] = strdup(name->valuestring);
		if (!r->tools[r->ntools])
			return oom(err);
		if (!strcmp(name->valuestring, "finish"))
			r->agent = 1;
		r->ntools++;
	}
	return 0;
}

static int parse_scalars(const cJSON *root, struct chat_request *r,
			 const struct registry *reg, struct req_error *err)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "codellm");

	if (!cJSON_IsString(model) || !model->valuestring[0])
		return fail(err, 400, "missing_required_parameter", "model",
			    "model is required and must be a non-empty string");
	if (strlen(model->valuestring) > 256)
		return fail(err, 400, "invalid_value", "model",
			    "model is longer than 256 bytes");
	r->model = strdup(model->valuestring);
	if (!r->model)
		return oom(err);
	r->model_interp = reg_lookup(reg, r->model, strlen(r->model));
	if (n && !cJSON_IsNull(n) &&
	    (!cJSON_IsNumber(n) || n->valuedouble != 1.0))
		return fail(err, 400, "invalid_value", "n",
			    "n must be 1: a program has one output");
	if (stream && !cJSON_IsNull(stream) && !cJSON_IsBool(stream))
		return fail(err, 400, "invalid_type", "stream", "stream must be a boolean");
	r->stream = cJSON_IsTrue(stream);
	if (so && !cJSON_IsNull(so)) {
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(so, "include_usage");

		/* null means absent here as for every other optional field */
		if (!cJSON_IsObject(so) ||
		    (iu && !cJSON_IsNull(iu) && !cJSON_IsBool(iu)))
			return fail(err, 400, "invalid_type", "stream_options",
				    "stream_options must be an object with a boolean include_usage");
		r->include_usage = cJSON_IsTrue(iu);
	}
	if (ext && !cJSON_IsNull(ext)) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ext, "timeout_s");

		if (!cJSON_IsObject(ext))
			return fail(err, 400, "invalid_type", "codellm",
				    "codellm must be an object");
		if (t && !cJSON_IsNull(t)) {
			if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) ||
			    t->valuedouble <= 0)
				return fail(err, 400, "invalid_value", "codellm.timeout_s",
					    "codellm.timeout_s must be a positive number of seconds");
			r->timeout_s = t->valuedouble;
		}
	}
	return 0;
}

static int parse_messages(const cJSON *arr, struct msg **ret, size_t *ret_n,
			  struct req_error *err)
{
	const cJSON *m;
	struct msg *msgs;
	size_t n, i = 0;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
		return fail(err, 400, "missing_required_parameter", "messages",
			    "messages must be a non-empty array");
	n = (size_t)cJSON_GetArraySize(arr);
	if (n > REQ_MAX_MESSAGES)
		return fail(err, 400, "invalid_value", "messages",
			    "at most %d messages are accepted", REQ_MAX_MESSAGES);
	msgs = calloc(n, sizeof *msgs);
	if (!msgs)
		return oom(err);
	*ret = msgs;
	cJSON_ArrayForEach(m, arr) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
		struct msg *x = &msgs[i];
		const char *r;

		*ret_n = i + 1;
		if (!cJSON_IsObject(m) || !cJSON_IsString(role))
			return fail(err, 400, "invalid_type", "messages",
				    "messages[%zu] must be an object with a string role", i);
		r = role->valuestring;
		if (!is_role(r, "system") && !is_role(r, "developer") &&
		    !is_role(r, "user") && !is_role(r, "assistant") &&
		    !is_role(r, "tool") && !is_role(r, "function"))
			return fail(err, 400, "invalid_value", "messages",
				    "messages[%zu].role \"%.32s\" is not one of system, developer, user, assistant, tool",
				    i, r);
		if (name && !cJSON_IsNull(name) && !cJSON_IsString(name))
			return fail(err, 400, "invalid_type", "messages",
				    "messages[%zu].name must be a string", i);
		x->role = r;
		x->name = cJSON_IsString(name) ? name->valuestring : NULL;
		if (msg_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, x, err) < 0)
			return -1;
		x->codeable = (is_role(r, "system") || is_role(r, "developer") ||
			       is_role(r, "user")) &&
			      !(x->name && (!strcmp(x->name, "fleet_input") ||
					    !strcmp(x->name, "stdin")));
		i++;
	}
	return 0;
}

static int take_blocks(struct chat_request *r, const struct registry *reg,
		       const struct msg *m, size_t max_blocks,
		       struct req_error *err)
{
	size_t nf = fence_extract(m->text, m->len, NULL, 0), runnable;
	struct fence_block *fb = calloc(nf ? nf : 1, sizeof *fb);

	if (!fb)
		return oom(err);
	fence_extract(m->text, m->len, fb, nf);
	runnable = count_runnable(r, reg, m, fb, nf);
	if (runnable > max_blocks) {
		free(fb);
		return fail(err, 400, "too_many_blocks", "messages",
			    "the code message has %zu runnable blocks; at most %zu are accepted (--max-blocks)",
			    runnable, max_blocks);
	}
	r->blocks = calloc(runnable ? runnable : 1, sizeof *r->blocks);
	r->skipped = calloc(nf - runnable + 1, sizeof *r->skipped);
	if (!r->blocks || !r->skipped)
		goto nomem;
	for (size_t i = 0; i < nf; i++) {
		const struct interp *it = fence_interp(r, reg, m->text, &fb[i]);
		char *label = dupn(m->text + fb[i].label_off, fb[i].label_len);

		if (!label)
			goto nomem;
		if (!it) {
			r->skipped[r->nskipped].label = label;
			r->skipped[r->nskipped++].line = fb[i].start_line;
			continue;
		}
		struct req_block *b = &r->blocks[r->nblocks++];

		b->interp = it;
		b->label = label;
		b->start_line = fb[i].start_line;
		b->end_line = fb[i].end_line;
		b->code = malloc(fb[i].body_end - fb[i].body_off + 1);
		if (!b->code)
			goto nomem;
		b->code_len = fence_content(m->text, &fb[i], b->code);
		b->code[b->code_len] = '\0';
	}
	free(fb);
	return 0;
nomem:
	free(fb);
	return oom(err);
}

static int whole_message(struct chat_request *r, const struct msg *m,
			 struct req_error *err)
{
	r->blocks = calloc(1, sizeof *r->blocks);
	if (!r->blocks)
		return oom(err);
	r->nblocks = 1;
	r->blocks[0].interp = r->model_interp;
	r->blocks[0].label = strdup("");
	r->blocks[0].code = dupn(m->text, m->len);
	r->blocks[0].code_len = m->len;
	r->blocks[0].start_line = 1;
	r->blocks[0].end_line = 1;
	for (size_t i = 0; i < m->len; i++)
		if (m->text[i] == '\n' && i + 1 < m->len)
			r->blocks[0].end_line++;
	if (!r->blocks[0].label || !r->blocks[0].code)
		return oom(err);
	return 0;
}

int req_parse(const char *body, size_t len, const struct registry *reg,
	      size_t max_blocks, struct chat_request *r, struct req_error *err)
{
	cJSON *root = NULL;
	struct msg *msgs = NULL;
	size_t nmsgs = 0, code = (size_t)-1;
	int rc = -1;

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (!(root = parse_object(body, len, err)))
		return -1;
	if (parse_scalars(root, r, reg, err) < 0 ||
	    parse_tools(cJSON_GetObjectItemCaseSensitive(root, "tools"), r, err) < 0 ||
	    parse_messages(cJSON_GetObjectItemCaseSensitive(root, "messages"),
			   &msgs, &nmsgs, err) < 0)
		goto out;

	/* The code message: the last system/user message with a runnable block. */
	for (size_t i = nmsgs; i-- > 0 && code == (size_t)-1;) {
		size_t nf;
		struct fence_block *fb;

		if (!msgs[i].codeable)
			continue;
		nf = fence_extract(msgs[i].text, msgs[i].len, NULL, 0);
		fb = calloc(nf ? nf : 1, sizeof *fb);
		if (!fb) {
			oom(err);
			goto out;
		}
		fence_extract(msgs[i].text, msgs[i].len, fb, nf);
		if (count_runnable(r, reg, &msgs[i], fb, nf))
			code = i;
		free(fb);
	}
	if (code != (size_t)-1 &&
	    take_blocks(r, reg, &msgs[code], max_blocks, err) < 0)
		goto out;
	if (code == (size_t)-1 && r->model_interp) {
		/* model names an interpreter: the last user message runs whole */
		for (size_t i = nmsgs; i-- > 0;)
			if (is_role(msgs[i].role, "user") && msgs[i].codeable) {
				code = i;
				break;
			}
		if (code != (size_t)-1 && whole_message(r, &msgs[code], err) < 0)
			goto out;
	}
	if (code == (size_t)-1) {
		char seen[384];

		if (labels_seen(msgs, nmsgs, seen, sizeof seen) < 0) {
			oom(err);
			goto out;
		}
		fail(err, 400, "no_runnable_block", "messages",
		     "no runnable code block: no system or user message has a fenced block whose label names an interpreter (labels seen: %s)",
		     seen);
		goto out;
	}
	r->code_text = msgs[code].text;
	r->code_text_len = msgs[code].len;
	msgs[code].text = NULL;

	for (size_t i = code + 1; i < nmsgs; i++)
		if (is_role(msgs[i].role, "assistant") || is_role(msgs[i].role, "tool") ||
		    is_role(msgs[i].role, "function"))
			r->rerun_guard = 1;

	if (!r->rerun_guard) {
		if (!reg->any_allowed) {
			fail(err, 403, "execution_disabled", NULL,
			     "code execution is disabled on this server (--allowed-programs is empty)");
			goto out;
		}
		for (size_t i = 0; i < r->nblocks; i++)
			if (!r->blocks[i].interp->allowed) {
				fail(err, 403, "program_not_allowed", "messages",
				     "block %zu (\"%.64s\", line %u) needs interpreter \"%s\", which is not in --allowed-programs",
				     i, r->blocks[i].label, r->blocks[i].start_line,
				     r->blocks[i].interp->name);
				goto out;
			}
	}

	/* stdin: a message named "stdin", else (run mode) the last plain
	 * system message before the code message that holds no fence. */
	for (size_t i = nmsgs; i-- > 0;) {
		if (msgs[i].name && !strcmp(msgs[i].name, "fleet_input") && !r->bag) {
			r->bag = msgs[i].text;
			r->bag_len = msgs[i].len;
			msgs[i].text = NULL;
		}
	}
	for (size_t i = nmsgs; i-- > 0;)
		if (msgs[i].name && !strcmp(msgs[i].name, "stdin") && msgs[i].text) {
			r->stdin_data = msgs[i].text;
			r->stdin_len = msgs[i].len;
			msgs[i].text = NULL;
			break;
		}
	if (!r->stdin_data && !r->agent)
		for (size_t i = code; i-- > 0;) {
			/* developer is the newer name of system, as for the
			 * code message */
			if ((!is_role(msgs[i].role, "system") &&
			     !is_role(msgs[i].role, "developer")) ||
			    msgs[i].name || !msgs[i].text)
				continue;
			if (fence_extract(msgs[i].text, msgs[i].len, NULL, 0) != 0)
				continue;
			r->stdin_data = msgs[i].text;
			r->stdin_len = msgs[i].len;
			msgs[i].text = NULL;
			break;
		}
	/* request.h promises NULL for an empty stdin; only now, so that an
	 * empty "stdin" message still wins over the system fallback */
	if (r->stdin_data && !r->stdin_len) {
		free(r->stdin_data);
		r->stdin_data = NULL;
	}
	rc = 0;
out:
	for (size_t i = 0; i < nmsgs; i++)
		free(msgs[i].text);
	free(msgs);
	cJSON_Delete(root);
	if (rc < 0)
		req_free(r);
	return rc;
}

void req_free(struct chat_request *r)
{
	free(r->model);
	for (size_t i = 0; i < r->ntools; i++)
		free(r->tools[i]);
	free(r->tools);
	for (size_t i = 0; i < r->nblocks; i++) {
		free(r->blocks[i].label);
		free(r->blocks[i].code);
	}
	free(r->blocks);
	for (size_t i = 0; i < r->nskipped; i++)
		free(r->skipped[i].label);
	free(r->skipped);
	free(r->code_text);
	free(r->stdin_data);
	free(r->bag);
	memset(r, 0, sizeof *r);
}

int req_from_markdown(const char *text, size_t len, const struct registry *reg,
		      size_t max_blocks, struct chat_request *r,
		      struct req_error *err)
{
	struct msg m = { .role = "user" };

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	m.text = dupn(text, len);
	m.len = len;
	if (!m.text)
		return oom(err);
	/* no model here: a fence without a label names no interpreter */
	if (take_blocks(r, reg, &m, max_blocks, err) < 0) {
		free(m.text);
		req_free(r);
		if (err->param && !strcmp(err->param, "messages"))
			err->param = "body";
		return -1;
	}
	r->code_text = m.text;
	r->code_text_len = m.len;
	return 0;
}

int req_parse_debug(const char *body, size_t len, const struct registry *reg,
		    size_t max_blocks, enum req_debug what, struct chat_request *r,
		    size_t *ret_block, struct req_error *err)
{
	int want_block = what == REQ_DEBUG_BLOCK, rc = -1;
	cJSON *root = NULL;
	const cJSON *md, *blk, *in, *bag;

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (!(root = parse_object(body, len, err)))
		return -1;
	md = cJSON_GetObjectItemCaseSensitive(root, "body");
	if (!cJSON_IsString(md)) {
		fail(err, 400, "invalid_value", "body",
		     "\"body\" must be a string: the markdown, inline");
		goto out;
	}
	in = cJSON_GetObjectItemCaseSensitive(root, "stdin");
	if (in && !cJSON_IsNull(in) && !cJSON_IsString(in)) {
		fail(err, 400, "invalid_value", "stdin", "\"stdin\" must be a string");
		goto out;
	}
	blk = cJSON_GetObjectItemCaseSensitive(root, "block");
	if (want_block) {
		double v = cJSON_IsNumber(blk) ? blk->valuedouble : -1;

		if (!cJSON_IsNumber(blk) || v < 0 || v != floor(v) || v > 1e9) {
			fail(err, 400, "invalid_value", "block",
			     "\"block\" must be a block's index: an integer from 0");
			goto out;
		}
		*ret_block = (size_t)v;
	} else if (blk && what == REQ_DEBUG_PIPELINE) {
		fail(err, 400, "invalid_value", "block",
		     "\"block\" is for /debug/run-block; the pipeline runs every block");
		goto out;
	}
	if (req_from_markdown(md->valuestring, strlen(md->valuestring), reg,
			      max_blocks, r, err) < 0)
		goto out;
	if (what == REQ_DEBUG_LIST) {
		rc = 0;		/* only the blocks: nothing will run */
		goto out;
	}
	if (r->nblocks == 0) {
		fail(err, 400, "no_runnable_block", "body",
		     "the body has no fenced block whose label names an interpreter");
		goto fail_r;
	}
	if (want_block && *ret_block >= r->nblocks) {
		fail(err, 400, "invalid_value", "block",
		     "block %zu does not exist: the body has %zu runnable block%s (0..%zu)",
		     *ret_block, r->nblocks, r->nblocks == 1 ? "" : "s", r->nblocks - 1);
		goto fail_r;
	}
	if (!reg->any_allowed) {
		fail(err, 403, "execution_disabled", NULL,
		     "code execution is disabled on this server (--allowed-programs is empty)");
		goto fail_r;
	}
	for (size_t i = 0; i < r->nblocks; i++) {
		if (want_block && i != *ret_block)
			continue;
		if (!r->blocks[i].interp->allowed) {
			fail(err, 403, "program_not_allowed", "body",
			     "block %zu (\"%.64s\", line %u) needs interpreter \"%s\", which is not in --allowed-programs",
			     i, r->blocks[i].label, r->blocks[i].start_line,
			     r->blocks[i].interp->name);
			goto fail_r;
		}
	}
	if (cJSON_IsString(in) && in->valuestring[0]) {
		r->stdin_len = strlen(in->valuestring);
		r->stdin_data = dupn(in->valuestring, r->stdin_len);
		if (!r->stdin_data)
			goto nomem;
	}
	bag = cJSON_GetObjectItemCaseSensitive(root, "input");
	if (cJSON_IsString(bag)) {
		/* a string is the bag's text, as a fleet_input message is */
		r->bag_len = strlen(bag->valuestring);
		r->bag = dupn(bag->valuestring, r->bag_len);
	} else if (bag && !cJSON_IsNull(bag)) {
		r->bag = cJSON_PrintUnformatted(bag);
		r->bag_len = r->bag ? strlen(r->bag) : 0;
	}
	if (bag && !cJSON_IsNull(bag) && !r->bag)
		goto nomem;
	if (want_block) {
		/* run-block: a pipeline of the one block */
		for (size_t i = 0; i < r->nblocks; i++)
			if (i != *ret_block) {
				free(r->blocks[i].label);
				free(r->blocks[i].code);
			}
		r->blocks[0] = r->blocks[*ret_block];
		r->nblocks = 1;
	}
	rc = 0;
	goto out;
nomem:
	oom(err);
fail_r:
	req_free(r);
out:
	cJSON_Delete(root);
	return rc;
}

int req_parse_debug_query(const char *target, size_t n, const struct registry *reg,
			  size_t max_blocks, struct chat_request *r,
			  struct req_error *err)
{
	char *md;
	size_t len;
	int rc = dbg_query_param(target, n, "body", &md, &len);

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (rc == -3)
		return oom(err);
	if (rc == -2)
		return fail(err, 400, "invalid_value", "body",
			    "the body query parameter is not valid form encoding");
	if (rc < 0)
		return fail(err, 400, "invalid_value", "body",
			    "GET /debug/blocks needs ?body=<markdown, form-encoded>; "
			    "or POST {\"body\": …}");
	/* the markdown is text: a NUL (%00) or invalid UTF-8 is refused as
	 * in a JSON body */
	if (memchr(md, '\0', len) || !jstr_utf8_valid(md, len))
		rc = fail(err, 400, "invalid_value", "body",
			  "the body query parameter holds a NUL byte or invalid UTF-8");
	else
		rc = req_from_markdown(md, len, reg, max_blocks, r, err);
	free(md);
	return rc;
}
