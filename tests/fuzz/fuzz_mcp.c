/* libFuzzer target for the MCP face (json/mcp.c). Byte 0 picks the
 * headers: bits 0-2 the MCP-Protocol-Version (absent, one of
 * mcp_versions[], an unserved revision, or empty), bits 3-4 Mcp-Method
 * (absent, tools/call, initialize, empty), bits 5-6 Mcp-Name (absent,
 * run_code, run_markdown, empty); every value an exact-size heap copy.
 * The rest is the JSON-RPC body, copied to an exact-size heap buffer.
 * It goes through mcp_parse, then as handler/mcp.c takes it: tools/call
 * to mcp_tool_request and the chat body to req_parse, any other method
 * to mcp_answer_method. Besides the sanitizers it checks:
 *  - every failure: a code among the MCP_* ones, a non-empty
 *    NUL-terminated message, HTTP status 200 or 400 (503 is memory
 *    running out, which an input this small never makes happen: after
 *    the precheck cJSON can only fail for memory); -32700 only from
 *    mcp_parse; the error body (mcp_error_body) valid UTF-8 JSON whose
 *    id is the request's;
 *  - mcp_parse: m->id, when set, the JSON text of a string or number;
 *    on success a method, params an object or absent, m->version a
 *    served revision or the header's;
 *  - mcp_answer_method: 0 with an envelope that is a valid UTF-8,
 *    NUL-free JSON object, jsonrpc "2.0", the request's id and a result
 *    object; or -1 -32601 (status 200) for any other method;
 *  - mcp_tool_request: 0 with a chat body that is a JSON object with a
 *    model and messages, which req_parse accepts or refuses with
 *    400/403/413 and a message (503 only as server_overloaded); a
 *    run_code body it accepts is one block of the language asked,
 *    whose code is the code given; 1 with a non-empty reason and no
 *    body; -1 -32602 (status 200) and no body. */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/mcp.h"
#include "json/request.h"
#include "tests/fuzz/common.h"

static const struct req_limits lim = {
	.max_blocks = 16, .max_skipped = 4,
	.max_files = 4, .max_file_bytes = 1024, .max_files_bytes = 2048,
};

/* The header's value as an exact-size copy (kept in *own to free). */
static void header(const char *v, char **own, const char **ret, size_t *len)
{
	*own = v ? fuzz_copy(v, strlen(v)) : NULL;
	*ret = *own;
	*len = v ? strlen(v) : 0;
}

static int served(const char *v)
{
	for (size_t i = 0; mcp_versions[i]; i++)
		if (!strcmp(v, mcp_versions[i]))
			return 1;
	return 0;
}

/* A JSON-RPC envelope: a valid UTF-8, NUL-free JSON object with
 * jsonrpc "2.0", the request's id, and a "result" or "error" object. */
/* Two ids the same: cJSON_Compare, but for infinity (an id of 1e999,
 * echoed as sent), which it calls unequal to itself. */
static int same_id(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b) && isinf(a->valuedouble))
		return isinf(b->valuedouble) &&
		       signbit(a->valuedouble) == signbit(b->valuedouble);
	return cJSON_Compare(a, b, 1);
}

static void check_envelope(const struct jbuf *b, const char *id, const char *member)
{
	cJSON *j, *jid, *want;

	CHECK(!b->oom && b->p && b->len);
	CHECK(memchr(b->p, '\0', b->len) == NULL);
	CHECK(jstr_utf8_valid(b->p, b->len));
	j = cJSON_ParseWithLength(b->p, b->len);
	CHECK(j && cJSON_IsObject(j));
	CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "jsonrpc")));
	CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(j, "jsonrpc")->valuestring, "2.0"));
	CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, member)));
	jid = cJSON_GetObjectItemCaseSensitive(j, "id");
	want = cJSON_Parse(id ? id : "null");
	CHECK(jid && want && same_id(jid, want));
	cJSON_Delete(want);
	cJSON_Delete(j);
}

static void check_error(const struct mcp_msg *m, const struct mcp_error *e)
{
	struct jbuf b = {0};

	CHECK(e->code == MCP_PARSE_ERROR || e->code == MCP_INVALID_REQUEST ||
	      e->code == MCP_METHOD_NOT_FOUND || e->code == MCP_INVALID_PARAMS ||
	      e->code == MCP_INTERNAL_ERROR || e->code == MCP_SERVER_ERROR ||
	      e->code == MCP_HEADER_MISMATCH || e->code == MCP_UNSUPPORTED_VERSION);
	CHECK(memchr(e->message, '\0', sizeof e->message) != NULL);
	CHECK(e->message[0] != '\0');
	CHECK(e->http_status == 200 || e->http_status == 400);
	mcp_error_body(&b, m->id, e);
	check_envelope(&b, m->id, "error");
	jbuf_free(&b);
}

static void check_parsed(const struct mcp_msg *m, const struct mcp_headers *h)
{
	CHECK(m->root && m->method);
	CHECK(!m->params || cJSON_IsObject(m->params));
	CHECK((m->id == NULL) == (m->notification != 0));
	CHECK(memchr(m->version, '\0', sizeof m->version) != NULL);
	if (m->version[0])
		CHECK(served(m->version) ||
		      (h->version && strlen(m->version) == h->version_len &&
		       !memcmp(m->version, h->version, h->version_len)));
	if (h->version)
		CHECK(m->version[0]);
}

/* The chat body of a tools/call: a JSON object that req_parse reads. */
static void check_chat(const struct mcp_msg *m, const char *body)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
	struct chat_request r;
	struct req_error e;
	cJSON *j = cJSON_Parse(body);
	int rc;

	CHECK(j && cJSON_IsObject(j));
	CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model")));
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages")));
	cJSON_Delete(j);
	CHECK(jstr_utf8_valid(body, strlen(body)));
	rc = req_parse(body, strlen(body), fuzz_registry(), &lim, &r, &e);
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(e.status == 400 || e.status == 403 || e.status == 413 || e.status == 503);
		CHECK((e.status == 503) == (e.code && !strcmp(e.code, "server_overloaded")));
		CHECK(e.type && e.message[0]);
		CHECK(memchr(e.message, '\0', sizeof e.message) != NULL);
		return;
	}
	CHECK(r.nblocks >= 1 && r.blocks);
	if (!strcmp(name->valuestring, "run_code")) {
		/* one fence, nothing inside it can close it */
		const char *lang = cJSON_GetObjectItemCaseSensitive(args, "language")->valuestring;
		const char *code = cJSON_GetObjectItemCaseSensitive(args, "code")->valuestring;
		size_t n = strlen(code), got = r.blocks[0].code_len;

		CHECK(r.nblocks == 1);
		CHECK(r.blocks[0].interp == reg_lookup(fuzz_registry(), lang, strlen(lang)));
		if (n && code[n - 1] == '\n')
			n--;
		if (got && r.blocks[0].code[got - 1] == '\n')
			got--;
		CHECK(got == n && !memcmp(r.blocks[0].code, code, n));
	}
	req_free(&r);
}

static void tool_call(const struct mcp_msg *m)
{
	struct mcp_error e;
	char *body = (char *)1, why[512];
	int rc;

	memset(why, 0x55, sizeof why);
	rc = mcp_tool_request(m, fuzz_registry(), &body, why, sizeof why, &e);
	CHECK(rc == 0 || rc == 1 || rc == -1);
	if (rc < 0) {
		CHECK(body == NULL);
		CHECK(e.code == MCP_INVALID_PARAMS);
		check_error(m, &e);
	} else if (rc > 0) {
		CHECK(body == NULL);
		CHECK(memchr(why, '\0', sizeof why) != NULL && why[0]);
	} else {
		CHECK(body != NULL);
		check_chat(m, body);
		free(body);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { NULL, "tools/call", "initialize", "" };
	static const char *const names[] = { NULL, "run_code", "run_markdown", "" };
	struct mcp_headers h;
	struct mcp_msg m;
	struct mcp_error e;
	const char *v;
	char *body, *hv, *hm, *hn;
	size_t n;
	int rc;

	if (size == 0)
		return 0;
	switch (data[0] & 7) {
	case 0: case 1: v = NULL; break;
	case 6: v = "2024-11-05"; break;
	case 7: v = ""; break;
	default: v = mcp_versions[(data[0] & 7) - 2]; break;
	}
	header(v, &hv, &h.version, &h.version_len);
	header(methods[(data[0] >> 3) & 3], &hm, &h.method, &h.method_len);
	header(names[(data[0] >> 5) & 3], &hn, &h.name, &h.name_len);
	n = size - 1;
	body = fuzz_copy(data + 1, n);

	memset(&e, 0, sizeof e);
	rc = mcp_parse(body, n, &h, &m, &e);
	CHECK(rc == 0 || rc == -1);
	if (m.id) {
		cJSON *id = cJSON_Parse(m.id);

		CHECK(id && (cJSON_IsString(id) || cJSON_IsNumber(id)));
		cJSON_Delete(id);
	}
	if (rc < 0) {
		check_error(&m, &e);
	} else {
		check_parsed(&m, &h);
		if (!strcmp(m.method, "tools/call")) {
			tool_call(&m);
		} else {
			struct jbuf b = {0};

			memset(&e, 0, sizeof e);
			rc = mcp_answer_method(&b, &m, fuzz_registry(), "0.0-fuzz", &e);
			CHECK(rc == 0 || rc == -1);
			if (rc == 0) {
				check_envelope(&b, m.id, "result");
			} else {
				CHECK(e.code == MCP_METHOD_NOT_FOUND && e.http_status == 200);
				check_error(&m, &e);
			}
			jbuf_free(&b);
		}
	}
	mcp_free(&m);
	CHECK(m.root == NULL && m.id == NULL);
	free(body);
	free(hv);
	free(hm);
	free(hn);
	return 0;
}
