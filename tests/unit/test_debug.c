/* Tests for the debug surface's library parts (SPEC §8): json/debug.c
 * (base64, form-encoded query parameters, the three answers), the debug
 * request readers of json/request.c (req_from_markdown, dbg_parse)
 * and http_host_is_loopback. Inputs sit before PROT_NONE guard pages. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "json/debug.h"
#include "json/request.h"
#include "tests/guard.h"
#include "tests/tap.h"
#include "http/target.h"
#include "tests/debug-query.h"


/* ---- base64: RFC 4648 §10 vectors, every byte, long input ------------- */

static void test_base64(void)
{
	static const struct { const char *in, *out; } rows[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "\xff\xfe\xfd", "//79" }, { "\xfb\xff", "+/8=" },
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct guarded g;
		struct jbuf b = {0};
		const char *in = guard_copy(&g, rows[i].in, strlen(rows[i].in));

		jstr_base64(&b, in, strlen(rows[i].in));
		tap_ok(b.len == strlen(rows[i].out) && !memcmp(b.p ? b.p : "", rows[i].out, b.len),
		       "base64 of \"%s\" is \"%s\"", rows[i].in[0] == '\xff' || rows[i].in[0] == '\xfb' ?
		       "(binary)" : rows[i].in, rows[i].out);
		jbuf_free(&b);
		guard_free(&g);
	}
	/* 300 KiB of every byte value: the chunked writer loses nothing and
	 * decodes back (a decoder written independently here) */
	{
		size_t n = 300 * 1024 + 1;
		unsigned char *src = malloc(n), *back = malloc(n);
		struct jbuf b = {0};
		size_t k = 0, ok = 1;

		for (size_t i = 0; i < n; i++)
			src[i] = (unsigned char)(i * 7 + i / 256);
		jstr_base64(&b, src, n);
		tap_ok(b.len == (n + 2) / 3 * 4, "base64 of %zu bytes has %zu characters", n,
		       (n + 2) / 3 * 4);
		for (size_t i = 0; i + 3 < b.len + 3 && i < b.len; i += 4) {
			unsigned v = 0, pad = 0;

			for (int j = 0; j < 4; j++) {
				char c = b.p[i + (size_t)j];
				const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
				const char *at = c == '=' ? NULL : strchr(abc, c);

				if (c == '=')
					pad++;
				else if (!at)
					ok = 0;
				v = v << 6 | (at ? (unsigned)(at - abc) : 0);
			}
			for (unsigned j = 0; j < 3 - pad && k < n; j++)
				back[k++] = (unsigned char)(v >> (16 - 8 * j));
		}
		tap_ok(ok && k == n && !memcmp(src, back, n), "base64 of 300 KiB decodes back");
		jbuf_free(&b);
		free(src);
		free(back);
	}
}

/* ---- query parameters --------------------------------------------------- */

struct q_row {
	const char *target, *name;
	int rc;
	const char *want;
	size_t want_len;	/* 0: strlen(want) */
};

static const struct q_row q_rows[] = {
	{ "/debug/blocks?body=abc", "body", 0, "abc", 0 },
	{ "/debug/blocks?body=a+b%20c", "body", 0, "a b c", 0 },
	{ "/debug/blocks?body=%60%60%60py%0Aprint(1)%0A%60%60%60", "body", 0, "```py\nprint(1)\n```", 0 },
	{ "/debug/blocks?x=1&body=two&body=three", "body", 0, "two", 0 },
	{ "/debug/blocks?bodyx=1&xbody=2&body=ok", "body", 0, "ok", 0 },
	{ "/debug/blocks?body=", "body", 0, "", 0 },
	{ "/debug/blocks?body=a%2B%26b%3D", "body", 0, "a+&b=", 0 },
	{ "/debug/blocks?body=%c3%a9", "body", 0, "\xc3\xa9", 0 },
	{ "/debug/blocks?body=%00x", "body", 0, "\0x", 2 },
	{ "/debug/blocks?body=a#body=b", "body", 0, "a", 0 },
	{ "/debug/blocks#?body=a", "body", -1, NULL, 0 },
	{ "/debug/blocks", "body", -1, NULL, 0 },
	{ "/debug/blocks?", "body", -1, NULL, 0 },
	{ "/debug/blocks?body", "body", -1, NULL, 0 },
	{ "/debug/blocks?Body=a", "body", -1, NULL, 0 },
	{ "/debug/blocks?body=%", "body", -2, NULL, 0 },
	{ "/debug/blocks?body=%4", "body", -2, NULL, 0 },
	{ "/debug/blocks?body=%zz", "body", -2, NULL, 0 },
	{ "/debug/blocks?body=ab%4", "body", -2, NULL, 0 },
	{ "/debug/blocks?body=%41", "body", 0, "A", 0 },
	{ "/debug/blocks?a=%zz&body=fine", "body", 0, "fine", 0 },
};

static void test_query(void)
{
	for (size_t i = 0; i < sizeof q_rows / sizeof q_rows[0]; i++) {
		const struct q_row *r = &q_rows[i];
		struct guarded g;
		const char *t = guard_copy(&g, r->target, strlen(r->target));
		char *v = NULL;
		size_t len = 99;
		size_t wl = r->want ? (r->want_len ? r->want_len : strlen(r->want)) : 0;
		int rc = http_query_param(t, strlen(r->target), r->name, &v, &len);

		if (r->rc == 0)
			tap_ok(rc == 0 && v && len == wl && !memcmp(v, r->want, wl) && v[len] == '\0',
			       "query %s: %s is %zu bytes as expected", r->target, r->name, wl);
		else
			tap_ok(rc == r->rc && v == NULL && len == 0, "query %s: %s gives %d",
			       r->target, r->name, r->rc);
		free(v);
		guard_free(&g);
	}
}

/* ---- Host ----------------------------------------------------------- */

static const struct { const char *host; int want; } host_rows[] = {
	{ "localhost", 1 }, { "localhost:8090", 1 }, { "LOCALHOST:8090", 1 },
	{ "localhost.", 1 }, { "localhost.:8090", 1 }, { "app.localhost:8090", 1 },
	{ "127.0.0.1", 1 }, { "127.0.0.1:8090", 1 }, { "127.1.2.3:1", 1 },
	{ "127.255.255.255", 1 }, { "[::1]", 1 }, { "[::1]:8090", 1 },
	{ "evil.example", 0 }, { "evil.example:8090", 0 }, { "localhost.evil.example", 0 },
	{ "evillocalhost", 0 }, { "xlocalhost:80", 0 }, { ".localhost", 0 },
	{ "128.0.0.1", 0 }, { "127.0.0.256", 0 }, { "127.0.0", 0 }, { "127.0.0.1.5", 0 },
	{ "127.0.0.01234", 0 }, { "0x7f.0.0.1", 0 }, { "2130706433", 0 },
	{ "127.0.0.1:", 0 }, { "[::2]:8090", 0 }, { "[::ffff:127.0.0.1]", 0 },
	{ "", 0 }, { ":8090", 0 }, { "[::1", 0 }, { "::1", 0 }, { "127..0.1", 0 },
	{ "192.0.2.2:8090", 0 }, { "localhost:80x", 0 }, { "a.b-c.localhost", 1 },
	{ "a..localhost", 0 }, { "a&b.localhost", 0 }, { "a b.localhost", 0 },
	{ "a_b.localhost", 0 }, { "..localhost", 0 },
};

static void test_host(void)
{
	for (size_t i = 0; i < sizeof host_rows / sizeof host_rows[0]; i++) {
		struct guarded g;
		const char *h = guard_copy(&g, host_rows[i].host, strlen(host_rows[i].host));

		tap_ok(http_host_is_loopback(h, strlen(host_rows[i].host)) == host_rows[i].want,
		       "Host \"%s\" is %sloopback", host_rows[i].host,
		       host_rows[i].want ? "" : "not ");
		guard_free(&g);
	}
}

/* ---- reading debug requests --------------------------------------------- */

static struct registry reg;
/* --max-blocks 3, --max-skipped-fences 16 */
static const struct req_limits lim3 = { .max_blocks = 3, .max_skipped = 16 };

static int parse(const char *json, enum req_debug what, struct chat_request *r,
		 size_t *block, struct req_error *e)
{
	struct guarded g;
	const char *in = guard_copy(&g, json, strlen(json));
	int rc = dbg_parse(in, strlen(json), &reg, &lim3, what, r, block, e);

	guard_free(&g);
	return rc;
}

#define MD3 "```python\\nprint(1)\\n```\\ntext\\n```text\\nnot code\\n```\\n" \
	"```bash\\ncat\\n```\\n```ruby\\nputs 2\\n```\\n"

struct err_row {
	const char *json;
	enum req_debug what;
	int status;
	const char *code, *param, *msg;
};

static const struct err_row err_rows[] = {
	{ "", REQ_DEBUG_BLOCK, 400, "invalid_json", NULL, "not valid JSON" },
	{ "[]", REQ_DEBUG_BLOCK, 400, "invalid_json", NULL, "must be a JSON object" },
	{ "{} x", REQ_DEBUG_LIST, 400, "invalid_json", NULL, "data after" },
	{ "{\"body\":\"a\\u0000\"}", REQ_DEBUG_LIST, 400, "invalid_json", NULL, "NUL" },
	{ "{}", REQ_DEBUG_LIST, 400, "invalid_value", "body", "\"body\" must be a string" },
	{ "{\"body\":7}", REQ_DEBUG_PIPELINE, 400, "invalid_value", "body", "must be a string" },
	{ "{\"body\":\"" MD3 "\",\"stdin\":5}", REQ_DEBUG_PIPELINE, 400, "invalid_value", "stdin", "must be a string" },
	{ "{\"body\":\"" MD3 "\"}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "integer" },
	{ "{\"body\":\"" MD3 "\",\"block\":-1}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "integer" },
	{ "{\"body\":\"" MD3 "\",\"block\":0.5}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "integer" },
	{ "{\"body\":\"" MD3 "\",\"block\":\"0\"}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "integer" },
	{ "{\"body\":\"" MD3 "\",\"block\":3}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "3 runnable blocks (0..2)" },
	{ "{\"body\":\"" MD3 "\",\"block\":1e30}", REQ_DEBUG_BLOCK, 400, "invalid_value", "block", "integer" },
	{ "{\"body\":\"" MD3 "\",\"block\":0}", REQ_DEBUG_PIPELINE, 400, "invalid_value", "block", "/debug/run-block" },
	{ "{\"body\":\"" MD3 "\",\"block\":2}", REQ_DEBUG_BLOCK, 403, "program_not_allowed", "body", "\"ruby\"" },
	{ "{\"body\":\"" MD3 "\"}", REQ_DEBUG_PIPELINE, 403, "program_not_allowed", "body", "block 2" },
	{ "{\"body\":\"text only\"}", REQ_DEBUG_PIPELINE, 400, "no_runnable_block", "body", "no fenced block" },
	{ "{\"body\":\"```\\nprint(1)\\n```\",\"block\":0}", REQ_DEBUG_BLOCK, 400, "no_runnable_block", "body", "no fenced block" },
	{ "{\"body\":\"```py\\n1\\n```\\n```py\\n2\\n```\\n```py\\n3\\n```\\n```py\\n4\\n```\\n\"}",
	  REQ_DEBUG_LIST, 400, "too_many_blocks", "body", "4 runnable blocks; at most 3" },
};

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof err_rows / sizeof err_rows[0]; i++) {
		const struct err_row *x = &err_rows[i];
		struct chat_request r;
		struct req_error e;
		size_t block = 0;
		int rc = parse(x->json, x->what, &r, &block, &e);

		tap_ok(rc == -1 && e.status == x->status &&
		       !strcmp(e.code ? e.code : "", x->code) &&
		       !strcmp(e.param ? e.param : "(null)", x->param ? x->param : "(null)") &&
		       strstr(e.message, x->msg) && r.blocks == NULL && r.code_text == NULL &&
		       r.stdin_data == NULL && r.bag == NULL,
		       "refused %d %s: %.60s", x->status, x->code, x->json);
		if (rc == -1 && !strstr(e.message, x->msg))
			tap_diag("message: %s", e.message);
		if (rc == 0)
			req_free(&r);
	}
}

static void test_reading(void)
{
	struct chat_request r;
	struct req_error e;
	size_t block = 9;

	/* the list: every runnable block, allowed or not, and the prose fences */
	tap_ok(parse("{\"body\":\"" MD3 "\"}", REQ_DEBUG_LIST, &r, &block, &e) == 0 &&
	       r.nblocks == 3 && r.nskipped == 1, "list: three blocks and one skipped fence");
	if (r.nblocks == 3) {
		struct jbuf b = {0};
		cJSON *j;

		tap_ok(!strcmp(r.blocks[0].interp->name, "python") &&
		       r.blocks[0].start_line == 1 && r.blocks[0].end_line == 3 &&
		       !strcmp(r.blocks[1].label, "bash") && r.blocks[1].start_line == 8 &&
		       !strcmp(r.blocks[2].interp->name, "ruby") && !r.blocks[2].interp->allowed,
		       "list: labels, languages, lines and allowed");
		dbg_blocks(&b, &r);
		j = cJSON_ParseWithLength(b.p, b.len);
		tap_ok(j && !strcmp(cJSON_GetObjectItem(j, "object")->valuestring,
				    "codellm.debug.blocks") &&
		       cJSON_GetArraySize(cJSON_GetObjectItem(j, "blocks")) == 3,
		       "dbg_blocks writes valid JSON with three blocks");
		{
			cJSON *b2 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "blocks"), 2);
			cJSON *sk = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "skipped_fences"), 0);

			tap_ok(b2 && cJSON_GetObjectItem(b2, "index")->valueint == 2 &&
			       !strcmp(cJSON_GetObjectItem(b2, "program")->valuestring, "ruby") &&
			       cJSON_IsFalse(cJSON_GetObjectItem(b2, "allowed")) &&
			       cJSON_GetObjectItem(b2, "start_line")->valueint == 11 &&
			       cJSON_GetObjectItem(b2, "end_line")->valueint == 13 &&
			       sk && !strcmp(cJSON_GetObjectItem(sk, "label")->valuestring, "text") &&
			       cJSON_GetObjectItem(sk, "line")->valueint == 5,
			       "dbg_blocks: index, program, allowed, lines, skipped fence");
		}
		cJSON_Delete(j);
		jbuf_free(&b);
		req_free(&r);
	}
	/* the skipped fences past --max-skipped-fences: counted, and said
	 * after the list; without any past it the answer has no such key */
	{
		static const struct req_limits lim2 = { .max_blocks = 3, .max_skipped = 2 };
		static const char md[] = "```a\n```\n```b\n```\n```c\n```\n```py\n1\n```\n```d\n```\n";
		static const char want[] =
			"\"skipped_fences\":[{\"label\":\"a\",\"line\":1},{\"label\":\"b\",\"line\":3}],"
			"\"skipped_fences_truncated\":2}";
		struct jbuf b = {0};

		tap_ok(req_from_markdown(md, sizeof md - 1, &reg, &lim2, &r, &e) == 0 &&
		       r.nblocks == 1 && r.nskipped == 2 && r.skipped_truncated == 2,
		       "list: 2 of 4 skipped fences kept, 2 counted (--max-skipped-fences 2)");
		dbg_blocks(&b, &r);
		if (!tap_ok(b.len > strlen(want) && !memcmp(b.p + b.len - strlen(want), want, strlen(want)),
			    "dbg_blocks: the two, then \"skipped_fences_truncated\":2"))
			tap_diag("%.*s", (int)b.len, b.p);
		req_free(&r);
		jbuf_free(&b);
		tap_ok(req_from_markdown(md, sizeof md - 1, &reg, &lim3, &r, &e) == 0 &&
		       r.nskipped == 4 && r.skipped_truncated == 0, "list: 4 of 4 kept (16)");
		dbg_blocks(&b, &r);
		tap_ok(b.len && !memmem(b.p, b.len, "truncated", 9) && b.p[b.len - 1] == '}' &&
		       b.p[b.len - 2] == ']', "dbg_blocks: nothing cut, no key: the answer as before");
		req_free(&r);
		jbuf_free(&b);
	}

	/* no runnable block is an empty list, not an error, for the list */
	tap_ok(parse("{\"body\":\"just prose\"}", REQ_DEBUG_LIST, &r, &block, &e) == 0 &&
	       r.nblocks == 0, "list: a body without blocks lists none");
	req_free(&r);

	/* run-block narrows to the chosen block; stdin and an object bag */
	tap_ok(parse("{\"body\":\"" MD3 "\",\"block\":1,\"stdin\":\"in\\u00e9\","
		     "\"input\":{\"a\":[1,\"x\"],\"b\":null}}", REQ_DEBUG_BLOCK, &r, &block, &e) == 0 &&
	       block == 1 && r.nblocks == 1 && !strcmp(r.blocks[0].interp->name, "bash") &&
	       r.blocks[0].start_line == 8 && !strcmp(r.blocks[0].code, "cat\n") &&
	       r.stdin_len == 4 && !memcmp(r.stdin_data, "in\xc3\xa9", 4) &&
	       r.bag && !strcmp(r.bag, "{\"a\":[1,\"x\"],\"b\":null}") && r.bag_len == strlen(r.bag),
	       "run-block: block 1 alone, stdin, the bag as compact JSON");
	req_free(&r);
	/* a disallowed block elsewhere does not stop run-block */
	tap_ok(parse("{\"body\":\"" MD3 "\",\"block\":0,\"input\":\"raw {text\"}", REQ_DEBUG_BLOCK,
		     &r, &block, &e) == 0 && block == 0 && r.bag && !strcmp(r.bag, "raw {text") &&
	       r.stdin_data == NULL, "run-block: a string bag is verbatim, empty stdin is none");
	req_free(&r);
	tap_ok(parse("{\"body\":\"```py\\n1\\n```\\n```sh\\n2\\n```\\n\",\"stdin\":\"\",\"input\":null}",
		     REQ_DEBUG_PIPELINE, &r, &block, &e) == 0 && r.nblocks == 2 &&
	       r.bag == NULL && r.stdin_data == NULL && r.code_text &&
	       r.code_text_len == strlen("```py\n1\n```\n```sh\n2\n```\n"),
	       "run-pipeline: both blocks, null bag, the body kept for the audit hash");
	req_free(&r);
	tap_ok(parse("{\"body\":\"```py\\n1\\n```\",\"input\":[1,2.5,true]}", REQ_DEBUG_PIPELINE,
		     &r, &block, &e) == 0 && r.bag && !strcmp(r.bag, "[1,2.5,true]"),
	       "run-pipeline: an array bag");
	req_free(&r);
}

/* GET /debug/blocks: the query's body, read as text */
static void test_query_request(void)
{
	static const struct { const char *target, *msg; } bad[] = {
		{ "/debug/blocks", "needs ?body=" },
		{ "/debug/blocks?other=1", "needs ?body=" },
		{ "/debug/blocks?body=%zz", "not valid form encoding" },
		{ "/debug/blocks?body=a%00b", "NUL byte or invalid UTF-8" },
		{ "/debug/blocks?body=%ff%fe", "NUL byte or invalid UTF-8" },
		{ "/debug/blocks?body=%60%60%60py%0A1%0A%60%60%60%0A%60%60%60py%0A2%0A%60%60%60%0A"
		  "%60%60%60py%0A3%0A%60%60%60%0A%60%60%60py%0A4%0A%60%60%60%0A", "at most 3" },
	};
	struct chat_request r;
	struct req_error e;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct guarded g;
		const char *t = guard_copy(&g, bad[i].target, strlen(bad[i].target));
		int rc = parse_query(t, strlen(bad[i].target), &reg, &lim3, &r, &e);

		tap_ok(rc == -1 && e.status == 400 && e.param && !strcmp(e.param, "body") &&
		       strstr(e.message, bad[i].msg) && r.blocks == NULL && r.code_text == NULL,
		       "GET %s → 400 param body (%s)", bad[i].target, bad[i].msg);
		guard_free(&g);
	}
	static const char ok[] = "/debug/blocks?body=%60%60%60py%0Aprint(1%2B2)%0A%60%60%60";

	tap_ok(parse_query(ok, strlen(ok), &reg, &lim3, &r, &e) == 0 && r.nblocks == 1 &&
	       !strcmp(r.blocks[0].code, "print(1+2)\n") && !strcmp(r.blocks[0].label, "py"),
	       "GET ?body=: the decoded markdown's block");
	req_free(&r);
}

/* ---- the run answers, from a result made here (sandbox/result.h) ---- */

/* A result of n blocks that all started and exited 0; caps 8 (stdout)
 * and 4 (taps), a 2 s timeout. */
static void plain_result(struct sbx_result *rs, struct sbx_block_result *res,
			 struct sbx_tap *taps, size_t n)
{
	memset(rs, 0, sizeof *rs);
	memset(res, 0, n * sizeof *res);
	memset(taps, 0, n * sizeof *taps);
	rs->n = n;
	rs->res = res;
	rs->taps = taps;
	rs->decider = n - 1;
	rs->max_stdout = 8;
	rs->max_tap = 4;
	rs->timeout_s = 2;
	rs->layers.mode = SBX_NATIVE;
	for (size_t i = 0; i < n; i++) {
		res[i].started = 1;
		res[i].duration_ms = 10 + (long)i;
	}
}

static void set(struct sbx_capture *c, char *s, size_t n)
{
	c->p = s;
	c->len = n;
}

static cJSON *item(cJSON *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof buf, "%s", path);
	for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
		o = *t >= '0' && *t <= '9' ? cJSON_GetArrayItem(o, atoi(t)) :
		    cJSON_GetObjectItemCaseSensitive(o, t);
	return o;
}

static void test_answers(void)
{
	struct chat_request r;
	struct req_error e;
	size_t block;
	struct sbx_result p;
	struct sbx_block_result res[3];
	struct sbx_tap taps[3];
	char out1[] = "ok\xff\n", err1[] = "boom\n", tap0[] = "ab\n",
	     tap1[] = "\x00\xff\xc3\xa9", out3[] = "12345678";
	struct jbuf b = {0};
	cJSON *j;

	/* one block that exited 3, wrote invalid UTF-8 */
	parse("{\"body\":\"" MD3 "\",\"block\":1}", REQ_DEBUG_BLOCK, &r, &block, &e);
	plain_result(&p, res, taps, 1);
	p.res[0].exit_code = 3;
	p.exit_code = 3;
	set(&p.out, out1, 4);
	p.out_bytes = 4;
	set(&p.res[0].err, err1, 5);
	p.res[0].err_bytes = 5;
	{
		struct dbg_run d = { .id = "chatcmpl-x", .req = &r, .res = &p, .index = 1 };

		dbg_block_result(&b, &d);
	}
	j = cJSON_ParseWithLength(b.p, b.len);
	tap_ok(j && !strcmp(item(j, "object")->valuestring, "codellm.debug.block") &&
	       item(j, "index")->valueint == 1 && !strcmp(item(j, "lang")->valuestring, "bash") &&
	       !strcmp(item(j, "stdout")->valuestring, "ok\xef\xbf\xbd\n") &&
	       item(j, "stdout_bytes")->valueint == 4 && cJSON_IsFalse(item(j, "stdout_truncated")) &&
	       !strcmp(item(j, "stderr")->valuestring, "boom\n") &&
	       item(j, "exit_code")->valueint == 3 && cJSON_IsFalse(item(j, "ok")) &&
	       cJSON_IsFalse(item(j, "timed_out")) && item(j, "duration_ms")->valueint == 10 &&
	       strstr(item(j, "error")->valuestring, "exited with status 3") &&
	       !strcmp(item(j, "sandbox.mode")->valuestring, "native"),
	       "run-block answer: fields, U+FFFD, exit 3 is not ok with a sentence");
	cJSON_Delete(j);
	jbuf_free(&b);
	/* the same block timed out */
	p.res[0].exit_code = 137;
	p.res[0].signal = 9;
	p.res[0].killed = 1;
	p.end = SBX_END_TIMEOUT;
	p.exit_code = 124;
	{
		struct dbg_run d = { .id = "i", .req = &r, .res = &p, .index = 1 };

		dbg_block_result(&b, &d);
	}
	j = cJSON_ParseWithLength(b.p, b.len);
	tap_ok(j && cJSON_IsTrue(item(j, "timed_out")) && cJSON_IsFalse(item(j, "ok")) &&
	       item(j, "exit_code")->valueint == 124 &&
	       strstr(item(j, "error")->valuestring, "timed out after 2 s"),
	       "run-block answer: a timeout is exit 124, timed_out, its sentence");
	cJSON_Delete(j);
	jbuf_free(&b);
	req_free(&r);

	/* three blocks, two edges: one kept whole, one cut at max_tap */
	parse("{\"body\":\"```py\\n1\\n```\\n```sh\\n2\\n```\\n```py\\n3\\n```\\n\"}",
	      REQ_DEBUG_PIPELINE, &r, &block, &e);
	plain_result(&p, res, taps, 3);
	set(&p.taps[0].data, tap0, 3);
	p.taps[0].bytes = 3;
	set(&p.taps[1].data, tap1, 4);
	p.taps[1].bytes = 1000;
	set(&p.out, out3, 8);
	p.out_bytes = 20;
	p.out_truncated = 1;
	{
		struct dbg_run d = { .id = "i", .req = &r, .res = &p };

		dbg_pipeline_result(&b, &d);
	}
	j = cJSON_ParseWithLength(b.p, b.len);
	tap_ok(j && !strcmp(item(j, "object")->valuestring, "codellm.debug.pipeline") &&
	       cJSON_GetArraySize(item(j, "blocks")) == 3 && cJSON_GetArraySize(item(j, "edges")) == 2,
	       "run-pipeline answer: three blocks, two edges");
	tap_ok(j && item(j, "edges.0.from")->valueint == 0 && item(j, "edges.0.to")->valueint == 1 &&
	       item(j, "edges.0.bytes")->valueint == 3 &&
	       !strcmp(item(j, "edges.0.data_b64")->valuestring, "YWIK") &&
	       !strcmp(item(j, "edges.0.text")->valuestring, "ab\n") &&
	       cJSON_IsFalse(item(j, "edges.0.truncated")),
	       "edge 0: bytes, base64, text, not truncated");
	/* cJSON ends a string at \u0000: compare the raw JSON text */
	tap_ok(j && item(j, "edges.1.bytes")->valueint == 1000 &&
	       !strcmp(item(j, "edges.1.data_b64")->valuestring, "AP/DqQ==") &&
	       strstr(b.p, "\"text\":\"\\u0000\xef\xbf\xbd\xc3\xa9\"") &&
	       cJSON_IsTrue(item(j, "edges.1.truncated")) && item(j, "max_tap_bytes")->valueint == 4,
	       "edge 1: kept 4 of 1000 bytes, NUL escaped, U+FFFD, truncated");
	tap_ok(j && cJSON_IsFalse(item(j, "ok")) && item(j, "stdout_bytes")->valueint == 20 &&
	       cJSON_IsTrue(item(j, "stdout_truncated")) &&
	       strstr(item(j, "error")->valuestring, "block 2: stdout passed --max-stdout-bytes") &&
	       cJSON_IsFalse(item(j, "blocks.2.ok")) && cJSON_IsTrue(item(j, "blocks.1.ok")) &&
	       cJSON_IsNull(item(j, "blocks.0.error")),
	       "a cut last stdout makes the run and the last block not ok");
	cJSON_Delete(j);
	jbuf_free(&b);
	/* pipefail: the first failing block decides the sentence */
	p.out_truncated = 0;
	p.res[0].exit_code = 141;
	p.res[0].signal = 13;
	p.res[1].exit_code = 2;
	p.exit_code = 2;
	p.decider = 1;
	{
		struct dbg_run d = { .id = "i", .req = &r, .res = &p };

		dbg_pipeline_result(&b, &d);
	}
	j = cJSON_ParseWithLength(b.p, b.len);
	tap_ok(j && item(j, "exit_code")->valueint == 2 &&
	       strstr(item(j, "error")->valuestring, "block 0: killed by signal 13 (PIPE)") &&
	       strstr(item(j, "blocks.1.error")->valuestring, "exited with status 2"),
	       "pipefail exit code; the first failing block names the run's error");
	cJSON_Delete(j);
	jbuf_free(&b);
	req_free(&r);
}

int main(void)
{
	char err[256];

	if (reg_init(&reg) < 0 || reg_allow(&reg, "python,bash", err, sizeof err) < 0)
		abort();
	test_base64();
	test_query();
	test_host();
	test_errors();
	test_reading();
	test_query_request();
	test_answers();
	reg_free(&reg);
	return tap_done();
}
