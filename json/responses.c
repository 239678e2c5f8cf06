/* The Responses API face: the body translated into chat's, the answer
 * rendered as a response object or typed stream events. See
 * json/responses.h and codellm(7), RESPONSES API. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/responses.h"

#define STATELESS "stateless_server"
#define NOTHING_STORED "this server keeps no state: nothing is stored between requests; " \
	"send the whole conversation in input"

/* ---- the body, translated ------------------------------------------- */

struct tr {
	cJSON *msgs;		/* the chat messages being built */
	cJSON *finish_ids;	/* call_ids of finish function_calls (strings) */
	struct rsp_face *f;
	struct req_error *err;
};

static cJSON *take(cJSON *obj, const char *key)
{
	return cJSON_DetachItemFromObjectCaseSensitive(obj, key);
}

static int is_str(const cJSON *o, const char *key, const char *want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

/* A chat message added, and where it came from. */
static int add_msg(struct tr *t, cJSON *m, long from)
{
	long *map = realloc(t->f->map, (t->f->nmap + 1) * sizeof *map);

	if (!m || !map) {
		cJSON_Delete(m);
		if (map)
			t->f->map = map;
		return req_oom(t->err);
	}
	t->f->map = map;
	map[t->f->nmap++] = from;
	cJSON_AddItemToArray(t->msgs, m);
	return 0;
}

/* One content part of input[i].content[k] as chat's part, or NULL
 * with err filled (nothing allocated then). */
static cJSON *part_of(cJSON *p, size_t i, size_t k, struct req_error *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
	const char *ty = cJSON_IsString(type) ? type->valuestring : "";
	cJSON *out = cJSON_CreateObject(), *inner;

	if (!out)
		return req_oom(err), NULL;
	if (!strcmp(ty, "input_text") || !strcmp(ty, "output_text") || !strcmp(ty, "text")) {
		cJSON_AddStringToObject(out, "type", "text");
		cJSON_AddItemToObject(out, "text", take(p, "text"));
	} else if (!strcmp(ty, "refusal")) {
		cJSON_AddStringToObject(out, "type", "text");
		cJSON_AddItemToObject(out, "text", take(p, "refusal"));
	} else if (!strcmp(ty, "input_file") && !cJSON_GetObjectItemCaseSensitive(p, "file_url")) {
		cJSON_AddStringToObject(out, "type", "file");
		inner = cJSON_AddObjectToObject(out, "file");
		cJSON_AddItemToObject(inner, "filename", take(p, "filename"));
		cJSON_AddItemToObject(inner, "file_data", take(p, "file_data"));
		cJSON_AddItemToObject(inner, "file_id", take(p, "file_id"));
	} else if (!strcmp(ty, "input_image") && !cJSON_GetObjectItemCaseSensitive(p, "file_id")) {
		cJSON_AddStringToObject(out, "type", "image_url");
		inner = cJSON_AddObjectToObject(out, "image_url");
		cJSON_AddItemToObject(inner, "url", take(p, "image_url"));
	} else {
		cJSON_Delete(out);
		if (!strcmp(ty, "input_file") || !strcmp(ty, "input_image"))
			return req_fail(err, 400, "invalid_file", "input",
				    "input[%zu].content[%zu]: %s references are not accepted: this "
				    "server holds no files and fetches nothing; send the bytes as a "
				    "base64 data URL (%s)", i, k,
				    ty[6] == 'f' ? "file_url" : "file_id",
				    ty[6] == 'f' ? "file_data" : "image_url"), NULL;
		return req_fail(err, 400, "unsupported_content", "input",
			    "input[%zu].content[%zu]: a part of type \"%.40s\" is not supported "
			    "(input_text, input_file, input_image; output_text in assistant "
			    "messages)", i, k, ty), NULL;
	}
	return out;
}

/* A message item (or an easy input message: role and content, no type). */
static int message_item(struct tr *t, cJSON *it, size_t i)
{
	static const char *const roles[] = { "user", "system", "developer", "assistant" };
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
	cJSON *content = take(it, "content"), *m, *parts, *p;
	size_t k = 0, r = 0;

	while (r < 4 && !(cJSON_IsString(role) && !strcmp(role->valuestring, roles[r])))
		r++;
	if (r == 4) {
		cJSON_Delete(content);
		return req_fail(t->err, 400, "invalid_value", "input",
			    "input[%zu]: a message's role must be user, system, developer or "
			    "assistant", i);
	}
	if (cJSON_IsArray(content)) {
		if (!(parts = cJSON_CreateArray()))
			return cJSON_Delete(content), req_oom(t->err);
		cJSON_ArrayForEach(p, content) {
			cJSON *q = part_of(p, i, k++, t->err);

			if (!q) {
				cJSON_Delete(parts);
				cJSON_Delete(content);
				return -1;
			}
			cJSON_AddItemToArray(parts, q);
		}
		cJSON_Delete(content);
		content = parts;
	}
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", roles[r]);
	if (content)
		cJSON_AddItemToObject(m, "content", content);
	return add_msg(t, m, (long)i);
}

/* An earlier call of the assistant: an assistant message with one tool
 * call. A finish call's call_id is kept: its output is finish's result. */
static int call_item(struct tr *t, cJSON *it, size_t i)
{
	cJSON *m = cJSON_CreateObject(), *calls, *c, *fn, *id = take(it, "call_id");

	if (!cJSON_IsString(id) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "name"))) {
		cJSON_Delete(m);
		cJSON_Delete(id);
		return req_fail(t->err, 400, "invalid_value", "input",
			    "input[%zu]: a function_call item needs a string call_id and name", i);
	}
	if (is_str(it, "name", "finish"))
		cJSON_AddItemToArray(t->finish_ids, cJSON_CreateString(id->valuestring));
	cJSON_AddStringToObject(m, "role", "assistant");
	cJSON_AddNullToObject(m, "content");
	calls = cJSON_AddArrayToObject(m, "tool_calls");
	c = cJSON_CreateObject();
	cJSON_AddItemToArray(calls, c);
	cJSON_AddItemToObject(c, "id", id);
	cJSON_AddStringToObject(c, "type", "function");
	fn = cJSON_AddObjectToObject(c, "function");
	cJSON_AddItemToObject(fn, "name", take(it, "name"));
	cJSON_AddItemToObject(fn, "arguments", take(it, "arguments"));
	return add_msg(t, m, (long)i);
}

/* A call's result: a tool message; named finish when its call was. */
static int output_item(struct tr *t, cJSON *it, size_t i)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "call_id"), *f, *p;
	cJSON *out = take(it, "output"), *m;
	struct jbuf text = {0};

	if (!cJSON_IsString(id) || !(cJSON_IsString(out) || cJSON_IsArray(out))) {
		cJSON_Delete(out);
		return req_fail(t->err, 400, "invalid_value", "input",
			    "input[%zu]: a function_call_output item needs a string call_id and "
			    "an output (a string or an array of parts)", i);
	}
	if (cJSON_IsArray(out)) {
		cJSON_ArrayForEach(p, out) {
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "text");

			if (cJSON_IsString(s))
				jbuf_puts(&text, s->valuestring);
		}
		cJSON_Delete(out);
		out = cJSON_CreateString(jbuf_cstr(&text) ? text.p : "");
		jbuf_free(&text);
	}
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "tool");
	cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
	cJSON_ArrayForEach(f, t->finish_ids)
		if (!strcmp(f->valuestring, id->valuestring)) {
			cJSON_AddStringToObject(m, "name", "finish");
			break;
		}
	cJSON_AddItemToObject(m, "content", out);
	return add_msg(t, m, (long)i);
}

static int input_items(struct tr *t, cJSON *input)
{
	cJSON *it;
	size_t i = 0;

	if (cJSON_IsString(input)) {
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddItemToObject(m, "content", cJSON_Duplicate(input, 1));
		return add_msg(t, m, -2);
	}
	if (!cJSON_IsArray(input) || !cJSON_GetArraySize(input))
		return req_fail(t->err, 400, "missing_required_parameter", "input",
			    "input must be a string or a non-empty array of items");
	cJSON_ArrayForEach(it, input) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
		const char *ty = cJSON_IsString(type) ? type->valuestring : NULL;
		int rc;

		if (!cJSON_IsObject(it))
			return req_fail(t->err, 400, "invalid_type", "input",
				    "input[%zu] must be an object", i);
		if ((!type && cJSON_GetObjectItemCaseSensitive(it, "role")) ||
		    (ty && !strcmp(ty, "message")))
			rc = message_item(t, it, i);
		else if (ty && !strcmp(ty, "function_call"))
			rc = call_item(t, it, i);
		else if (ty && !strcmp(ty, "function_call_output"))
			rc = output_item(t, it, i);
		else if (ty && !strcmp(ty, "item_reference"))
			return req_fail(t->err, 400, STATELESS, "input",
				    "input[%zu]: item_reference names a stored item; " NOTHING_STORED,
				    i);
		else
			return req_fail(t->err, 400, "unsupported_item", "input",
				    "input[%zu]: an item of type \"%.40s\" is not supported (message, "
				    "function_call, function_call_output)", i, ty ? ty : "(none)");
		if (rc < 0)
			return -1;
		i++;
	}
	return 0;
}

/* Responses tools ({"type":"function","name":…}) as chat's. */
static int tools_of(cJSON *tools, cJSON *chat, struct req_error *err)
{
	cJSON *out, *t;
	size_t i = 0;

	if (!tools || cJSON_IsNull(tools))
		return 0;
	if (!cJSON_IsArray(tools))
		return req_fail(err, 400, "invalid_type", "tools", "tools must be an array");
	out = cJSON_AddArrayToObject(chat, "tools");
	cJSON_ArrayForEach(t, tools) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
		cJSON *c, *fn;

		if (!is_str(t, "type", "function") || !cJSON_IsString(name) || !name->valuestring[0])
			return req_fail(err, 400, "unsupported_tool", "tools",
				    "tools[%zu]: only function tools {\"type\":\"function\",\"name\":…} "
				    "are supported (got type \"%.40s\")", i,
				    cJSON_IsString(type) ? type->valuestring : "(none)");
		c = cJSON_CreateObject();
		cJSON_AddItemToArray(out, c);
		cJSON_AddStringToObject(c, "type", "function");
		fn = cJSON_AddObjectToObject(c, "function");
		cJSON_AddStringToObject(fn, "name", name->valuestring);
		i++;
	}
	return 0;
}

/* What needs state this server does not keep: a clear 400. */
static int stateful(const cJSON *root, struct req_error *err)
{
	static const char *const keys[] = { "previous_response_id", "conversation", "prompt" };
	const cJSON *bg = cJSON_GetObjectItemCaseSensitive(root, "background");

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);

		if (v && !cJSON_IsNull(v))
			return req_fail(err, 400, STATELESS, keys[i],
				    "%s is not supported: " NOTHING_STORED, keys[i]);
	}
	if (cJSON_IsTrue(bg))
		return req_fail(err, 400, STATELESS, "background",
			    "background is not supported: " NOTHING_STORED
			    ", and wait for the answer");
	return 0;
}

/* metadata (an object of at most 16 strings), store (a boolean),
 * instructions (a string): checked; metadata kept to echo. */
static int scalars(struct tr *t, cJSON *root)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata"), *v;
	const cJSON *store = cJSON_GetObjectItemCaseSensitive(root, "store");
	const cJSON *ins = cJSON_GetObjectItemCaseSensitive(root, "instructions");
	int n = 0;

	if (store && !cJSON_IsNull(store) && !cJSON_IsBool(store))
		return req_fail(t->err, 400, "invalid_type", "store", "store must be a boolean");
	if (ins && !cJSON_IsNull(ins) && !cJSON_IsString(ins))
		return req_fail(t->err, 400, "invalid_type", "instructions",
			    "instructions must be a string");
	if (md && !cJSON_IsNull(md)) {
		cJSON_ArrayForEach(v, md)
			if (!cJSON_IsString(v) || ++n > 16)
				break;
		if (!cJSON_IsObject(md) || v)
			return req_fail(t->err, 400, "invalid_value", "metadata",
				    "metadata must be an object of at most 16 string values");
	}
	t->f->metadata = md && !cJSON_IsNull(md) ? cJSON_PrintUnformatted(md) : strdup("{}");
	if (!t->f->metadata)
		return req_oom(t->err);
	if (cJSON_IsString(ins)) {
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "role", "system");
		cJSON_AddItemToObject(m, "content", take(root, "instructions"));
		return add_msg(t, m, -1);
	}
	return 0;
}

int rsp_translate(const char *body, size_t len, struct rsp_face *f, struct req_error *err)
{
	cJSON *root, *chat = NULL;
	struct tr t = { .f = f, .err = err };
	int rc = -1;

	memset(f, 0, sizeof *f);
	memset(err, 0, sizeof *err);
	if (!(root = req_parse_object(body, len, err)))
		return -1;
	if (stateful(root, err) < 0)
		goto out;
	if (!(chat = cJSON_CreateObject()) || !(t.finish_ids = cJSON_CreateArray())) {
		req_oom(err);
		goto out;
	}
	cJSON_AddItemToObject(chat, "model", take(root, "model"));
	cJSON_AddItemToObject(chat, "stream", take(root, "stream"));
	cJSON_AddItemToObject(chat, "codellm", take(root, "codellm"));
	t.msgs = cJSON_AddArrayToObject(chat, "messages");
	if (!t.msgs) {
		req_oom(err);
		goto out;
	}
	if (scalars(&t, root) < 0 ||
	    tools_of(cJSON_GetObjectItemCaseSensitive(root, "tools"), chat, err) < 0 ||
	    input_items(&t, cJSON_GetObjectItemCaseSensitive(root, "input")) < 0)
		goto out;
	cJSON_Delete(root);
	root = NULL;
	f->chat = cJSON_PrintUnformatted(chat);
	if (!f->chat) {
		req_oom(err);
		goto out;
	}
	f->chat_len = strlen(f->chat);
	rc = 0;
out:
	cJSON_Delete(root);
	cJSON_Delete(chat);
	cJSON_Delete(t.finish_ids);
	if (rc < 0)
		rsp_face_free(f);
	return rc;
}

void rsp_fix_error(const struct rsp_face *f, struct req_error *err)
{
	char rest[sizeof err->message], pre[32], *end;
	unsigned long n;
	size_t p, r;

	if (err->param && !strcmp(err->param, "messages"))
		err->param = "input";
	if (strncmp(err->message, "messages[", 9))
		return;
	n = strtoul(err->message + 9, &end, 10);
	if (*end != ']' || n >= f->nmap)
		return;
	snprintf(rest, sizeof rest, "%s", end + 1);
	if (f->map[n] == -1)
		snprintf(pre, sizeof pre, "instructions");
	else if (f->map[n] == -2)
		snprintf(pre, sizeof pre, "input");
	else
		snprintf(pre, sizeof pre, "input[%ld]", f->map[n]);
	p = strlen(pre);
	r = strlen(rest);
	if (p + r >= sizeof err->message)
		r = sizeof err->message - 1 - p;
	memcpy(err->message, pre, p);
	memcpy(err->message + p, rest, r);
	err->message[p + r] = '\0';
}

void rsp_face_free(struct rsp_face *f)
{
	free(f->chat);
	free(f->metadata);
	free(f->map);
	f->chat = f->metadata = NULL;
	f->map = NULL;
	f->nmap = 0;
}

/* ---- the answer -------------------------------------------------------- */

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s, strlen(s));
}

/* The random part of the request's id, after its first '-'. */
static const char *hex(const struct resp_run *rr)
{
	const char *d = strchr(rr->id, '-');

	return d ? d + 1 : rr->id;
}

void rsp_run_status(const struct sbx_result *res, struct rsp_out *o)
{
	o->status = "completed";
	o->reason = NULL;
	if (!res)
		return;
	if (res->out_truncated || res->end == SBX_END_OUTPUT)
		o->reason = "max_output_tokens";
	else if (res->end == SBX_END_TIMEOUT)
		o->reason = "timeout";
	else if (res->end != SBX_END_NORMAL)
		o->reason = "interrupted";
	if (o->reason)
		o->status = "incomplete";
}

static void text_part(struct jbuf *b, const char *text, size_t len)
{
	jbuf_puts(b, "{\"type\":\"output_text\",\"text\":");
	jstr_escape(b, text ? text : "", text ? len : 0);
	jbuf_puts(b, ",\"annotations\":[],\"logprobs\":[]}");
}

/* The message item; content [] while in progress (text NULL). */
static void message_obj(struct jbuf *b, const struct resp_run *rr, const char *status,
			const char *text, size_t len)
{
	jbuf_printf(b, "{\"type\":\"message\",\"id\":\"msg_%s\",\"status\":\"%s\","
		    "\"role\":\"assistant\",\"content\":[", hex(rr), status);
	if (text)
		text_part(b, text, len);
	jbuf_puts(b, "]}");
}

/* Function call i of the output; arguments "" while in progress. */
static void call_obj(struct jbuf *b, const struct resp_run *rr, const struct agent_output *o,
		     size_t i, const char *status, const char *args)
{
	char id[AGENT_CALL_ID_MAX];

	agent_call_id(id, rr->id, i);
	jbuf_printf(b, "{\"type\":\"function_call\",\"id\":\"fc_%s_%zu\",\"call_id\":", hex(rr), i);
	str(b, id);
	jbuf_puts(b, ",\"name\":");
	str(b, agent_call_name(o, i));
	jbuf_puts(b, ",\"arguments\":");
	str(b, args);
	jbuf_printf(b, ",\"status\":\"%s\"}", status);
}

static void output_array(struct jbuf *b, const struct resp_run *rr, const struct rsp_out *o)
{
	struct jbuf args = {0};

	jbuf_puts(b, "[");
	if (o->empty || o->err_code) {
		/* nothing yet, or nothing at all */
	} else if (o->calls) {
		for (size_t i = 0; i <= o->calls->n; i++) {
			args.len = 0;
			agent_call_args(&args, o->calls, i);
			if (i)
				jbuf_puts(b, ",");
			call_obj(b, rr, o->calls, i, "completed", jbuf_cstr(&args) ? args.p : "");
		}
		if (args.oom)
			b->oom = 1;
	} else {
		message_obj(b, rr, o->reason ? "incomplete" : "completed",
			    o->text ? o->text : "", o->len);
	}
	jbuf_puts(b, "]");
	jbuf_free(&args);
}

void rsp_response(struct jbuf *b, const struct rsp_face *f, const struct resp_run *rr,
		  const struct rsp_out *o)
{
	jbuf_printf(b, "{\"id\":\"resp_%s\",\"object\":\"response\",\"created_at\":%ld,"
		    "\"status\":\"%s\",\"background\":false,\"error\":", hex(rr), rr->created,
		    o->status);
	if (o->err_code) {
		jbuf_puts(b, "{\"code\":");
		str(b, o->err_code);
		jbuf_puts(b, ",\"message\":");
		str(b, o->err_msg ? o->err_msg : "");
		jbuf_puts(b, "}");
	} else {
		jbuf_puts(b, "null");
	}
	jbuf_puts(b, ",\"incomplete_details\":");
	if (o->reason)
		jbuf_printf(b, "{\"reason\":\"%s\"}", o->reason);
	else
		jbuf_puts(b, "null");
	jbuf_printf(b, ",\"instructions\":null,\"max_output_tokens\":null,\"metadata\":%s,"
		    "\"model\":", f->metadata ? f->metadata : "{}");
	str(b, rr->req->model);
	jbuf_puts(b, ",\"output\":");
	output_array(b, rr, o);
	jbuf_puts(b, ",\"parallel_tool_calls\":true,\"previous_response_id\":null,"
		  "\"reasoning\":{\"effort\":null,\"summary\":null},\"store\":false,"
		  "\"temperature\":null,\"text\":{\"format\":{\"type\":\"text\"}},"
		  "\"tool_choice\":\"auto\",\"tools\":[],\"top_p\":null,"
		  "\"truncation\":\"disabled\",\"user\":null,\"usage\":");
	if (o->empty) {
		jbuf_puts(b, "null}");
		return;
	}
	jbuf_puts(b, "{\"input_tokens\":0,\"input_tokens_details\":{\"cached_tokens\":0},"
		  "\"output_tokens\":0,\"output_tokens_details\":{\"reasoning_tokens\":0},"
		  "\"total_tokens\":0},\"codellm\":");
	resp_codellm(b, rr);
	jbuf_puts(b, "}");
}

/* ---- typed stream events ----------------------------------------------- */

static void ev_open(struct jbuf *b, const char *type)
{
	jbuf_printf(b, "%s {\"type\":\"%s\"", type, type);
}

static void ev_close(struct jbuf *b, struct rsp_face *f)
{
	jbuf_printf(b, ",\"sequence_number\":%lu}\n", f->seq++);
}

static void ev_response(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
			const char *type, const struct rsp_out *o)
{
	ev_open(b, type);
	jbuf_puts(b, ",\"response\":");
	rsp_response(b, f, rr, o);
	ev_close(b, f);
}

/* ,"item_id":…,"output_index":0,"content_index":0 of the message */
static void text_where(struct jbuf *b, const struct resp_run *rr)
{
	jbuf_printf(b, ",\"item_id\":\"msg_%s\",\"output_index\":0,\"content_index\":0", hex(rr));
}

void rsp_sse_begin(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		   int with_message)
{
	const struct rsp_out o = { .status = "in_progress", .empty = 1 };

	ev_response(b, f, rr, "response.created", &o);
	ev_response(b, f, rr, "response.in_progress", &o);
	if (!with_message)
		return;
	ev_open(b, "response.output_item.added");
	jbuf_puts(b, ",\"output_index\":0,\"item\":");
	message_obj(b, rr, "in_progress", NULL, 0);
	ev_close(b, f);
	ev_open(b, "response.content_part.added");
	text_where(b, rr);
	jbuf_puts(b, ",\"part\":");
	text_part(b, "", 0);
	ev_close(b, f);
}

void rsp_sse_text(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		  const char *data, size_t len)
{
	ev_open(b, "response.output_text.delta");
	text_where(b, rr);
	jbuf_puts(b, ",\"delta\":");
	jstr_escape(b, data, len);
	jbuf_puts(b, ",\"logprobs\":[]");
	ev_close(b, f);
}

void rsp_sse_text_end(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		      const struct rsp_out *o)
{
	const char *text = o->text ? o->text : "";

	ev_open(b, "response.output_text.done");
	text_where(b, rr);
	jbuf_puts(b, ",\"text\":");
	jstr_escape(b, text, o->len);
	jbuf_puts(b, ",\"logprobs\":[]");
	ev_close(b, f);
	ev_open(b, "response.content_part.done");
	text_where(b, rr);
	jbuf_puts(b, ",\"part\":");
	text_part(b, text, o->len);
	ev_close(b, f);
	ev_open(b, "response.output_item.done");
	jbuf_puts(b, ",\"output_index\":0,\"item\":");
	message_obj(b, rr, o->reason ? "incomplete" : "completed", text, o->len);
	ev_close(b, f);
}

static void call_events(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
			const struct agent_output *calls, size_t i, const char *args)
{
	ev_open(b, "response.output_item.added");
	jbuf_printf(b, ",\"output_index\":%zu,\"item\":", i);
	call_obj(b, rr, calls, i, "in_progress", "");
	ev_close(b, f);
	ev_open(b, "response.function_call_arguments.delta");
	jbuf_printf(b, ",\"item_id\":\"fc_%s_%zu\",\"output_index\":%zu,\"delta\":", hex(rr), i, i);
	str(b, args);
	ev_close(b, f);
	ev_open(b, "response.function_call_arguments.done");
	jbuf_printf(b, ",\"item_id\":\"fc_%s_%zu\",\"output_index\":%zu,\"name\":", hex(rr), i, i);
	str(b, agent_call_name(calls, i));
	jbuf_puts(b, ",\"arguments\":");
	str(b, args);
	ev_close(b, f);
	ev_open(b, "response.output_item.done");
	jbuf_printf(b, ",\"output_index\":%zu,\"item\":", i);
	call_obj(b, rr, calls, i, "completed", args);
	ev_close(b, f);
}

void rsp_sse_calls(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		   const struct agent_output *calls)
{
	struct jbuf args = {0};

	for (size_t i = 0; i <= calls->n; i++) {
		args.len = 0;
		agent_call_args(&args, calls, i);
		call_events(b, f, rr, calls, i, jbuf_cstr(&args) ? args.p : "");
	}
	if (args.oom)
		b->oom = 1;
	jbuf_free(&args);
}

void rsp_sse_end(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		 const struct rsp_out *o)
{
	const char *type = !strcmp(o->status, "failed") ? "response.failed" :
			   !strcmp(o->status, "incomplete") ? "response.incomplete" :
			   "response.completed";

	ev_response(b, f, rr, type, o);
}
