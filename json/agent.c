#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
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

/* One tool call: arguments is a JSON text carried as a JSON string. */
static void call(struct jbuf *b, size_t id, const char *name, const struct jbuf *args)
{
	jbuf_printf(b, "%s{\"id\":\"call_%zu\",\"type\":\"function\",\"function\":{\"name\":",
		    id ? "," : "", id);
	str(b, name);
	jbuf_puts(b, ",\"arguments\":");
	jstr_escape(b, args->p ? args->p : "", args->len);
	jbuf_puts(b, "}}");
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

long agent_tool_calls(const char *out, size_t len, char *const *tools,
		      size_t ntools, struct jbuf *b, struct agent_error *err)
{
	struct jbuf calls = {0}, args = {0};
	const char *answer = "";
	struct precheck pc;
	cJSON *root = NULL;
	const cJSON *changes, *ch;
	long n = 0, rc = -1;
	size_t i = 0;

	/* the same check as a request's: what passes, cJSON reads whole */
	if (precheck_json(out, len, &pc) < 0) {
		if (pc.problem == PRECHECK_SYNTAX)
			return fail(err, "invalid_changes", "%s (near byte %zu)", NOT_OBJECT, pc.offset);
		if (pc.problem == PRECHECK_TRAILING)
			return fail(err, "invalid_changes",
				    "the last block's output has more after its JSON object (byte %zu)",
				    pc.offset);
		return fail(err, "invalid_changes", "the output %s", pc.message);
	}
	root = cJSON_ParseWithLength(out, len);
	if (!root) {
		fail(err, "invalid_changes", "out of memory reading the last block's output");
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		fail(err, "invalid_changes", "%s", NOT_OBJECT);
		goto out;
	}
	{
		static const char *const top[] = { "changes", "answer", NULL };
		const char *k = twice(root, top);

		if (k) {
			fail(err, "invalid_changes", "the output gives \"%s\" twice", k);
			goto out;
		}
	}
	changes = cJSON_GetObjectItemCaseSensitive(root, "changes");
	if (changes && !cJSON_IsNull(changes) && !cJSON_IsArray(changes)) {
		fail(err, "invalid_changes", "\"changes\" must be an array");
		goto out;
	}
	{
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "answer");

		if (a && !cJSON_IsNull(a) && !cJSON_IsString(a)) {
			fail(err, "invalid_changes", "\"answer\" must be a string");
			goto out;
		}
		if (cJSON_IsString(a))
			answer = a->valuestring;
	}
	cJSON_ArrayForEach(ch, changes) {
		int has_content, has_find, has_replace, has_op, has_path, patch;
		const char *path = NULL, *content, *find, *replace, *op, *tool;

		if (!cJSON_IsObject(ch)) {
			fail(err, "invalid_changes", "changes[%zu] is not an object", i);
			goto out;
		}
		{
			static const char *const keys[] = { "path", "content", "find", "replace", "op", NULL };
			const char *k = twice(ch, keys);

			if (k) {
				fail(err, "invalid_changes", "changes[%zu] gives \"%s\" twice", i, k);
				goto out;
			}
		}
		path = string_of(ch, "path", &has_path);
		content = string_of(ch, "content", &has_content);
		find = string_of(ch, "find", &has_find);
		replace = string_of(ch, "replace", &has_replace);
		op = string_of(ch, "op", &has_op);
		if (!path || !*path) {
			fail(err, "invalid_changes", "changes[%zu] needs a non-empty string \"path\"", i);
			goto out;
		}
		if ((has_content && !content) || (has_find && !find) ||
		    (has_replace && !replace) || (has_op && !op)) {
			fail(err, "invalid_changes",
			     "changes[%zu]: path, content, find, replace and op must be strings", i);
			goto out;
		}
		if (op) {
			if (!strcmp(op, "write"))
				patch = 0;
			else if (!strcmp(op, "patch"))
				patch = 1;
			else {
				fail(err, "invalid_changes",
				     "changes[%zu]: op \"%.*s\" is neither \"write\" nor \"patch\"", i,
				     quote_len(op, 32), op);
				goto out;
			}
		} else if (content && !find && !replace) {
			patch = 0;
		} else if (!content && (find || replace)) {
			patch = 1;
		} else {
			fail(err, "invalid_changes",
			     "changes[%zu] (%.*s) needs either \"content\" or \"find\" and \"replace\" "
			     "(or an \"op\" that says which)", i, quote_len(path, 200), path);
			goto out;
		}
		if ((!patch && !content) || (patch && (!find || !*find || !replace))) {
			fail(err, "invalid_changes", patch ?
			     "changes[%zu] (%.*s): a patch needs a non-empty \"find\" and a \"replace\"" :
			     "changes[%zu] (%.*s): a write needs \"content\"", i, quote_len(path, 200), path);
			goto out;
		}
		tool = patch ? "patch_note" : "write_note";
		if (!declared(tools, ntools, tool)) {
			fail(err, "undeclared_tool",
			     "changes[%zu] (%.*s) needs the tool \"%s\", which the request's tools do not declare",
			     i, quote_len(path, 200), path, tool);
			goto out;
		}
		args.len = 0;
		jbuf_puts(&args, "{\"path\":");
		str(&args, path);
		if (patch) {
			jbuf_puts(&args, ",\"find\":");
			str(&args, find);
			jbuf_puts(&args, ",\"replace\":");
			str(&args, replace);
		} else {
			jbuf_puts(&args, ",\"content\":");
			str(&args, content);
		}
		jbuf_puts(&args, "}");
		call(&calls, i, tool, &args);
		i++;
		n++;
	}
	args.len = 0;
	jbuf_puts(&args, "{\"answer\":");
	str(&args, answer);
	jbuf_puts(&args, "}");
	call(&calls, i, "finish", &args);
	if (calls.oom || args.oom) {
		fail(err, "invalid_changes", "out of memory building the tool calls");
		goto out;
	}
	jbuf_puts(b, "[");
	jbuf_append(b, calls.p, calls.len);
	jbuf_puts(b, "]");
	rc = n;
out:
	cJSON_Delete(root);
	jbuf_free(&calls);
	jbuf_free(&args);
	return rc;
}

void agent_finish_only(struct jbuf *b)
{
	jbuf_puts(b, "[{\"id\":\"call_0\",\"type\":\"function\",\"function\":"
		  "{\"name\":\"finish\",\"arguments\":\"{\\\"answer\\\":\\\"\\\"}\"}}]");
}
