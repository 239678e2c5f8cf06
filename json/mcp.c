/* MCP over streamable HTTP, stateless (json/mcp.h). Every request
 * stands alone: initialize mints no session, a request may come without
 * it, and the revision a request declares (the MCP-Protocol-Version
 * header, initialize's protocolVersion, 2026-07-28's per-request
 * _meta) is checked on that request alone. */
#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/mcp.h"
#include "json/precheck.h"
#include "json/sha256.h"
#include "sandbox/result.h"

const char *const mcp_versions[] = {
	"2025-03-26", "2025-06-18", MCP_V_HANDSHAKE, MCP_V_STATELESS, NULL,
};

#define META_VERSION "io.modelcontextprotocol/protocolVersion"

static int supported(const char *v)
{
	for (size_t i = 0; mcp_versions[i]; i++)
		if (!strcmp(v, mcp_versions[i]))
			return 1;
	return 0;
}

static int supported_n(const char *v, size_t n)
{
	for (size_t i = 0; mcp_versions[i]; i++)
		if (strlen(mcp_versions[i]) == n && !memcmp(v, mcp_versions[i], n))
			return 1;
	return 0;
}

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s, strlen(s));
}

__attribute__((format(printf, 4, 5)))
static int fail(struct mcp_error *e, int http_status, int code, const char *fmt, ...)
{
	va_list ap;

	e->http_status = http_status;
	e->code = code;
	e->requested = NULL;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* The body as one JSON value: -32700 when it is no JSON, -32600 when
 * it is no request object (a batch too: not supported) or one that
 * gives a key twice: RFC 8259's grammar allows that, so the text is
 * JSON, but readers differ on which one counts (cJSON the first, most
 * others the last), so no one request can be read from it. */
static int parse_body(const char *body, size_t len, struct mcp_msg *m, struct mcp_error *e)
{
	struct precheck pc;

	if (precheck_json_unique(body, len, &pc) < 0) {
		if (pc.problem == PRECHECK_MEMORY)
			return fail(e, 503, MCP_INTERNAL_ERROR, "the server is out of memory; retry");
		if (pc.problem == PRECHECK_DUPLICATE)
			return fail(e, 400, MCP_INVALID_REQUEST, "Invalid Request: the body %s",
				    pc.message);
		return fail(e, 400, MCP_PARSE_ERROR, "Parse error: the body %s", pc.message);
	}
	m->root = cJSON_ParseWithLength(body, len);
	if (!m->root)
		return fail(e, 503, MCP_INTERNAL_ERROR, "the server is out of memory; retry");
	if (cJSON_IsArray(m->root))
		return fail(e, 400, MCP_INVALID_REQUEST,
			    "Invalid Request: batches are not supported; send one request per POST");
	if (!cJSON_IsObject(m->root))
		return fail(e, 400, MCP_INVALID_REQUEST,
			    "Invalid Request: the body must be a JSON-RPC request object");
	return 0;
}

/* The id as the answers write it: a number as the very token the body
 * holds (the pre-check made it one of RFC 8259's, digits, sign, point
 * and exponent only), so 9007199254740993 or 1e999 come back as sent,
 * never rounded through a double; a string escaped as every string the
 * server writes (jstr_escape: U+2028 and U+2029 as \u2028, \u2029).
 * -1 when memory ran out. */
static int take_id(struct mcp_msg *m, const cJSON *id, const char *body, size_t len)
{
	struct jbuf b = {0};
	size_t at, n;

	if (cJSON_IsNumber(id) && precheck_member(body, len, "id", &at, &n) == 0)
		jbuf_append(&b, body + at, n);
	else if (cJSON_IsString(id))
		jstr_escape(&b, id->valuestring, strlen(id->valuestring));
	else
		jbuf_puts(&b, "null");	/* never: the body passed the check */
	if (!jbuf_cstr(&b)) {
		jbuf_free(&b);
		return -1;
	}
	m->id = b.p;
	return 0;
}

/* jsonrpc "2.0", a string method, an id that is a string or a number
 * (or none: a notification), params an object when present. */
static int read_envelope(struct mcp_msg *m, const char *body, size_t len, struct mcp_error *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m->root, "method");

	if (id && (cJSON_IsString(id) || cJSON_IsNumber(id)) && take_id(m, id, body, len) < 0)
		return fail(e, 503, MCP_INTERNAL_ERROR, "the server is out of memory; retry");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0"))
		return fail(e, 400, MCP_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
	if (id && !m->id)
		return fail(e, 400, MCP_INVALID_REQUEST,
			    "Invalid Request: \"id\" must be a string or a number");
	if (!cJSON_IsString(method)) {
		if (cJSON_GetObjectItemCaseSensitive(m->root, "result") ||
		    cJSON_GetObjectItemCaseSensitive(m->root, "error"))
			return fail(e, 400, MCP_INVALID_REQUEST,
				    "Invalid Request: this server sends no requests to answer");
		return fail(e, 400, MCP_INVALID_REQUEST,
			    "Invalid Request: \"method\" must be a string");
	}
	m->method = method->valuestring;
	m->notification = !id;
	m->params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
	if (m->params && !cJSON_IsObject(m->params))
		return fail(e, m->notification ? 400 : 200, MCP_INVALID_PARAMS,
			    "Invalid params: \"params\" must be an object");
	return 0;
}

static int header_is(const char *v, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(v, s, n);
}

static int unsupported(struct mcp_error *e, const char *v, size_t n)
{
	fail(e, 400, MCP_UNSUPPORTED_VERSION,
	     "Unsupported protocol version: %.*s (supported: 2025-03-26, 2025-06-18, "
	     MCP_V_HANDSHAKE ", " MCP_V_STATELESS ")", (int)(n > 64 ? 64 : n), v);
	return -1;
}

/* The body's declared revision: initialize's protocolVersion (which
 * only asks: an unsupported one is answered with ours), else _meta's. */
static const char *body_version(const struct mcp_msg *m, int *negotiable)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, META_VERSION);

	*negotiable = 0;
	if (!strcmp(m->method, "initialize")) {
		*negotiable = 1;
		v = cJSON_GetObjectItemCaseSensitive(m->params, "protocolVersion");
	}
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The revision the request declares: the header must name one served
 * and agree with the body's; a per-request _meta version must be
 * served; Mcp-Method and Mcp-Name, when sent, must mirror the body. */
static int check_versions(struct mcp_msg *m, const struct mcp_headers *h, struct mcp_error *e)
{
	int negotiable;
	const char *bv = body_version(m, &negotiable);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");

	if (h->version && !supported_n(h->version, h->version_len))
		return unsupported(e, h->version, h->version_len);
	if (h->version && bv && !header_is(h->version, h->version_len, bv))
		return fail(e, 400, MCP_HEADER_MISMATCH,
			    "Header mismatch: MCP-Protocol-Version says %.*s, the body %.64s",
			    (int)h->version_len, h->version, bv);
	if (bv && !negotiable && !supported(bv))
		return unsupported(e, bv, strlen(bv));
	if (h->method && !header_is(h->method, h->method_len, m->method))
		return fail(e, 400, MCP_HEADER_MISMATCH,
			    "Header mismatch: Mcp-Method does not name the body's method");
	if (h->name && !(cJSON_IsString(name) &&
			 header_is(h->name, h->name_len, name->valuestring)))
		return fail(e, 400, MCP_HEADER_MISMATCH,
			    "Header mismatch: Mcp-Name does not name the body's params.name");
	if (bv && supported(bv))
		snprintf(m->version, sizeof m->version, "%s", bv);
	else if (h->version)
		snprintf(m->version, sizeof m->version, "%.*s", (int)h->version_len, h->version);
	return 0;
}

int mcp_parse(const char *body, size_t len, const struct mcp_headers *h,
	      struct mcp_msg *m, struct mcp_error *e)
{
	memset(m, 0, sizeof *m);
	if (parse_body(body, len, m, e) < 0 || read_envelope(m, body, len, e) < 0)
		return -1;
	return check_versions(m, h, e);
}

void mcp_free(struct mcp_msg *m)
{
	cJSON_Delete(m->root);
	free(m->id);
	m->root = NULL;
	m->id = NULL;
}

/* ---- answers ---------------------------------------------------------- */

static const char *id_of(const struct mcp_msg *m)
{
	return m && m->id ? m->id : "null";
}

/* {"jsonrpc":"2.0","id":…,"result":{ and, for a 2026-07-28 request,
 * "resultType":"complete" (then a comma unless the result is empty). */
static void result_open(struct jbuf *b, const struct mcp_msg *m, int empty)
{
	jbuf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{", id_of(m));
	if (!strcmp(m->version, MCP_V_STATELESS))
		jbuf_puts(b, empty ? "\"resultType\":\"complete\"" : "\"resultType\":\"complete\",");
}

void mcp_error_body(struct jbuf *b, const char *id, const struct mcp_error *e)
{
	jbuf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":",
		    id ? id : "null", e->code);
	str(b, e->message);
	if (e->code == MCP_UNSUPPORTED_VERSION) {
		jbuf_puts(b, ",\"data\":{\"supported\":[");
		for (size_t i = 0; mcp_versions[i]; i++)
			jbuf_printf(b, "%s\"%s\"", i ? "," : "", mcp_versions[i]);
		jbuf_puts(b, "]}");
	}
	jbuf_puts(b, "}}");
}

void mcp_server_error(struct jbuf *b, const char *id, const char *message, int status,
		      const char *code)
{
	jbuf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":",
		    id ? id : "null", MCP_SERVER_ERROR);
	str(b, message);
	jbuf_printf(b, ",\"data\":{\"status\":%d,\"code\":", status);
	str(b, code ? code : "");
	jbuf_puts(b, "}}}");
}

static void server_info(struct jbuf *b, const char *server_version)
{
	jbuf_puts(b, "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"codellm\","
		  "\"title\":\"codellm sandboxed code executor\",\"version\":");
	str(b, server_version);
	jbuf_puts(b, "},\"instructions\":\"run_code runs one program in a sandbox and returns "
		  "its stdout; run_markdown runs the fenced code blocks of a markdown text as a "
		  "pipeline, each block's stdout feeding the next one's stdin. Nothing is kept "
		  "between calls; files written under out/ (the code makes the directory: mkdir -p "
		  "out) come back with the result.\"");
}

/* initialize: the revision asked when served, else the newest one with
 * a handshake; never a session. */
static void initialize(struct jbuf *b, const struct mcp_msg *m, const char *server_version)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(m->params, "protocolVersion");
	const char *v = cJSON_IsString(pv) && supported(pv->valuestring) ?
			pv->valuestring : MCP_V_HANDSHAKE;

	result_open(b, m, 0);
	jbuf_printf(b, "\"protocolVersion\":\"%s\",", v);
	server_info(b, server_version);
	jbuf_puts(b, "}}");
}

/* server/discover (2026-07-28): what initialize says, with every
 * revision served. */
static void discover(struct jbuf *b, const struct mcp_msg *m, const char *server_version)
{
	jbuf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\","
		    "\"supportedVersions\":[", id_of(m));
	for (size_t i = 0; mcp_versions[i]; i++)
		jbuf_printf(b, "%s\"%s\"", i ? "," : "", mcp_versions[i]);
	jbuf_puts(b, "],");
	server_info(b, server_version);
	jbuf_puts(b, "}}");
}

static const char OPTIONAL_PROPS[] =
	"\"stdin\":{\"type\":\"string\",\"description\":\"Standard input of the first "
	"block (default: empty).\"},\"timeout_s\":{\"type\":\"number\",\"exclusiveMinimum\":0,"
	"\"description\":\"Lowers the run's wall-clock timeout (never raises the server's).\"}";

static void tools_list(struct jbuf *b, const struct mcp_msg *m, const struct registry *reg)
{
	int first = 1;

	result_open(b, m, 0);
	jbuf_puts(b, "\"tools\":[{\"name\":\"run_code\",\"title\":\"Run code\",\"description\":"
		  "\"Runs a program in a fresh sandbox (no network, nothing kept) and returns "
		  "its stdout. Files it writes under out/ (it makes the directory: mkdir -p out) "
		  "come back as images or embedded resources.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"language\":"
		  "{\"type\":\"string\",\"enum\":[");
	for (size_t i = 0; i < reg->n; i++)
		if (reg->v[i].allowed) {
			jbuf_puts(b, first ? "" : ",");
			str(b, reg->v[i].name);
			first = 0;
		}
	jbuf_puts(b, "]},\"code\":{\"type\":\"string\",\"description\":\"The program's "
		  "source.\"},");
	jbuf_puts(b, OPTIONAL_PROPS);
	jbuf_puts(b, "},\"required\":[\"language\",\"code\"],\"additionalProperties\":false},"
		  "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
		  "{\"name\":\"run_markdown\",\"title\":\"Run markdown\",\"description\":"
		  "\"Runs the fenced code blocks of a markdown text (```python, ```bash, ...) "
		  "as a pipeline, each in its own sandbox, block i's stdout feeding block i+1's "
		  "stdin, exactly as codellm runs a chat message; returns the last block's "
		  "stdout. Unlabeled fences and other labels are skipped.\",\"inputSchema\":"
		  "{\"type\":\"object\",\"properties\":{\"markdown\":{\"type\":\"string\","
		  "\"description\":\"Markdown holding fenced code blocks.\"},\"input\":{"
		  "\"description\":\"Any JSON value, written to the file $FLEET_INPUT "
		  "(fleet_input.json) as JSON.\"},");
	jbuf_puts(b, OPTIONAL_PROPS);
	jbuf_puts(b, "},\"required\":[\"markdown\"],\"additionalProperties\":false},"
		  "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}]}}");
}

int mcp_answer_method(struct jbuf *b, const struct mcp_msg *m, const struct registry *reg,
		      const char *server_version, struct mcp_error *e)
{
	if (!strcmp(m->method, "initialize"))
		initialize(b, m, server_version);
	else if (!strcmp(m->method, "server/discover"))
		discover(b, m, server_version);
	else if (!strcmp(m->method, "ping")) {
		result_open(b, m, 1);
		jbuf_puts(b, "}}");
	} else if (!strcmp(m->method, "tools/list"))
		tools_list(b, m, reg);
	else
		return fail(e, 200, MCP_METHOD_NOT_FOUND, "Method not found: %.200s", m->method);
	return 0;
}

/* ---- tools/call → a chat request ---------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int refuse_call(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return 1;
}

/* The arguments a tool takes, each checked: 0, or 1 with *why. */
static int check_args(const cJSON *args, const char *const *known, char *why, size_t whylen)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, args) {
		size_t i = 0;

		while (known[i] && strcmp(known[i], a->string))
			i++;
		if (!known[i])
			return refuse_call(why, whylen, "unknown argument \"%.64s\"", a->string);
		if ((!strcmp(a->string, "stdin") || !strcmp(a->string, "code") ||
		     !strcmp(a->string, "language") || !strcmp(a->string, "markdown")) &&
		    !cJSON_IsString(a))
			return refuse_call(why, whylen, "argument \"%s\" must be a string",
					   a->string);
		if (!strcmp(a->string, "timeout_s") &&
		    !(cJSON_IsNumber(a) && a->valuedouble > 0 && isfinite(a->valuedouble)))
			return refuse_call(why, whylen, "argument \"timeout_s\" must be a "
					   "positive number of seconds");
	}
	for (size_t i = 0; known[i]; i++)
		if (!strcmp(known[i], "code") || !strcmp(known[i], "language") ||
		    !strcmp(known[i], "markdown"))
			if (!cJSON_GetObjectItemCaseSensitive(args, known[i]))
				return refuse_call(why, whylen, "argument \"%s\" is required",
						   known[i]);
	return 0;
}

static cJSON *add_message(cJSON *messages, const char *name, const char *content)
{
	cJSON *msg = cJSON_CreateObject();

	if (!msg || !cJSON_AddItemToArray(messages, msg) ||
	    !cJSON_AddStringToObject(msg, "role", "user") ||
	    (name && !cJSON_AddStringToObject(msg, "name", name)) ||
	    !cJSON_AddStringToObject(msg, "content", content))
		return NULL;
	return msg;
}

/* The code as one fence of its language, the fence longer than any run
 * of backticks in it: nothing inside can close it. */
static char *fenced(const char *lang, const char *code)
{
	struct jbuf b = {0};
	size_t n = strlen(code), run = 0, longest = 0, ticks;

	for (size_t i = 0; i < n; i++) {
		run = code[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	ticks = longest < 3 ? 3 : longest + 1;
	for (size_t i = 0; i < ticks; i++)
		jbuf_puts(&b, "`");
	jbuf_printf(&b, "%s\n%s%s", lang, code, n && code[n - 1] == '\n' ? "" : "\n");
	for (size_t i = 0; i < ticks; i++)
		jbuf_puts(&b, "`");
	jbuf_puts(&b, "\n");
	if (!jbuf_cstr(&b)) {
		jbuf_free(&b);
		return NULL;
	}
	return b.p;
}

/* The allowed languages, for a refusal's message. */
static void allowed_list(const struct registry *reg, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < reg->n && used < len; i++)
		if (reg->v[i].allowed)
			used += (size_t)snprintf(out + used, len - used, "%s%s",
						 used ? ", " : "", reg->v[i].name);
}

/* run_code: one user message holding one fence; 0, 1 (why), -1 (memory) */
static int code_messages(const cJSON *args, const struct registry *reg, cJSON *messages,
			 char *why, size_t whylen)
{
	static const char *const known[] = { "language", "code", "stdin", "timeout_s", NULL };
	const char *lang, *code;
	const struct interp *in;
	char *text, list[256];
	int rc;

	if (check_args(args, known, why, whylen))
		return 1;
	lang = cJSON_GetObjectItemCaseSensitive(args, "language")->valuestring;
	code = cJSON_GetObjectItemCaseSensitive(args, "code")->valuestring;
	in = reg_lookup(reg, lang, strlen(lang));
	if (!in || !in->allowed) {
		allowed_list(reg, list, sizeof list);
		return refuse_call(why, whylen, "language \"%.64s\" is %s on this server; it "
				   "runs: %s", lang, in ? "not allowed" : "unknown",
				   list[0] ? list : "nothing (code execution is disabled)");
	}
	text = fenced(in->name, code);
	rc = text && add_message(messages, NULL, text) ? 0 : -1;
	free(text);
	return rc;
}

/* run_markdown: the markdown as the code message, input as the bag */
static int markdown_messages(const cJSON *args, cJSON *messages, char *why, size_t whylen)
{
	static const char *const known[] = { "markdown", "input", "stdin", "timeout_s", NULL };
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(args, "input");
	char *bag;
	int rc = 0;

	if (check_args(args, known, why, whylen))
		return 1;
	if (input) {
		bag = cJSON_PrintUnformatted(input);
		rc = bag && add_message(messages, "fleet_input", bag) ? 0 : -1;
		free(bag);
	}
	if (rc == 0 && !add_message(messages, NULL, cJSON_GetObjectItemCaseSensitive(
					    args, "markdown")->valuestring))
		rc = -1;
	return rc;
}

/* stdin and timeout_s, which both tools take */
static int common_fields(const cJSON *args, cJSON *chat, cJSON *messages)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(args, "stdin");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout_s");
	cJSON *ext;

	if (in && !add_message(messages, "stdin", in->valuestring))
		return -1;
	if (t) {
		ext = cJSON_AddObjectToObject(chat, "codellm");
		if (!ext || !cJSON_AddNumberToObject(ext, "timeout_s", t->valuedouble))
			return -1;
	}
	return 0;
}

int mcp_tool_request(const struct mcp_msg *m, const struct registry *reg, char **body,
		     char *why, size_t whylen, struct mcp_error *e)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
	cJSON *chat, *messages;
	int rc;

	*body = NULL;
	if (!cJSON_IsString(name))
		return fail(e, 200, MCP_INVALID_PARAMS, "Invalid params: tools/call needs "
			    "\"name\", a string");
	if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))
		return fail(e, 200, MCP_INVALID_PARAMS, "Invalid params: \"arguments\" must "
			    "be an object");
	if (strcmp(name->valuestring, "run_code") && strcmp(name->valuestring, "run_markdown"))
		return fail(e, 200, MCP_INVALID_PARAMS, "Unknown tool: %.200s (tools/list "
			    "names run_code and run_markdown)", name->valuestring);
	chat = cJSON_CreateObject();
	messages = chat ? cJSON_AddArrayToObject(chat, "messages") : NULL;
	if (!messages || !cJSON_AddStringToObject(chat, "model", "codellm"))
		rc = -1;
	else if (!strcmp(name->valuestring, "run_code"))
		rc = code_messages(args, reg, messages, why, whylen);
	else
		rc = markdown_messages(args, messages, why, whylen);
	if (rc == 0)
		rc = common_fields(args, chat, messages);
	if (rc == 0 && !(*body = cJSON_PrintUnformatted(chat)))
		rc = -1;
	cJSON_Delete(chat);
	if (rc < 0)
		return fail(e, 503, MCP_INTERNAL_ERROR, "the server is out of memory; retry");
	return rc;
}

/* ---- a run as a tool result ------------------------------------------- */

static int run_failed(const struct sbx_result *res)
{
	return res->exit_code != 0 || res->end != SBX_END_NORMAL || res->out_truncated;
}

/* For the model reading the result: why it failed, and the deciding
 * block's stderr, its last 2000 bytes. */
static void failure_text(struct jbuf *b, const struct resp_run *rr)
{
	const struct sbx_result *res = rr->res;
	struct jbuf t = {0};
	const struct sbx_block_result *br = res->n ? &res->res[res->decider] : NULL;
	size_t keep = br && br->err.len > 2000 ? 2000 : br ? br->err.len : 0;

	if (res->end == SBX_END_TIMEOUT)
		jbuf_printf(&t, "codellm: the run timed out after %g s", res->timeout_s);
	else if (res->out_truncated)
		jbuf_printf(&t, "codellm: stdout passed the cap of %zu bytes and was cut",
			    res->max_stdout);
	else if (res->end == SBX_END_SIGNAL)
		jbuf_printf(&t, "codellm: the run was ended by signal %d", res->end_signal);
	else
		jbuf_printf(&t, "codellm: block %zu (%s) exited with status %d", res->decider,
			    rr->req->blocks[res->decider].interp->name, res->exit_code);
	if (keep) {
		jbuf_puts(&t, "; its stderr ends:\n");
		jbuf_append(&t, br->err.p + br->err.len - keep, keep);
	}
	jbuf_puts(b, ",{\"type\":\"text\",\"text\":");
	jstr_escape(b, t.p ? t.p : "", t.len);
	jbuf_puts(b, "}");
	jbuf_free(&t);
}

static int is_image(const char *mime)
{
	return !strncmp(mime, "image/", 6) && strcmp(mime, "image/svg+xml");
}

/* file:///work/NAME, the name percent-encoded but for '/' */
static void file_uri(struct jbuf *b, const char *name)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789-._~/";

	jbuf_puts(b, "\"file:///work/");
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (strchr(safe, *p))
			jbuf_append(b, p, 1);
		else
			jbuf_printf(b, "%%%02X", *p);
	jbuf_puts(b, "\"");
}

/* An image part per image artifact, an embedded resource per other
 * file; a file without its bytes (too large, too many) has none. */
static void artifact_parts(struct jbuf *b, const struct sbx_artifacts *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		const struct sbx_artifact *a = &f->v[i];
		const char *mime = resp_mime(a->name);

		if (!a->data)
			continue;
		if (is_image(mime)) {
			jbuf_printf(b, ",{\"type\":\"image\",\"mimeType\":\"%s\",\"data\":\"", mime);
			jstr_base64(b, a->data, a->len);
			jbuf_puts(b, "\"}");
			continue;
		}
		jbuf_puts(b, ",{\"type\":\"resource\",\"resource\":{\"uri\":");
		file_uri(b, a->name);
		jbuf_printf(b, ",\"mimeType\":\"%s\",\"blob\":\"", mime);
		jstr_base64(b, a->data, a->len);
		jbuf_puts(b, "\"}}");
	}
}

void mcp_tool_result(struct jbuf *b, const struct mcp_msg *m, const struct resp_run *rr)
{
	const struct sbx_result *res = rr->res;
	struct resp_run bare = *rr;
	size_t at;

	result_open(b, m, 0);
	jbuf_puts(b, "\"content\":[{\"type\":\"text\",\"text\":");
	jstr_escape(b, res->out.p ? res->out.p : "", res->out.len);
	jbuf_puts(b, "}");
	if (run_failed(res))
		failure_text(b, rr);
	artifact_parts(b, rr->files);
	jbuf_puts(b, "],\"structuredContent\":");
	/* the codellm object, its files without their bytes */
	bare.files = NULL;
	at = b->len;
	resp_codellm(b, &bare);
	if (!b->oom && b->len > at && b->p[b->len - 1] == '}') {
		b->len--;
		resp_files(b, rr->files, 0);	/* the bytes are in the content parts */
		jbuf_puts(b, "}");
	}
	jbuf_printf(b, ",\"isError\":%s}}", run_failed(res) ? "true" : "false");
}

void mcp_tool_refused(struct jbuf *b, const struct mcp_msg *m, const char *code,
		      const char *message)
{
	result_open(b, m, 0);
	jbuf_puts(b, "\"content\":[{\"type\":\"text\",\"text\":");
	str(b, message);
	jbuf_puts(b, "}],\"structuredContent\":{\"error\":{\"code\":");
	str(b, code);
	jbuf_puts(b, ",\"message\":");
	str(b, message);
	jbuf_puts(b, "}},\"isError\":true}}");
}
