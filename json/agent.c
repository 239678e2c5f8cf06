#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/agent.h"
#include "json/precheck.h"

#define NOT_OBJECT \
	"the last block's output is not one JSON object {\"changes\":[…],\"answer\":\"…\"}"

__attribute__((format(printf, 3, 4)))
static long fail(struct agent_error *err, const char *code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* How much of s an error message quotes: at most max bytes, cut before
 * a character rather than inside one (a bare %.200s could end the
 * message in half a UTF-8 sequence). */
static int quote_len(const char *s, size_t max)
{
	return (int)jstr_utf8_prefix(s, strnlen(s, max));
}

static int declared(char *const *tools, size_t ntools, const char *name)
{
	for (size_t i = 0; i < ntools; i++)
		if (!strcmp(tools[i], name))
			return 1;
	return 0;
}

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s, strlen(s));
}

/* A key the contract reads, given twice: cJSON would take the first,
 * fleet's in-process parser took the last. Ambiguous, so refused. */
static const char *twice(const cJSON *o, const char *const *keys)
{
	for (const cJSON *a = o->child; a; a = a->next)
		for (size_t k = 0; keys[k]; k++)
			if (a->string && !strcmp(a->string, keys[k]))
				for (const cJSON *b = a->next; b; b = b->next)
					if (b->string && !strcmp(b->string, keys[k]))
						return keys[k];
	return NULL;
}

static const char *string_of(const cJSON *o, const char *key, int *present)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*present = v != NULL && !cJSON_IsNull(v);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The whole output through the shared pre-check, then cJSON: the root
 * object, or NULL with *err filled. */
static cJSON *read_output(const char *out, size_t len, struct agent_error *err)
{
	struct precheck pc;
	cJSON *root;

	/* the same check as a request's: what passes, cJSON reads whole */
	if (precheck_json(out, len, &pc) < 0) {
		if (pc.problem == PRECHECK_SYNTAX)
			fail(err, "invalid_changes", "%s (near byte %zu)", NOT_OBJECT, pc.offset);
		else if (pc.problem == PRECHECK_TRAILING)
			fail(err, "invalid_changes",
			     "the last block's output has more after its JSON object (byte %zu)",
			     pc.offset);
		else
			fail(err, "invalid_changes", "the output %s", pc.message);
		return NULL;
	}
	root = cJSON_ParseWithLength(out, len);
	if (!root) {
		fail(err, "invalid_changes", "out of memory reading the last block's output");
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		fail(err, "invalid_changes", "%s", NOT_OBJECT);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* "changes" (an array, null or absent) and "answer" of the root. */
static int read_top(const cJSON *root, const cJSON **ret_changes, const char **ret_answer,
		    struct agent_error *err)
{
	static const char *const top[] = { "changes", "answer", NULL };
	const char *k = twice(root, top);
	const cJSON *changes, *a;

	if (k)
		return (int)fail(err, "invalid_changes", "the output gives \"%s\" twice", k);
	changes = cJSON_GetObjectItemCaseSensitive(root, "changes");
	if (changes && !cJSON_IsNull(changes) && !cJSON_IsArray(changes))
		return (int)fail(err, "invalid_changes", "\"changes\" must be an array");
	a = cJSON_GetObjectItemCaseSensitive(root, "answer");
	if (a && !cJSON_IsNull(a) && !cJSON_IsString(a))
		return (int)fail(err, "invalid_changes", "\"answer\" must be a string");
	*ret_changes = changes;
	*ret_answer = cJSON_IsString(a) ? a->valuestring : "";
	return 0;
}

/* Which operation change i asks for: "op" when given, else the fields
 * it has. Returns 0 (write), 1 (patch) or -1 with *err filled. */
static int which_op(const struct agent_change *c, const char *op, size_t i,
		    struct agent_error *err)
{
	if (op) {
		if (!strcmp(op, "write"))
			return 0;
		if (!strcmp(op, "patch"))
			return 1;
		return (int)fail(err, "invalid_changes",
				 "changes[%zu]: op \"%.*s\" is neither \"write\" nor \"patch\"", i,
				 quote_len(op, 32), op);
	}
	if (c->content && !c->find && !c->replace)
		return 0;
	if (!c->content && (c->find || c->replace))
		return 1;
	return (int)fail(err, "invalid_changes",
			 "changes[%zu] (%.*s) needs either \"content\" or \"find\" and \"replace\" "
			 "(or an \"op\" that says which)", i, quote_len(c->path, 200), c->path);
}

/* changes[i] into *c, checked against the declared tools. */
static int read_change(const cJSON *ch, size_t i, char *const *tools, size_t ntools,
		       struct agent_change *c, struct agent_error *err)
{
	static const char *const keys[] = { "path", "content", "find", "replace", "op", NULL };
	int has_path, has[4], patch;
	const char *k, *op;

	if (!cJSON_IsObject(ch))
		return (int)fail(err, "invalid_changes", "changes[%zu] is not an object", i);
	if ((k = twice(ch, keys)))
		return (int)fail(err, "invalid_changes", "changes[%zu] gives \"%s\" twice", i, k);
	c->path = string_of(ch, "path", &has_path);
	c->content = string_of(ch, "content", &has[0]);
	c->find = string_of(ch, "find", &has[1]);
	c->replace = string_of(ch, "replace", &has[2]);
	op = string_of(ch, "op", &has[3]);
	if (!c->path || !*c->path)
		return (int)fail(err, "invalid_changes",
				 "changes[%zu] needs a non-empty string \"path\"", i);
	if ((has[0] && !c->content) || (has[1] && !c->find) ||
	    (has[2] && !c->replace) || (has[3] && !op))
		return (int)fail(err, "invalid_changes",
				 "changes[%zu]: path, content, find, replace and op must be strings", i);
	if ((patch = which_op(c, op, i, err)) < 0)
		return -1;
	if ((!patch && !c->content) || (patch && (!c->find || !*c->find || !c->replace)))
		return (int)fail(err, "invalid_changes", patch ?
				 "changes[%zu] (%.*s): a patch needs a non-empty \"find\" and a \"replace\"" :
				 "changes[%zu] (%.*s): a write needs \"content\"", i,
				 quote_len(c->path, 200), c->path);
	c->op = patch ? AGENT_PATCH : AGENT_WRITE;
	c->tool = patch ? "patch_note" : "write_note";
	if (!declared(tools, ntools, c->tool))
		return (int)fail(err, "undeclared_tool",
				 "changes[%zu] (%.*s) needs the tool \"%s\", which the request's "
				 "tools do not declare", i, quote_len(c->path, 200), c->path, c->tool);
	return 0;
}

int agent_parse(const char *out, size_t len, char *const *tools, size_t ntools,
		struct agent_output *ret, struct agent_error *err)
{
	struct agent_output o = { .answer = "" };
	const cJSON *changes = NULL, *ch;
	cJSON *root = read_output(out, len, err);

	if (!root)
		return -1;
	if (read_top(root, &changes, &o.answer, err) < 0)
		goto fail;
	o.tree = root;
	o.changes = calloc((size_t)cJSON_GetArraySize(changes) + 1, sizeof *o.changes);
	if (!o.changes) {
		fail(err, "invalid_changes", "out of memory building the tool calls");
		goto fail;
	}
	cJSON_ArrayForEach(ch, changes) {
		if (read_change(ch, o.n, tools, ntools, &o.changes[o.n], err) < 0)
			goto fail;
		o.n++;
	}
	*ret = o;
	return 0;
fail:
	free(o.changes);
	cJSON_Delete(root);
	return -1;
}

void agent_output_free(struct agent_output *o)
{
	free(o->changes);
	cJSON_Delete(o->tree);
	*o = AGENT_OUTPUT_NONE;
}

const char *agent_call_name(const struct agent_output *o, size_t i)
{
	return i < o->n ? o->changes[i].tool : "finish";
}

void agent_call_args(struct jbuf *b, const struct agent_output *o, size_t i)
{
	const struct agent_change *c = i < o->n ? &o->changes[i] : NULL;

	if (!c) {
		jbuf_puts(b, "{\"answer\":");
		str(b, o->answer);
	} else if (c->op == AGENT_PATCH) {
		jbuf_puts(b, "{\"path\":");
		str(b, c->path);
		jbuf_puts(b, ",\"find\":");
		str(b, c->find);
		jbuf_puts(b, ",\"replace\":");
		str(b, c->replace);
	} else {
		jbuf_puts(b, "{\"path\":");
		str(b, c->path);
		jbuf_puts(b, ",\"content\":");
		str(b, c->content);
	}
	jbuf_puts(b, "}");
}

void agent_call_id(char out[AGENT_CALL_ID_MAX], const char *request_id, size_t index)
{
	const char *dash = strchr(request_id, '-');

	snprintf(out, AGENT_CALL_ID_MAX, "call_%.64s_%zu", dash ? dash + 1 : request_id, index);
}

void agent_finish_only(struct jbuf *b, const char *request_id)
{
	char id[AGENT_CALL_ID_MAX];

	agent_call_id(id, request_id, 0);
	jbuf_printf(b, "[{\"id\":\"%s\",\"type\":\"function\",\"function\":"
		    "{\"name\":\"finish\",\"arguments\":\"{\\\"answer\\\":\\\"\\\"}\"}}]", id);
}

/* The end of a stderr, for a message: where a traceback explains. */
static void stderr_tail(const struct sbx_block_result *br, char *out, size_t outlen)
{
	size_t n = br->err.len, keep = outlen - 1 < 1500 ? outlen - 1 : 1500;
	const char *s = br->err.p ? br->err.p : "";

	if (n > keep) {
		s += n - keep;
		n = keep;
	}
	memcpy(out, s, n);
	out[n] = '\0';
}

/* The run's own end (output limit, timeout, signal, a failed block):
 * its code with msg filled, or NULL when the run ended well. */
static const char *run_outcome(const struct sbx_result *p, const struct chat_request *r,
			       char *msg, size_t msglen)
{
	char tail[1501];
	size_t idx = p->decider, last = p->n - 1;
	int ec = p->exit_code;

	if (p->end == SBX_END_OUTPUT) {
		stderr_tail(&p->res[last], tail, sizeof tail);
		snprintf(msg, msglen, "block %zu's output passed --max-stdout-bytes (%zu); the "
			 "run was stopped there and no partial set of changes is returned; stderr: %s",
			 last, p->max_stdout, tail);
		return "output_limit";
	}
	if (p->end == SBX_END_TIMEOUT || p->end == SBX_END_SIGNAL) {
		stderr_tail(&p->res[idx], tail, sizeof tail);
		if (p->end == SBX_END_TIMEOUT)
			snprintf(msg, msglen, "the run timed out after %g s (block %zu); stderr: %s",
				 p->timeout_s, idx, tail);
		else
			snprintf(msg, msglen, "the run was ended by signal %d (block %zu); stderr: %s",
				 p->end_signal, idx, tail);
		return "timeout";
	}
	if (ec != 0) {
		stderr_tail(&p->res[idx], tail, sizeof tail);
		snprintf(msg, msglen, "block %zu (%s) %s %d; stderr: %s", idx,
			 r->blocks[idx].interp->name,
			 p->res[idx].signal ? "was killed by signal" : "exited with status",
			 p->res[idx].signal ? p->res[idx].signal : ec, tail);
		return "block_failed";
	}
	if (p->out_truncated) {
		stderr_tail(&p->res[last], tail, sizeof tail);
		snprintf(msg, msglen, "block %zu's output (%llu bytes) is over --max-stdout-bytes "
			 "(%zu); no partial set of changes is returned; stderr: %s", last,
			 (unsigned long long)p->out_bytes, p->max_stdout, tail);
		return "output_limit";
	}
	return NULL;
}

void agent_refusal(const struct sbx_result *p, const char *what, char *msg, size_t msglen)
{
	char tail[1501];

	stderr_tail(&p->res[p->n - 1], tail, sizeof tail);
	snprintf(msg, msglen, "block %zu: %s; stderr: %s", p->n - 1, what, tail);
}

const char *agent_outcome(const struct sbx_result *p, const struct chat_request *r,
			  struct agent_output *ret, char *msg, size_t msglen)
{
	const char *code = run_outcome(p, r, msg, msglen);
	struct agent_error ae;

	if (code)
		return code;
	if (agent_parse(p->out.p ? p->out.p : "", p->out.len, r->tools, r->ntools, ret, &ae) == 0)
		return NULL;
	agent_refusal(p, ae.message, msg, msglen);
	return ae.code;
}
