/* Tests for json/audit.c (SPEC §9), without journald: the field list
 * audit_fields builds for each kind of record (ran, refused, nothing),
 * compared field by field and in order; audit_request on a parsed
 * request; and a table of audit_text rows (input, room, expected, why)
 * for what must be escaped or cut. Every audit_text input sits right
 * before a PROT_NONE page. */
#include <string.h>
#include <syslog.h>

#include "json/audit.h"
#include "tests/guard.h"
#include "tests/tap.h"

#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ------------------------------------------------------------------ */
/* The field list                                                      */

static void same_fields(const struct audit *a, const char *const *want, const char *name)
{
	struct audit_fields f;
	int n = 0, ok = 1;

	audit_fields(a, &f);
	while (want[n])
		n++;
	for (int i = 0; i < f.n && i < n; i++) {
		const char *got = f.iov[i].iov_base;

		if (f.iov[i].iov_len != strlen(want[i]) || strcmp(got, want[i])) {
			tap_diag("%s: field %d is \"%s\", want \"%s\"", name, i, got, want[i]);
			ok = 0;
		}
	}
	if (f.n != n) {
		tap_diag("%s: %d fields, want %d", name, f.n, n);
		ok = 0;
	}
	tap_ok(ok, "audit_fields: %s", name);
	audit_fields_free(&f);
	tap_ok(f.n == 0, "audit_fields_free: %s", name);
}

static void test_ran(void)
{
	struct audit a = {
		.kind = AUDIT_RAN, .request_id = "chatcmpl-1", .peer = "127.0.0.1:5000",
		.route = "POST /v1/chat/completions", .status = 200, .mode = "run",
		.model = "python", .blocks = 2, .langs = "python,bash", .code_sha256 = SHA,
		.has_result = 1, .exit_code = 0, .duration_ms = 12, .sandbox = "full net=none",
		.cpu_user_ms = 9, .cpu_sys_ms = 2, .max_rss_kib = 20480,
		.cgroup = 1, .memory_peak_kib = 30000, .oom_kills = 1,
	};
	static const char *const want[] = {
		"MESSAGE=codellm: POST /v1/chat/completions 200: ran 2 block(s) (python,bash), "
		"exit 0, 12 ms",
		"MESSAGE_ID=" AUDIT_ID_RAN, "PRIORITY=6", "SYSLOG_IDENTIFIER=codellm",
		"CODELLM_REQUEST_ID=chatcmpl-1", "CODELLM_PEER=127.0.0.1:5000",
		"CODELLM_ROUTE=POST /v1/chat/completions", "CODELLM_STATUS=200",
		"CODELLM_MODE=run", "CODELLM_MODEL=python", "CODELLM_BLOCKS=2",
		"CODELLM_LANGS=python,bash", "CODELLM_CODE_SHA256=" SHA,
		"CODELLM_EXIT_CODE=0", "CODELLM_TIMED_OUT=false", "CODELLM_DURATION_MS=12",
		"CODELLM_CPU_USER_MS=9", "CODELLM_CPU_SYS_MS=2", "CODELLM_MAX_RSS_KIB=20480",
		"CODELLM_MEMORY_BOUND=cgroup v1", "CODELLM_MEMORY_PEAK_KIB=30000",
		"CODELLM_OOM_KILLS=1", "CODELLM_SANDBOX=full net=none", NULL,
	};

	same_fields(&a, want, "ran, exit 0, 200 (info)");
}

static void test_ran_agent(void)
{
	struct audit a = {
		.kind = AUDIT_RAN, .request_id = "chatcmpl-2", .peer = "[::1]:1",
		.route = "POST /v1/chat/completions", .status = 422, .mode = "agent",
		.model = "codellm", .blocks = 1, .langs = "python", .code_sha256 = SHA,
		.has_result = 1, .exit_code = 124, .timed_out = 1, .duration_ms = 5000,
		.sandbox = "full net=none missing=landlock", .retry_count = "1",
	};
	static const char *const want[] = {
		"MESSAGE=codellm: POST /v1/chat/completions 422: ran 1 block(s) (python), "
		"exit 124, timed out, 5000 ms",
		"MESSAGE_ID=" AUDIT_ID_RAN, "PRIORITY=5", "SYSLOG_IDENTIFIER=codellm",
		"CODELLM_REQUEST_ID=chatcmpl-2", "CODELLM_PEER=[::1]:1",
		"CODELLM_ROUTE=POST /v1/chat/completions", "CODELLM_STATUS=422",
		"CODELLM_MODE=agent", "CODELLM_MODEL=codellm", "CODELLM_BLOCKS=1",
		"CODELLM_LANGS=python", "CODELLM_CODE_SHA256=" SHA,
		"CODELLM_EXIT_CODE=124", "CODELLM_TIMED_OUT=true", "CODELLM_DURATION_MS=5000",
		"CODELLM_CPU_USER_MS=0", "CODELLM_CPU_SYS_MS=0", "CODELLM_MAX_RSS_KIB=0",
		"CODELLM_MEMORY_BOUND=none", "CODELLM_SANDBOX=full net=none missing=landlock",
		"CODELLM_WRITE_PATHS=notes/a.md\nb\\x0a.md [4 bytes]",
		"CODELLM_RETRY_COUNT=1", NULL,
	};

	jbuf_puts(&a.write_paths, "notes/a.md\nb\\x0a.md [4 bytes]");
	same_fields(&a, want, "ran in agent mode, timed out, write paths (notice)");
	jbuf_free(&a.write_paths);
}

static void test_refused(void)
{
	struct audit a = {
		.kind = AUDIT_REFUSED, .route = "POST /v1/chat/completions", .status = 401,
	};
	static const char *const want[] = {
		"MESSAGE=codellm: POST /v1/chat/completions 401: refused, nothing ran",
		"MESSAGE_ID=" AUDIT_ID_REFUSED, "PRIORITY=4", "SYSLOG_IDENTIFIER=codellm",
		"CODELLM_REQUEST_ID=", "CODELLM_PEER=unknown",
		"CODELLM_ROUTE=POST /v1/chat/completions", "CODELLM_STATUS=401", NULL,
	};
	static const char *const want_5xx[] = {
		"MESSAGE=codellm: POST /v1/chat/completions 503: refused, nothing ran",
		"MESSAGE_ID=" AUDIT_ID_REFUSED, "PRIORITY=3", "SYSLOG_IDENTIFIER=codellm",
		"CODELLM_REQUEST_ID=chatcmpl-3", "CODELLM_PEER=unknown",
		"CODELLM_ROUTE=POST /v1/chat/completions", "CODELLM_STATUS=503",
		"CODELLM_MODE=run", "CODELLM_MODEL=python", "CODELLM_BLOCKS=1",
		"CODELLM_LANGS=python", "CODELLM_CODE_SHA256=" SHA, NULL,
	};

	same_fields(&a, want, "refused 401, no id, no peer (warning)");
	a = (struct audit){
		.kind = AUDIT_REFUSED, .request_id = "chatcmpl-3",
		.route = "POST /v1/chat/completions", .status = 503, .mode = "run",
		.model = "python", .blocks = 1, .langs = "python", .code_sha256 = SHA,
	};
	same_fields(&a, want_5xx, "refused 503 after parsing (err)");
}

static void test_nothing(void)
{
	struct audit a = {
		.kind = AUDIT_NOTHING, .request_id = "chatcmpl-4", .peer = "127.0.0.1:9",
		.route = "GET /v1/models", .status = 200,
	};
	static const char *const want[] = {
		"MESSAGE=codellm: GET /v1/models 200: nothing to run",
		"MESSAGE_ID=" AUDIT_ID_NOTHING, "PRIORITY=6", "SYSLOG_IDENTIFIER=codellm",
		"CODELLM_REQUEST_ID=chatcmpl-4", "CODELLM_PEER=127.0.0.1:9",
		"CODELLM_ROUTE=GET /v1/models", "CODELLM_STATUS=200", NULL,
	};

	same_fields(&a, want, "nothing to run (info)");
}

/* The record as one JSON line (no journal): the same fields in the same
 * order, each a string; newlines, quotes, backslashes and invalid
 * UTF-8 cannot end the line or forge a key. */
static void test_json(void)
{
	struct audit a = {
		.kind = AUDIT_RAN, .request_id = "chatcmpl-5", .peer = "127.0.0.1:7",
		.route = "POST /v1/chat/completions", .status = 200, .mode = "agent",
		.model = "m\"x\\", .blocks = 1, .langs = "python", .code_sha256 = SHA,
		.has_result = 1, .sandbox = "native net=none",
	};
	static const char want[] =
		"{\"MESSAGE\":\"codellm: POST /v1/chat/completions 200: ran 1 block(s) (python), "
		"exit 0, 0 ms\",\"MESSAGE_ID\":\"" AUDIT_ID_RAN "\",\"PRIORITY\":\"6\","
		"\"SYSLOG_IDENTIFIER\":\"codellm\",\"CODELLM_REQUEST_ID\":\"chatcmpl-5\","
		"\"CODELLM_PEER\":\"127.0.0.1:7\",\"CODELLM_ROUTE\":\"POST /v1/chat/completions\","
		"\"CODELLM_STATUS\":\"200\",\"CODELLM_MODE\":\"agent\","
		"\"CODELLM_MODEL\":\"m\\\"x\\\\\",\"CODELLM_BLOCKS\":\"1\","
		"\"CODELLM_LANGS\":\"python\",\"CODELLM_CODE_SHA256\":\"" SHA "\","
		"\"CODELLM_EXIT_CODE\":\"0\",\"CODELLM_TIMED_OUT\":\"false\","
		"\"CODELLM_DURATION_MS\":\"0\",\"CODELLM_CPU_USER_MS\":\"0\","
		"\"CODELLM_CPU_SYS_MS\":\"0\",\"CODELLM_MAX_RSS_KIB\":\"0\","
		"\"CODELLM_MEMORY_BOUND\":\"none\",\"CODELLM_SANDBOX\":\"native net=none\","
		"\"CODELLM_WRITE_PATHS\":\"a.md\\nb\\u0000\xef\xbf\xbd.md\"}\n";
	struct audit_fields f;
	struct jbuf b = { 0 };
	const char *got;

	jbuf_append(&a.write_paths, "a.md\nb\0\xff.md", 11);
	audit_fields(&a, &f);
	audit_fields_json(&f, &b);
	got = jbuf_cstr(&b);
	tap_ok(got && b.len == strlen(want) && !strcmp(got, want),
	       "audit_fields_json: one line, every field a string, in order, escaped");
	if (got && strcmp(got, want))
		tap_diag("got  %s\nwant %s", got, want);
	tap_ok(got && strchr(got, '\n') == got + b.len - 1,
	       "audit_fields_json: the only newline ends the line");
	audit_fields_free(&f);
	jbuf_free(&b);
	jbuf_free(&a.write_paths);
	memset(&f, 0, sizeof f);
	audit_fields_json(&f, &b);
	tap_ok(jbuf_cstr(&b) && !strcmp(b.p, "{}\n"), "audit_fields_json: no fields is {}");
	jbuf_free(&b);
}

static void test_request(void)
{
	static char n_py[] = "python", n_sh[] = "bash";
	struct interp py = { .name = n_py }, sh = { .name = n_sh };
	struct req_block blocks[] = { { .interp = &py }, { .interp = &sh } };
	char model[] = "py\nthon", code[] = "abc";
	struct chat_request r = {
		.model = model, .blocks = blocks, .nblocks = 2,
		.code_text = code, .code_text_len = 3,
	};
	struct audit a = {0};

	audit_request(&a, &r, "agent");
	tap_ok(a.mode && !strcmp(a.mode, "agent"), "audit_request: the mode");
	tap_ok(!strcmp(a.model, "py\\x0athon [7 bytes]"), "audit_request: the model through audit_text");
	tap_ok(a.blocks == 2 && !strcmp(a.langs, "python,bash"), "audit_request: blocks and langs");
	tap_ok(!strcmp(a.code_sha256,
		       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
	       "audit_request: the SHA-256 of the code message, never the code");
	r.model = NULL;
	audit_request(&a, &r, "debug");
	tap_ok(a.model[0] == '\0', "audit_request: no model is an empty field");
}

/* ------------------------------------------------------------------ */
/* audit_text                                                          */

static const struct {
	const char *in;
	size_t len;		/* 0: strlen(in) */
	size_t outlen;
	const char *want;
	const char *why;
} text_rows[] = {
	{ "POST /v1/chat/completions", 0, 192, "POST /v1/chat/completions", "plain ASCII as it is" },
	{ "", 0, 32, "", "empty" },
	{ "a\nb", 0, 64, "a\\x0ab [3 bytes]", "C0: a newline" },
	{ "\r\x1b[2J", 0, 64, "\\x0d\\x1b[2J [5 bytes]", "C0: CR and an escape sequence" },
	{ "a\0b", 3, 64, "a\\x00b [3 bytes]", "C0: NUL" },
	{ "\x7f", 0, 64, "\\x7f [1 bytes]", "DEL" },
	{ "\xc2\x85", 0, 64, "\\xc2\\x85 [2 bytes]", "C1: U+0085 NEL" },
	{ "\xc2\x9f", 0, 64, "\\xc2\\x9f [2 bytes]", "C1: U+009F" },
	{ "\xc2\xa0", 0, 64, "\xc2\xa0", "U+00A0 passes" },
	{ "x\xe2\x80\xa8y", 0, 64, "x\\xe2\\x80\\xa8y [5 bytes]", "U+2028 line separator" },
	{ "\xe2\x80\xa9", 0, 64, "\\xe2\\x80\\xa9 [3 bytes]", "U+2029 paragraph separator" },
	{ "caf\xc3\xa9 \xf0\x9f\x98\x80", 0, 64, "caf\xc3\xa9 \xf0\x9f\x98\x80", "valid UTF-8 passes" },
	{ "\xff", 0, 64, "\\xff [1 bytes]", "invalid UTF-8: 0xFF" },
	{ "a\xc3", 0, 64, "a\\xc3 [2 bytes]", "invalid UTF-8: truncated sequence" },
	{ "\xc0\xaf", 0, 64, "\\xc0\\xaf [2 bytes]", "invalid UTF-8: overlong" },
	{ "\xed\xa0\x80", 0, 64, "\\xed\\xa0\\x80 [3 bytes]", "invalid UTF-8: a surrogate" },
	{ "\xf4\x90\x80\x80", 0, 64, "\\xf4\\x90\\x80\\x80 [4 bytes]", "invalid UTF-8: past U+10FFFF" },
	{ "a\\b", 0, 64, "a\\\\b [3 bytes]", "a backslash is doubled" },
	{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0, 32,
	  "xxxxxxxxxxxxxxxxxxxx [40 bytes]", "cut to fit, with the original length" },
	{ "xxxxxxxxxxxxxxxxxx\n", 0, 32,
	  "xxxxxxxxxxxxxxxxxx [19 bytes]", "an escape that does not fit is cut whole" },
	{ "xxxxxxxxxxxxxxxxxxx\xc3\xa9", 0, 32,
	  "xxxxxxxxxxxxxxxxxxx [21 bytes]", "a character that does not fit is cut whole" },
	{ "xxxxxxxxxxxxxxxxxxxx", 0, 32, "xxxxxxxxxxxxxxxxxxxx", "exactly the room: no note" },
};

static void test_text(void)
{
	for (size_t i = 0; i < sizeof text_rows / sizeof text_rows[0]; i++) {
		size_t len = text_rows[i].len ? text_rows[i].len : strlen(text_rows[i].in);
		struct guarded g;
		const char *in = guard_copy(&g, text_rows[i].in, len);
		char out[256];

		memset(out, 'Z', sizeof out);
		audit_text(out, text_rows[i].outlen, in, len);
		guard_free(&g);
		if (!tap_ok(strlen(out) < text_rows[i].outlen && !strcmp(out, text_rows[i].want),
			    "audit_text: %s", text_rows[i].why))
			tap_diag("got \"%s\"", out);
	}
}

int main(void)
{
	test_ran();
	test_ran_agent();
	test_refused();
	test_nothing();
	test_json();
	test_request();
	test_text();
	return tap_done();
}
