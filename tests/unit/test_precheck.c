/* Tests for json/precheck.c, the one JSON check every reader shares.
 *
 * Escape rows: a piece of JSON string content, one row per malformed
 * escape (and raw byte) and per valid one. Each row runs four ways, so
 * the table proves that every reader uses the same check:
 *  - precheck_json on "<piece>": the problem and its byte offset;
 *  - req_parse on a chat request whose code block holds the piece;
 *  - dbg_parse on {"body": markdown holding the piece};
 *  - agent_tool_calls on {"answer":"<piece>"};
 * a malformed piece is refused by each with the same problem at the
 * offset of the piece in that text (400 invalid_json, or invalid_changes
 * for the agent), a valid one decodes to exactly the expected bytes.
 *
 * Text rows: whole JSON texts against precheck_json alone: the grammar
 * (RFC 8259, strictly), the limits (depth here, the count of values
 * below), and where each problem is found.
 *
 * Key rows: precheck_json_unique, which also refuses a key given twice
 * in one object (issue 35), at any depth, keys compared unescaped; the
 * same key in different objects is fine. Then the readers of what a
 * client sends (chat, Responses, debug) on a repeated key, the first
 * repeat told in text order, and the cost: 50,000 distinct keys, or
 * 100,000 repeats of one long key, in well under a second.
 * Every input sits right before a PROT_NONE page. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/agent.h"
#include "json/response.h"
#include "json/debug.h"
#include "json/jstr.h"
#include "json/precheck.h"
#include "json/request.h"
#include "json/responses.h"
#include "tests/guard.h"
#include "tests/tap.h"

struct esc_row {
	const char *name;
	const char *piece;	/* JSON string content, as written */
	enum precheck_problem problem;
	size_t at;		/* malformed: where in the piece */
	const char *msg;	/* malformed: a substring of the message */
	const char *decoded;	/* valid: the bytes it stands for */
	size_t decoded_len;	/* 0: strlen(decoded) */
};

#define BAD(n, p, pr, a, m) { n, p, pr, a, m, NULL, 0 }
#define GOOD(n, p, d) { n, p, PRECHECK_OK, 0, NULL, d, 0 }
#define HEX "holds \\u without four hex digits in a string"

static const struct esc_row esc_rows[] = {
	/* \u without four hex digits: cJSON would read U+0000 and cut */
	BAD("\\uZZZZ", "x\\uZZZZy", PRECHECK_HEX, 1, HEX " (byte @: \\uZZZZ)"),
	BAD("\\u then the closing quote", "x\\u", PRECHECK_HEX, 1, HEX " (byte @: \\u"),
	BAD("\\u1", "\\u1", PRECHECK_HEX, 0, HEX),
	BAD("\\u12", "\\u12", PRECHECK_HEX, 0, HEX),
	BAD("\\u123", "\\u123", PRECHECK_HEX, 0, HEX " (byte @: \\u123"),
	BAD("\\u123g", "ab\\u123g", PRECHECK_HEX, 2, HEX " (byte @: \\u123g)"),
	BAD("\\u00zz", "ab\\u00zzcd", PRECHECK_HEX, 2, HEX),
	BAD("\\u 123", "\\u 123", PRECHECK_HEX, 0, HEX " (byte @: \\u)"),
	BAD("\\u0x41", "\\u0x41", PRECHECK_HEX, 0, HEX),
	BAD("\\u-123", "\\u-123", PRECHECK_HEX, 0, HEX),
	BAD("\\u+123", "\\u+123", PRECHECK_HEX, 0, HEX),
	BAD("\\u12\\u (hex, then another escape)", "\\u12\\u0041", PRECHECK_HEX, 0, HEX),
	BAD("\\u00 then an escaped quote", "\\u00\\\"", PRECHECK_HEX, 0, HEX " (byte @: \\u00)"),
	BAD("\\u with a non-ASCII digit", "\\u00\xC3\xA9", PRECHECK_HEX, 0, HEX),
	/* escapes RFC 8259 does not have */
	BAD("\\x41", "a\\x41", PRECHECK_ESCAPE, 1, "unknown escape \\x in a string (byte @)"),
	BAD("\\U0041", "\\U0041", PRECHECK_ESCAPE, 0, "unknown escape \\U"),
	BAD("\\a", "\\a", PRECHECK_ESCAPE, 0, "unknown escape \\a"),
	BAD("\\v", "\\v", PRECHECK_ESCAPE, 0, "unknown escape \\v"),
	BAD("\\e", "\\e", PRECHECK_ESCAPE, 0, "unknown escape \\e"),
	BAD("\\0", "\\0", PRECHECK_ESCAPE, 0, "unknown escape \\0"),
	BAD("\\' (JavaScript's)", "\\'", PRECHECK_ESCAPE, 0, "unknown escape \\'"),
	BAD("\\N", "\\N", PRECHECK_ESCAPE, 0, "unknown escape \\N"),
	BAD("\\ then a space", "\\ ", PRECHECK_ESCAPE, 0, "backslash before byte 0x20"),
	BAD("\\ then a raw tab", "\\\t", PRECHECK_ESCAPE, 0, "backslash before byte 0x09"),
	BAD("\\ then a raw newline", "\\\n", PRECHECK_ESCAPE, 0, "backslash before byte 0x0a"),
	BAD("\\ then UTF-8", "\\\xC3\xA9", PRECHECK_ESCAPE, 0, "backslash before byte 0xc3"),
	/* NUL: cJSON ends the string there */
	BAD("\\u0000", "print(1)\\u0000print(2)", PRECHECK_U0000, 8,
	    "holds NUL (\\u0000) in a string (byte @)"),
	BAD("\\u0000 after an escaped backslash", "\\\\\\u0000", PRECHECK_U0000, 2, "NUL (\\u0000)"),
	/* surrogates that are not a high-low pair (cJSON fails on them) */
	BAD("lone high \\ud800", "\\ud800", PRECHECK_SURROGATE, 0,
	    "high surrogate \\ud800 without its low half in a string (byte @)"),
	BAD("lone high \\uDBFF, then text", "\\uDBFFx", PRECHECK_SURROGATE, 0, "high surrogate \\uDBFF"),
	BAD("lone low \\udc00", "a\\udc00", PRECHECK_SURROGATE, 1,
	    "low surrogate \\udc00 without its high half"),
	BAD("lone low \\udfff", "\\udfff", PRECHECK_SURROGATE, 0, "low surrogate"),
	BAD("low then high", "\\ude00\\ud83d", PRECHECK_SURROGATE, 0, "low surrogate \\ude00"),
	BAD("high then high", "\\ud83d\\ud83d", PRECHECK_SURROGATE, 0, "high surrogate \\ud83d"),
	BAD("high then \\u0041", "\\ud83d\\u0041", PRECHECK_SURROGATE, 0, "high surrogate"),
	BAD("high then \\u0000", "\\ud83d\\u0000", PRECHECK_SURROGATE, 0, "high surrogate"),
	BAD("high then \\n", "\\ud83d\\n", PRECHECK_SURROGATE, 0, "high surrogate"),
	BAD("high then raw text", "\\ud83dx\\ude00", PRECHECK_SURROGATE, 0, "high surrogate"),
	BAD("high then a bad \\u", "\\ud83d\\uZZ", PRECHECK_HEX, 6, HEX " (byte @: \\uZZ"),
	/* raw control bytes (RFC 8259: escaped, never raw) */
	BAD("raw newline", "a\nb", PRECHECK_CONTROL, 1, "raw control byte 0x0a in a string (byte @)"),
	BAD("raw tab", "\t", PRECHECK_CONTROL, 0, "raw control byte 0x09"),
	BAD("raw CR", "a\r", PRECHECK_CONTROL, 1, "raw control byte 0x0d"),
	BAD("raw 0x01", "\x01", PRECHECK_CONTROL, 0, "raw control byte 0x01"),
	BAD("raw 0x1f", "ab\x1f", PRECHECK_CONTROL, 2, "raw control byte 0x1f"),
	BAD("raw ESC", "\x1b[0m", PRECHECK_CONTROL, 0, "raw control byte 0x1b"),
	/* invalid UTF-8 */
	BAD("lone continuation byte", "ab\x80", PRECHECK_UTF8, 2, "is not valid UTF-8 (byte @)"),
	BAD("overlong /", "\xC0\xAF", PRECHECK_UTF8, 0, "not valid UTF-8"),
	BAD("UTF-8 surrogate", "x\xED\xA0\x80", PRECHECK_UTF8, 1, "not valid UTF-8"),
	BAD("Latin-1", "caf\xE9", PRECHECK_UTF8, 3, "not valid UTF-8"),

	/* valid escapes, each to its bytes */
	GOOD("\\\"", "\\\"", "\""),
	GOOD("\\\\", "\\\\", "\\"),
	GOOD("\\/", "\\/", "/"),
	GOOD("\\b \\f \\n \\r \\t", "\\b\\f\\n\\r\\t", "\b\f\n\r\t"),
	GOOD("\\u0041", "\\u0041", "A"),
	GOOD("\\u0001 (not NUL)", "x\\u0001y", "x\x01y"),
	GOOD("\\u001f and \\u007f", "\\u001f\\u007f", "\x1f\x7f"),
	GOOD("\\u00e9 lower hex", "caf\\u00e9", "caf\xC3\xA9"),
	GOOD("\\u00E9 upper hex", "caf\\u00E9", "caf\xC3\xA9"),
	GOOD("\\u0100 (NUL-looking bytes)", "\\u0100\\u1000\\u0010", "\xC4\x80\xE1\x80\x80\x10"),
	GOOD("\\u20ac", "\\u20ac", "\xE2\x82\xAC"),
	GOOD("\\u2028 \\u2029", "\\u2028\\u2029", "\xE2\x80\xA8\xE2\x80\xA9"),
	GOOD("\\uffff", "\\uffff", "\xEF\xBF\xBF"),
	GOOD("\\ud83d\\ude00", "\\ud83d\\ude00", "\xF0\x9F\x98\x80"),
	GOOD("\\uD83D\\uDE00 upper", "\\uD83D\\uDE00", "\xF0\x9F\x98\x80"),
	GOOD("\\ud800\\udc00 (U+10000)", "\\ud800\\udc00", "\xF0\x90\x80\x80"),
	GOOD("\\udbff\\udfff (U+10FFFF)", "\\udbff\\udfff", "\xF4\x8F\xBF\xBF"),
	GOOD("two pairs in a row", "\\ud83d\\ude00\\ud83d\\ude01", "\xF0\x9F\x98\x80\xF0\x9F\x98\x81"),
	GOOD("\\\\u0000 is a backslash and text", "\\\\u0000", "\\u0000"),
	GOOD("\\\\uZZZZ is a backslash and text", "print(1)\\\\uZZZZprint(2)", "print(1)\\uZZZZprint(2)"),
	GOOD("raw UTF-8, raw DEL", "\xF0\x9F\x98\x80 \xE4\xB8\xAD \x7f", "\xF0\x9F\x98\x80 \xE4\xB8\xAD \x7f"),
	GOOD("empty", "", ""),
};

/* "(byte @" in a row's message names the offset of the problem in the
 * text at hand: rewritten per reader. */
static int has_msg(const char *message, const char *want, size_t offset)
{
	char buf[256], num[32];
	const char *at = strchr(want, '@');

	if (!at)
		return strstr(message, want) != NULL;
	snprintf(num, sizeof num, "%zu", offset);
	snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - want), want, num, at + 1);
	return strstr(message, buf) != NULL;
}

static size_t dlen(const struct esc_row *r)
{
	return r->decoded_len ? r->decoded_len : strlen(r->decoded);
}

/* precheck_json itself on "<piece>" */
static void esc_direct(const struct esc_row *r)
{
	struct jbuf b = {0};
	struct guarded g;
	struct precheck pc;
	int rc;

	jbuf_puts(&b, "\"");
	jbuf_puts(&b, r->piece);
	jbuf_puts(&b, "\"");
	rc = precheck_json(guard_copy(&g, b.p, b.len), b.len, &pc);
	if (r->problem == PRECHECK_OK) {
		if (!tap_ok(rc == 0 && pc.problem == PRECHECK_OK, "precheck: %s passes", r->name))
			tap_diag("%s", pc.message);
	} else if (!tap_ok(rc == -1 && pc.problem == r->problem && pc.offset == 1 + r->at &&
			   has_msg(pc.message, r->msg, 1 + r->at),
			   "precheck: %s refused at byte %zu", r->name, 1 + r->at)) {
		tap_diag("rc %d problem %d offset %zu: %s", rc, pc.problem, pc.offset, pc.message);
	}
	guard_free(&g);
	jbuf_free(&b);
}

static struct registry reg;
static const struct req_limits lim = { .max_blocks = 16, .max_skipped = 16 };

/* the piece in a chat request's code block, between A and Z (not hex
 * digits after it, so a short \u stays short) */
#define REQ_HEAD "{\"model\":\"python\",\"messages\":[{\"role\":\"user\",\"content\":\"```python\\nA"
#define REQ_TAIL "Z\\n```\"}]}"

static void esc_request(const struct esc_row *r)
{
	struct jbuf b = {0};
	struct guarded g;
	struct chat_request req;
	struct req_error e;
	size_t at = strlen(REQ_HEAD) + r->at;
	int rc;

	jbuf_puts(&b, REQ_HEAD);
	jbuf_puts(&b, r->piece);
	jbuf_puts(&b, REQ_TAIL);
	rc = req_parse(guard_copy(&g, b.p, b.len), b.len, &reg, &lim, &req, &e);
	if (r->problem == PRECHECK_OK) {
		int ok = rc == 0 && req.nblocks == 1 &&
			 req.blocks[0].code_len == dlen(r) + 3 && req.blocks[0].code[0] == 'A' &&
			 !memcmp(req.blocks[0].code + 1, r->decoded, dlen(r)) &&
			 !memcmp(req.blocks[0].code + 1 + dlen(r), "Z\n", 2);

		if (!tap_ok(ok, "req_parse: %s decodes exactly", r->name))
			tap_diag("rc %d: %s", rc, e.message);
	} else if (!tap_ok(rc == -1 && e.status == 400 && e.code && !strcmp(e.code, "invalid_json") &&
			   !strncmp(e.message, "request body ", 13) &&
			   has_msg(e.message, r->msg, at) && req.nblocks == 0,
			   "req_parse: %s → 400 invalid_json naming byte %zu", r->name, at)) {
		tap_diag("rc %d status %d code %s: %s", rc, e.status, e.code ? e.code : "", e.message);
	}
	req_free(&req);
	guard_free(&g);
	jbuf_free(&b);
}

#define DBG_HEAD "{\"body\":\"```python\\nA"
#define DBG_TAIL "Z\\n```\"}"

static void esc_debug(const struct esc_row *r)
{
	struct jbuf b = {0};
	struct guarded g;
	struct chat_request req;
	struct req_error e;
	size_t at = strlen(DBG_HEAD) + r->at, unused;
	int rc;

	jbuf_puts(&b, DBG_HEAD);
	jbuf_puts(&b, r->piece);
	jbuf_puts(&b, DBG_TAIL);
	rc = dbg_parse(guard_copy(&g, b.p, b.len), b.len, &reg, &lim, REQ_DEBUG_LIST,
			     &req, &unused, &e);
	if (r->problem == PRECHECK_OK) {
		/* the markdown is a C string from here: a decoded NUL would
		 * show as a short block */
		int ok = rc == 0 && req.nblocks == 1 &&
			 req.blocks[0].code_len == dlen(r) + 3 &&
			 !memcmp(req.blocks[0].code + 1, r->decoded, dlen(r));

		if (!tap_ok(ok, "dbg_parse: %s decodes exactly", r->name))
			tap_diag("rc %d: %s", rc, e.message);
	} else if (!tap_ok(rc == -1 && e.status == 400 && e.code && !strcmp(e.code, "invalid_json") &&
			   has_msg(e.message, r->msg, at),
			   "dbg_parse: %s → 400 invalid_json naming byte %zu", r->name, at)) {
		tap_diag("rc %d status %d: %s", rc, e.status, e.message);
	}
	req_free(&req);
	guard_free(&g);
	jbuf_free(&b);
}

#define AGENT_HEAD "{\"answer\":\""
#define AGENT_TAIL "\"}"

/* The answer the finish call carries, decoded from the tool calls. */
static char *finish_answer(const struct jbuf *out, size_t *len)
{
	cJSON *arr = cJSON_ParseWithLength(out->p, out->len), *args;
	const cJSON *fn = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "function");
	const cJSON *a = cJSON_GetObjectItem(fn, "arguments"), *ans;
	char *ret = NULL;

	args = cJSON_IsString(a) ? cJSON_Parse(a->valuestring) : NULL;
	ans = cJSON_GetObjectItem(args, "answer");
	if (cJSON_IsString(ans)) {
		*len = strlen(ans->valuestring);
		ret = strdup(ans->valuestring);
	}
	cJSON_Delete(args);
	cJSON_Delete(arr);
	return ret;
}

static void esc_agent(const struct esc_row *r)
{
	static char finish[] = "finish";
	static char *const tools[] = { finish };
	struct jbuf b = {0}, out = {0};
	struct guarded g;
	struct agent_error e = {0};
	size_t at = strlen(AGENT_HEAD) + r->at;
	long rc;

	jbuf_puts(&b, AGENT_HEAD);
	jbuf_puts(&b, r->piece);
	jbuf_puts(&b, AGENT_TAIL);
	rc = agent_tool_calls(guard_copy(&g, b.p, b.len), b.len, tools, 1, "chatcmpl-test", &out, &e);
	if (r->problem == PRECHECK_OK) {
		size_t n = 0;
		char *ans = rc == 0 ? finish_answer(&out, &n) : NULL;

		if (!tap_ok(ans && n == dlen(r) && !memcmp(ans, r->decoded, n),
			    "agent: %s decodes exactly", r->name))
			tap_diag("rc %ld: %s", rc, e.message);
		free(ans);
	} else if (!tap_ok(rc == -1 && e.code && !strcmp(e.code, "invalid_changes") &&
			   !strncmp(e.message, "the output ", 11) &&
			   has_msg(e.message, r->msg, at) && out.len == 0,
			   "agent: %s → invalid_changes naming byte %zu", r->name, at)) {
		tap_diag("rc %ld code %s: %s", rc, e.code ? e.code : "", e.message);
	}
	jbuf_free(&out);
	guard_free(&g);
	jbuf_free(&b);
}

/* ---- whole texts --------------------------------------------------------- */

struct text_row {
	const char *name;
	const char *text;
	size_t len;		/* 0: strlen(text) */
	enum precheck_problem problem;
	size_t at;
};

#define OK(n, t) { n, t, 0, PRECHECK_OK, 0 }
#define NO(n, t, p, a) { n, t, 0, PRECHECK_##p, a }

#define X4(s) s s s s
#define X16(s) X4(X4(s))
#define N64(s) X4(X16(s))

static const struct text_row text_rows[] = {
	/* values */
	OK("an object", "{\"a\":1,\"b\":[true,false,null],\"c\":{}}"),
	OK("an array", "[1,\"x\",[],{}]"),
	OK("a string", "\"x\""),
	OK("a number", "-0.5e+10"),
	OK("literals", "[true,false,null]"),
	OK("whitespace everywhere", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n"),
	OK("a leading byte order mark", "\xEF\xBB\xBF{}"),
	OK("a leading byte order mark, two bytes after it", "\xEF\xBB\xBF" "12"),
	OK("numbers", "[0,-0,1,-1,10,0.5,1e5,1E5,1e+5,1e-5,1.5e3,-0.0e-0,123456789012345678901234567890]"),
	OK("a long number", "[" X16(X16("1234567890")) "]"),
	OK("keys repeat (cJSON takes the first; the readers decide)", "{\"a\":1,\"a\":2}"),
	OK("an empty key", "{\"\":\"\"}"),
	OK("64 levels", N64("[") N64("]")),
	/* numbers RFC 8259 does not have (cJSON takes some of them) */
	NO("a leading zero", "[01]", SYNTAX, 2),
	NO("a leading zero, alone", "01", TRAILING, 1),
	NO("1.", "[1.]", SYNTAX, 3),
	NO(".5", "[.5]", SYNTAX, 1),
	NO("-.5", "[-.5]", SYNTAX, 2),
	NO("+1", "[+1]", SYNTAX, 1),
	NO("-", "[-]", SYNTAX, 2),
	NO("1e", "[1e]", SYNTAX, 3),
	NO("1e+", "[1e+]", SYNTAX, 4),
	NO("0x1", "[0x1]", SYNTAX, 2),
	NO("NaN", "[NaN]", SYNTAX, 1),
	NO("Infinity", "[Infinity]", SYNTAX, 1),
	NO("-Infinity", "[-Infinity]", SYNTAX, 2),
	/* literals */
	NO("tru", "[tru]", SYNTAX, 1),
	NO("True", "[True]", SYNTAX, 1),
	NO("nul at the end", "nul", SYNTAX, 0),
	NO("nullx", "nullx", TRAILING, 4),
	/* structure */
	NO("empty text", "", SYNTAX, 0),
	NO("whitespace only", " \n", SYNTAX, 2),
	NO("a byte order mark only", "\xEF\xBB\xBF", SYNTAX, 3),
	NO("a byte order mark and one byte (cJSON skips no BOM then)", "\xEF\xBB\xBF" "0",
	   SYNTAX, 0),
	NO("a byte order mark later", " \xEF\xBB\xBF{}", SYNTAX, 1),
	NO("a trailing comma in an array", "[1,]", SYNTAX, 3),
	NO("a trailing comma in an object", "{\"a\":1,}", SYNTAX, 7),
	NO("a leading comma", "[,1]", SYNTAX, 1),
	NO("no comma", "[1 2]", SYNTAX, 3),
	NO("a key without a value", "{\"a\"}", SYNTAX, 4),
	NO("a key and colon without a value", "{\"a\":}", SYNTAX, 5),
	NO("a number as a key", "{1:2}", SYNTAX, 1),
	NO("single quotes", "{'a':1}", SYNTAX, 1),
	NO("a bare word", "{a:1}", SYNTAX, 1),
	NO("the wrong closer", "[}", SYNTAX, 1),
	NO("the wrong closer (object)", "{\"a\":1]", SYNTAX, 6),
	NO("an unopened closer", "]", SYNTAX, 0),
	NO("open at the end", "[[1]", SYNTAX, 4),
	NO("an unterminated string", "[\"abc", SYNTAX, 5),
	NO("a backslash at the very end", "[\"abc\\", ESCAPE, 5),
	NO("\\u at the very end", "[\"abc\\u", HEX, 5),
	NO("\\u00 at the very end", "[\"abc\\u00", HEX, 5),
	NO("a high surrogate at the very end", "[\"\\ud83d", SURROGATE, 2),
	NO("a high surrogate, \\u at the very end", "[\"\\ud83d\\u", HEX, 8),
	NO("a vertical tab as whitespace", "\x0b{}", SYNTAX, 0),
	NO("a form feed as whitespace", "{}\f", TRAILING, 2),
	NO("a control byte between tokens", "[1,\x01 2]", SYNTAX, 3),
	NO("65 levels", N64("[") "[]" N64("]"), DEPTH, 64),
	NO("65 levels of objects", N64("{\"a\":") "{}" N64("}"), DEPTH, 64 * 5),
	NO("2048 levels", X16(X16(X4(X4("[")))), DEPTH, 64),
	/* trailing data */
	NO("a second value", "{}{}", TRAILING, 2),
	NO("text after", "{\"a\":1} x", TRAILING, 8),
	NO("a comma after", "{} ,", TRAILING, 3),
	/* NUL and UTF-8 are looked for in the whole text first */
	{ "a raw NUL in a string", "[\"a\0b\"]", 7, PRECHECK_NUL, 3 },
	{ "a raw NUL after the value", "{}\0", 3, PRECHECK_NUL, 2 },
	{ "a raw NUL after a syntax error", "[1,]\0", 5, PRECHECK_NUL, 4 },
	NO("invalid UTF-8 after the value", "{}\xFF", UTF8, 2),
	NO("invalid UTF-8 after a syntax error", "[,\xFF]", UTF8, 2),
	NO("UTF-8 cut at the end", "{}\xE2\x82", UTF8, 2),
};

static void text_row(const struct text_row *r)
{
	size_t len = r->len ? r->len : strlen(r->text);
	struct guarded g;
	struct precheck pc;
	int rc = precheck_json(guard_copy(&g, r->text, len), len, &pc);
	char where[32];

	snprintf(where, sizeof where, "(byte %zu", r->at);
	if (r->problem == PRECHECK_SYNTAX)
		snprintf(where, sizeof where, "(near byte %zu)", r->at);
	if (r->problem == PRECHECK_OK) {
		if (!tap_ok(rc == 0, "text: %s passes", r->name))
			tap_diag("%s", pc.message);
	} else if (!tap_ok(rc == -1 && pc.problem == r->problem && pc.offset == r->at &&
			   strstr(pc.message, where) && jstr_utf8_valid(pc.message, strlen(pc.message)),
			   "text: %s refused at byte %zu", r->name, r->at)) {
		tap_diag("rc %d problem %d (want %d) offset %zu: %s", rc, pc.problem, r->problem,
			 pc.offset, pc.message);
	}
	/* what passes, cJSON reads whole: the one failure left to it is
	 * memory (the readers answer that as such) */
	if (rc == 0) {
		const char *end = NULL;
		cJSON *j = cJSON_ParseWithLengthOpts(r->text, len, &end, 0);

		tap_ok(j != NULL, "text: %s: cJSON parses what passed", r->name);
		cJSON_Delete(j);
	}
	guard_free(&g);
}

/* PRECHECK_MAX_VALUES, counted over every kind of value: members,
 * elements, empty containers, scalars of each type. */
static void check_values(void)
{
	static const char *const kinds[] = { "0", "\"\"", "true", "null", "[]", "{}" };

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		for (size_t extra = 0; extra < 2; extra++) {
			struct jbuf b = {0};
			struct precheck pc;
			size_t n = PRECHECK_MAX_VALUES - 1 + extra, last = 0;
			int rc;

			/* the array and n elements */
			jbuf_puts(&b, "[");
			for (size_t i = 0; i < n; i++) {
				if (i)
					jbuf_puts(&b, ",");
				last = b.len;
				jbuf_puts(&b, kinds[k]);
			}
			jbuf_puts(&b, "]");
			rc = precheck_json(b.p, b.len, &pc);
			if (!extra)
				tap_ok(rc == 0, "values: %d of %s pass", PRECHECK_MAX_VALUES, kinds[k]);
			else if (!tap_ok(rc == -1 && pc.problem == PRECHECK_VALUES && pc.offset == last,
					 "values: one more %s is refused at its byte", kinds[k]))
				tap_diag("rc %d problem %d offset %zu (want %zu): %s", rc, pc.problem,
					 pc.offset, last, pc.message);
			jbuf_free(&b);
		}
	{
		/* members count as values, keys do not */
		struct jbuf b = {0};
		struct precheck pc;

		jbuf_puts(&b, "{\"a\":0");
		for (size_t i = 2; i < PRECHECK_MAX_VALUES; i++)
			jbuf_puts(&b, ",\"\":0");
		jbuf_puts(&b, "}");
		tap_ok(precheck_json(b.p, b.len, &pc) == 0, "values: an object and %d members pass",
		       PRECHECK_MAX_VALUES - 1);
		b.len--;
		jbuf_puts(&b, ",\"\":{}}");
		tap_ok(precheck_json(b.p, b.len, &pc) == -1 && pc.problem == PRECHECK_VALUES,
		       "values: one more member is refused");
		jbuf_free(&b);
	}
}

/* ---- keys given twice (precheck_json_unique) ------------------------------ */

struct key_row {
	const char *name;
	const char *text;
	enum precheck_problem problem;	/* PRECHECK_OK, _DUPLICATE, or another */
	size_t at;			/* the repeat's opening quote */
	const char *shown;		/* how the message shows the key */
};

#define UNIQUE(n, t) { n, t, PRECHECK_OK, 0, NULL }
#define TWICE(n, t, a, k) { n, t, PRECHECK_DUPLICATE, a, k }

static const struct key_row key_rows[] = {
	UNIQUE("distinct keys", "{\"a\":1,\"b\":2,\"A\":3,\"\":4,\" a\":5}"),
	UNIQUE("the same key in different objects",
	       "{\"a\":{\"a\":1},\"b\":{\"a\":2},\"c\":[{\"a\":1},{\"a\":1}],\"d\":{\"b\":{\"a\":0}}}"),
	UNIQUE("a key and a string value alike", "{\"a\":\"a\",\"b\":[\"a\",\"a\"]}"),
	UNIQUE("arrays repeat values freely", "[1,1,\"a\",\"a\",{},{}]"),
	UNIQUE("keys that differ in one escape", "{\"a\\n\":1,\"a\\r\":2,\"a\\u00e9\":3,\"a\\u00e8\":4}"),
	UNIQUE("composed and decomposed e-acute differ", "{\"\\u00e9\":1,\"e\\u0301\":2}"),
	UNIQUE("a prefix is another key", "{\"ab\":1,\"a\":2,\"abc\":3}"),
	TWICE("at the top level", "{\"a\":1,\"a\":2}", 7, "\"a\""),
	TWICE("model twice in a chat body",
	      "{\"model\":\"python\",\"messages\":[],\"model\":\"x\"}", 32, "\"model\""),
	TWICE("nested", "{\"x\":{\"b\":1,\"c\":2,\"b\":3}}", 18, "\"b\""),
	TWICE("in the second object of an array", "[{\"a\":1},{\"a\":1,\"b\":0,\"a\":2}]", 22, "\"a\""),
	TWICE("64 levels deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	      "{\"d\":1,\"d\":2}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	      70, "\"d\""),
	TWICE("an escape equal to the plain key", "{\"a\":1,\"\\u0061\":2}", 7, "\"a\""),
	TWICE("\\/ and /", "{\"/\":1,\"\\/\":2}", 7, "\"/\""),
	TWICE("upper- and lowercase hex", "{\"\\u00E9\":1,\"\\u00e9\":2}", 12, "\"\\u00E9\""),
	TWICE("raw UTF-8 and its escape", "{\"\xC3\xA9t\xC3\xA9\":1,\"\\u00e9t\\u00e9\":2}", 11,
	      "\"\\u00E9t\\u00E9\""),
	TWICE("a surrogate pair and the raw character",
	      "{\"\xF0\x9F\x98\x80\":1,\"\\ud83d\\ude00\":2}", 10, "\"\\uD83D\\uDE00\""),
	TWICE("the empty key", "{\"\":1,\"b\":2,\"\":3}", 12, "\"\""),
	TWICE("the first repeat in the text is told", "{\"z\":1,\"y\":1,\"y\":2,\"z\":2}", 13, "\"y\""),
	TWICE("a nested repeat before an outer one",
	      "{\"a\":1,\"o\":{\"k\":1,\"k\":2},\"a\":2}", 18, "\"k\""),
	TWICE("a third time: the second is told", "{\"a\":1,\"a\":2,\"a\":3}", 7, "\"a\""),
	TWICE("a key shown safely: quote, backslash, control, U+202E",
	      "{\"q\\\"\\\\\\u0001\\u202e\":1,\"q\\\"\\\\\\u0001\\u202e\":2}", 23,
	      "\"q\\\"\\\\\\u0001\\u202E\""),
	TWICE("a long key cut", "{\"" X4("0123456789") "x\":1,\"" X4("0123456789") "x\":2}", 47,
	      "\"0123456789012345678901234567890123456789...\""),
	/* the text's other problems come first */
	{ "a repeat, then a syntax error", "{\"a\":1,\"a\":2,}", PRECHECK_SYNTAX, 13, NULL },
	{ "a repeat, then a bad escape", "{\"a\":1,\"a\":\"\\x\"}", PRECHECK_ESCAPE, 12, NULL },
};

static void key_row(const struct key_row *r)
{
	size_t len = strlen(r->text);
	struct guarded g;
	struct precheck pc;
	const char *text = guard_copy(&g, r->text, len);
	int rc = precheck_json_unique(text, len, &pc);
	char want[128];

	if (r->problem == PRECHECK_OK) {
		if (!tap_ok(rc == 0 && pc.problem == PRECHECK_OK, "keys: %s pass", r->name))
			tap_diag("%s", pc.message);
	} else if (r->problem != PRECHECK_DUPLICATE) {
		if (!tap_ok(rc == -1 && pc.problem == r->problem && pc.offset == r->at,
			    "keys: %s: that problem is told (byte %zu)", r->name, r->at))
			tap_diag("problem %d offset %zu: %s", pc.problem, pc.offset, pc.message);
	} else {
		snprintf(want, sizeof want, "holds the key %s twice in one object (byte %zu;",
			 r->shown, r->at);
		if (!tap_ok(rc == -1 && pc.problem == PRECHECK_DUPLICATE && pc.offset == r->at &&
			    strstr(pc.message, want) && jstr_utf8_valid(pc.message, strlen(pc.message)),
			    "keys: %s: refused at byte %zu", r->name, r->at))
			tap_diag("rc %d problem %d offset %zu: %s (want %s)", rc, pc.problem,
				 pc.offset, pc.message, want);
	}
	/* the plain check still takes a repeat: the agent's output reads
	 * its own keys (json/agent.c) */
	if (r->problem == PRECHECK_DUPLICATE)
		tap_ok(precheck_json(text, len, &pc) == 0, "keys: %s: precheck_json passes it",
		       r->name);
	guard_free(&g);
}

#define DUP_CHAT "{\"model\":\"python\",\"messages\":[{\"role\":\"user\",\"content\":" \
	"\"```python\\nprint(1)\\n```\"}],\"model\":\"x\"}"
#define DUP_DEEP "{\"model\":\"python\",\"messages\":[{\"role\":\"user\",\"content\":" \
	"\"```python\\nprint(1)\\n```\",\"role\":\"system\"}]}"
#define DUP_RSP "{\"model\":\"python\",\"input\":\"```python\\nprint(1)\\n```\",\"input\":\"x\"}"
#define DUP_DBG "{\"body\":\"```python\\nprint(1)\\n```\",\"bo\\u0064y\":\"\"}"

/* A reader's refusal: 400 invalid_json, the message the pre-check's,
 * naming the key and the byte of its repeat (where `repeat` starts). */
static void dup_refused(const char *who, int rc, const struct req_error *e, const char *text,
			const char *key, const char *repeat)
{
	char want[128];

	snprintf(want, sizeof want, "request body holds the key \"%s\" twice in one object "
		 "(byte %zu;", key, (size_t)(strstr(text, repeat) - text));
	if (!tap_ok(rc == -1 && e->status == 400 && e->code && !strcmp(e->code, "invalid_json") &&
		    e->type && !strcmp(e->type, "invalid_request_error") && strstr(e->message, want),
		    "%s: a key given twice → 400 invalid_json naming it and its byte", who))
		tap_diag("rc %d status %d code %s: %s (want %s)", rc, e->status,
			 e->code ? e->code : "", e->message, want);
}

/* chat, Responses and debug bodies with a key twice: each reader
 * refuses it the same way, nothing parsed */
static void dup_readers(void)
{
	struct chat_request req;
	struct rsp_face f;
	struct req_error e;
	size_t unused;
	int rc;

	rc = req_parse(DUP_CHAT, strlen(DUP_CHAT), &reg, &lim, &req, &e);
	dup_refused("req_parse (\"model\" twice)", rc, &e, DUP_CHAT, "model", "\"model\":\"x");
	req_free(&req);
	rc = req_parse(DUP_DEEP, strlen(DUP_DEEP), &reg, &lim, &req, &e);
	dup_refused("req_parse (\"role\" twice in a message)", rc, &e, DUP_DEEP, "role",
		    "\"role\":\"system");
	req_free(&req);
	memset(&f, 0, sizeof f);
	rc = rsp_translate(DUP_RSP, strlen(DUP_RSP), &f, &e);
	dup_refused("rsp_translate (\"input\" twice)", rc, &e, DUP_RSP, "input", "\"input\":\"x");
	rsp_face_free(&f);
	rc = dbg_parse(DUP_DBG, strlen(DUP_DBG), &reg, &lim, REQ_DEBUG_LIST, &req, &unused, &e);
	dup_refused("dbg_parse (\"body\" and \"bo\\u0064y\")", rc, &e, DUP_DBG, "body",
		    "\"bo\\u");
	req_free(&req);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The cost: an object of n keys "k<i>" (one repeat at the end when
 * dup), or n spellings of one key of longkey characters (the sort must
 * decode them to compare): checked in time
 * that grows as n log n, not n squared (50,000 keys compared pairwise
 * are 1.25e9 comparisons: seconds). The bound is loose for loaded
 * machines and sanitizers. */
static void many_keys(size_t n, int dup, size_t longkey)
{
	struct jbuf b = {0};
	struct precheck pc;
	double t;
	int rc;

	jbuf_puts(&b, "{");
	for (size_t i = 0; i < n; i++) {
		if (longkey) {
			jbuf_puts(&b, i ? ",\"" : "\"");
			/* each spelled its own way: character k escaped
			 * when bit k of i is set */
			for (size_t k = 0; k < longkey; k++)
				jbuf_puts(&b, k < 8 * sizeof i && (i >> k & 1) ? "\\u0061" : "a");
			jbuf_puts(&b, "\":0");
		} else {
			jbuf_printf(&b, "%s\"k%zu\":0", i ? "," : "", i);
		}
	}
	if (dup)
		jbuf_puts(&b, ",\"k0\":1");
	jbuf_puts(&b, "}");
	t = now_s();
	rc = precheck_json_unique(b.p, b.len, &pc);
	t = now_s() - t;
	if (longkey)
		tap_ok(rc == -1 && pc.problem == PRECHECK_DUPLICATE && t < 2.0,
		       "keys: %zu spellings of one %zu-character key (%zu bytes) refused in %.3f s",
		       n, longkey, b.len, t);
	else if (dup)
		tap_ok(rc == -1 && pc.problem == PRECHECK_DUPLICATE && pc.offset == b.len - 7 &&
		       t < 2.0, "keys: %zu distinct keys and a repeat of the first: refused at "
		       "its byte in %.3f s", n, t);
	else
		tap_ok(rc == 0 && t < 2.0, "keys: %zu distinct keys (%zu bytes) pass in %.3f s",
		       n, b.len, t);
	jbuf_free(&b);
}

int main(void)
{
	char err[64];

	if (reg_init(&reg) < 0 || reg_allow(&reg, "python", err, sizeof err) < 0)
		abort();
	for (size_t i = 0; i < sizeof esc_rows / sizeof esc_rows[0]; i++) {
		esc_direct(&esc_rows[i]);
		esc_request(&esc_rows[i]);
		esc_debug(&esc_rows[i]);
		esc_agent(&esc_rows[i]);
	}
	for (size_t i = 0; i < sizeof text_rows / sizeof text_rows[0]; i++)
		text_row(&text_rows[i]);
	check_values();
	for (size_t i = 0; i < sizeof key_rows / sizeof key_rows[0]; i++)
		key_row(&key_rows[i]);
	dup_readers();
	many_keys(50000, 0, 0);
	many_keys(50000, 1, 0);
	many_keys(PRECHECK_MAX_VALUES - 1, 0, 0);
	many_keys(50000, 0, 40);
	reg_free(&reg);
	return tap_done();
}
