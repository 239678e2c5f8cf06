/* Tests for json/mcp.c's JSON-RPC envelope (issue 35):
 *  - a numeric id comes back as the very token sent, never rounded
 *    through a double: 9007199254740993, 1e999, 1.5, -7, 0, 42, -0,
 *    1E+2, each in the result of ping and in an error (-32601), the
 *    top-level id found however its key is written and wherever else
 *    "id" appears;
 *  - a string id is escaped as every string the server writes: U+2028
 *    and U+2029 as \u2028, \u2029, control characters as \u00XX;
 *  - a key given twice anywhere in the body ("method" twice, "id"
 *    twice, a key twice inside params) is -32600 Invalid Request, HTTP
 *    400, id null, naming the key: never the first method's answer;
 *    a body that is no JSON stays -32700.
 * Every body sits right before a PROT_NONE page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/mcp.h"
#include "json/registry.h"
#include "tests/guard.h"
#include "tests/tap.h"

static struct registry reg;
static const struct mcp_headers no_headers;

/* The body's answer as the handler builds it: the method's result, or
 * the error body; 0 when mcp_parse took the body. */
static int answer(const char *body, struct jbuf *out, struct mcp_error *e)
{
	struct guarded g;
	struct mcp_msg m;
	size_t len = strlen(body);
	int rc;

	memset(e, 0, sizeof *e);
	rc = mcp_parse(guard_copy(&g, body, len), len, &no_headers, &m, e);
	if (rc == 0 && mcp_answer_method(out, &m, &reg, "0-test", e) < 0)
		rc = 1;
	if (rc)
		mcp_error_body(out, m.id, e);
	mcp_free(&m);
	guard_free(&g);
	jbuf_cstr(out);
	return rc;
}

/* ping with the id token `id`: the result echoes it byte for byte, as
 * does the error of an unknown method */
static void id_echo(const char *id)
{
	char body[256], want[256];
	struct jbuf out = {0};
	struct mcp_error e;
	int rc;

	snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}", id);
	snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", id);
	rc = answer(body, &out, &e);
	if (!tap_ok(rc == 0 && out.p && !strcmp(out.p, want), "id %s: ping answers with it as sent",
		    id))
		tap_diag("rc %d: %s (want %s)", rc, out.p ? out.p : "(none)", want);
	jbuf_free(&out);
	snprintf(body, sizeof body, "{\"id\":%s,\"jsonrpc\":\"2.0\",\"method\":\"nope/x\"}", id);
	snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,", id);
	rc = answer(body, &out, &e);
	if (!tap_ok(rc == 1 && out.p && !strncmp(out.p, want, strlen(want)),
		    "id %s: an unknown method's error carries it as sent", id))
		tap_diag("rc %d: %s (want %s...)", rc, out.p ? out.p : "(none)", want);
	jbuf_free(&out);
}

/* a string id: `sent` as the body writes it, `echoed` as the answer must */
static void id_string(const char *name, const char *sent, const char *echoed)
{
	char body[256], want[256];
	struct jbuf out = {0};
	struct mcp_error e;
	int rc;

	snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}", sent);
	snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}", echoed);
	rc = answer(body, &out, &e);
	if (!tap_ok(rc == 0 && out.p && !strcmp(out.p, want), "string id %s: echoed escaped", name))
		tap_diag("rc %d: %s (want %s)", rc, out.p ? out.p : "(none)", want);
	jbuf_free(&out);
}

/* a body whose top-level id the token finder must tell from look-alikes */
static void id_found(const char *name, const char *body, const char *id)
{
	struct jbuf out = {0};
	struct mcp_error e;
	char want[64];
	int rc = answer(body, &out, &e);

	snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", id);
	if (!tap_ok(rc == 0 && out.p && !strcmp(out.p, want), "id %s: %s", id, name))
		tap_diag("rc %d: %s (want %s)", rc, out.p ? out.p : "(none)", want);
	jbuf_free(&out);
}

/* a body that gives a key twice: -32600, 400, id null, the key named */
static void dup_key(const char *name, const char *body, const char *key)
{
	struct jbuf out = {0};
	struct mcp_error e;
	char want[64];
	int rc = answer(body, &out, &e);

	snprintf(want, sizeof want, "the key \\\"%s\\\" twice", key);
	if (!tap_ok(rc == -1 && e.code == MCP_INVALID_REQUEST && e.http_status == 400 && out.p &&
		    !strncmp(out.p, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,", 49) &&
		    strstr(out.p, want), "%s: -32600, 400, id null, naming \"%s\"", name, key))
		tap_diag("rc %d code %d status %d: %s", rc, e.code, e.http_status,
			 out.p ? out.p : "(none)");
	jbuf_free(&out);
}

int main(void)
{
	struct jbuf out = {0};
	struct mcp_error e;

	if (reg_init(&reg) < 0)
		abort();
	/* 2^53 + 1: a double makes it 9007199254740992, cJSON prints 9.00719925474099e+15 */
	id_echo("9007199254740993");
	/* no double holds it: cJSON prints null */
	id_echo("1e999");
	id_echo("-1e999");
	id_echo("1.5");
	id_echo("-7");
	id_echo("0");
	id_echo("42");
	id_echo("-0");
	id_echo("1E+2");
	id_echo("123456789012345678901234567890");
	id_found("the key written \\u0069d, spaces around the token",
		 "{\"jsonrpc\":\"2.0\",\"\\u0069d\" :  77 \n,\"method\":\"ping\"}", "77");
	id_found("an \"id\" in params and in a string before it",
		 "\xEF\xBB\xBF {\"params\":{\"id\":5,\"a\":[{\"id\":4}]},\"x\":\"\\\"id\\\":9,\","
		 "\"jsonrpc\":\"2.0\",\"id\":-6.25e-1,\"method\":\"ping\"}", "-6.25e-1");
	id_string("with U+2028", "a\xE2\x80\xA8z", "a\\u2028z");
	id_string("with \\u2029 escaped", "a\\u2029z", "a\\u2029z");
	id_string("with a control character", "a\\u0001z", "a\\u0001z");
	id_string("with a quote and a backslash", "a\\\"\\\\z", "a\\\"\\\\z");
	id_string("plain", "req-1", "req-1");
	dup_key("\"method\" twice (ping, then tools/call)",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"run_code\",\"arguments\":{\"language\":\"python\",\"code\":\"1\"}}}",
	    "method");
	dup_key("\"id\" twice", "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", "id");
	dup_key("\"method\" and \"m\\u0065thod\"",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"m\\u0065thod\":\"tools/list\"}",
	    "method");
	dup_key("a key twice in params.arguments",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\","
	    "\"arguments\":{\"language\":\"python\",\"code\":\"1\",\"code\":\"2\"}}}", "code");
	tap_ok(answer("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", &out, &e) == -1 &&
	       e.code == MCP_PARSE_ERROR, "a body that is no JSON: still -32700");
	jbuf_free(&out);
	tap_ok(answer("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":{\"x\":1},"
		      "\"b\":{\"x\":1}}}", &out, &e) == 0,
	       "the same key in different objects: answered");
	jbuf_free(&out);
	reg_free(&reg);
	return tap_done();
}
