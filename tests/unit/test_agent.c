/* Tests for json/agent.c (SPEC §6): a table of program outputs that must
 * be refused (rc -1, the error code, a message substring, the caller's
 * buffer untouched, a valid UTF-8 message) and a table that must become
 * tool calls. A success is checked by parsing the produced JSON with
 * cJSON: an array of rc+1 calls, ids call_<request>_0…call_<request>_rc
 * (TEST_REQ_ID's random part), type "function",
 * the tool's name, and the arguments string parsed again into exactly the
 * tool's fields, each compared byte for byte with the expected value (no
 * expected value holds NUL, which the agent refuses, so a C string
 * compare sees any truncation). Lossless round trips, the 1 MiB write and
 * the raw shape of the output are checked separately. Every input sits
 * right before a PROT_NONE page. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/agent.h"
#include "json/response.h"
#include "json/jstr.h"
#include "tests/guard.h"
#include "tests/tap.h"

/* A request id as the handler makes them: its random part names the
 * calls (agent_call_id). */
#define TEST_REQ_ID "chatcmpl-3f0a9fd27121f3d3e9ad4136"
#define TEST_CALL "call_3f0a9fd27121f3d3e9ad4136_"

#define PRE "PRE:"	/* what the caller's buffer holds before the call */

/* the API takes char *const *, as the request parser stores them */
static char t_write[] = "write_note", t_patch[] = "patch_note", t_finish[] = "finish";
static char *const tools_all[] = { t_write, t_patch, t_finish };
static char *const tools_write[] = { t_write, t_finish };
static char *const tools_patch[] = { t_patch, t_finish };
static char *const tools_finish[] = { t_finish };
static char *const tools_nofinish[] = { t_patch, t_write };

struct toolset {
	char *const *v;
	size_t n;
};

#define TS(a) { a, sizeof a / sizeof a[0] }
static const struct toolset ALL = TS(tools_all);
static const struct toolset WRITE = TS(tools_write);
static const struct toolset PATCH = TS(tools_patch);
static const struct toolset FINISH = TS(tools_finish);
static const struct toolset NOFINISH = TS(tools_nofinish);
static const struct toolset NONE = { NULL, 0 };

/* ------------------------------------------------------------------ */
/* Running one input                                                   */

struct result {
	long rc;
	struct agent_error err;
	struct jbuf b;		/* PRE followed by what the agent appended */
};

static void run(struct result *r, const char *in, size_t len, struct toolset ts)
{
	struct guarded g;
	const char *p = guard_copy(&g, in, len);

	memset(r, 0, sizeof *r);
	r->err.code = NULL;
	memset(r->err.message, 0, sizeof r->err.message);
	jbuf_puts(&r->b, PRE);
	r->rc = agent_tool_calls(p, len, ts.v, ts.n, TEST_REQ_ID, &r->b, &r->err);
	guard_free(&g);
}

static int untouched(const struct jbuf *b)
{
	return b->len == strlen(PRE) && !memcmp(b->p, PRE, b->len) && !b->oom;
}

/* ------------------------------------------------------------------ */
/* Refusals                                                            */

struct err_row {
	const char *name;
	const char *in;
	size_t len;		/* 0: strlen(in) */
	const struct toolset *tools;
	const char *code;
	const char *msg;	/* substring of the message */
};

#define IC "invalid_changes"
#define UT "undeclared_tool"
#define NOTOBJ "is not one JSON object"
#define STRINGS "must be strings"
#define NEEDPATH "needs a non-empty string \"path\""
#define EITHER "needs either \"content\" or \"find\" and \"replace\""
#define HEX4 "holds \\u without four hex digits"
#define NEEDPATCH "a patch needs a non-empty \"find\" and a \"replace\""

static const struct err_row err_rows[] = {
	/* not one JSON object */
	{ "empty output", "", 0, &ALL, IC, NOTOBJ },
	{ "whitespace only", " \n\t\r\n", 0, &ALL, IC, NOTOBJ },
	{ "root is an array", "[]", 0, &ALL, IC, NOTOBJ },
	{ "root is a string", "\"changes\"", 0, &ALL, IC, NOTOBJ },
	{ "root is null", "null", 0, &ALL, IC, NOTOBJ },
	{ "root is a number", "42", 0, &ALL, IC, NOTOBJ },
	{ "truncated object", "{\"changes\":[", 0, &ALL, IC, NOTOBJ },
	{ "truncated after comma", "{\"answer\":\"x\",", 0, &ALL, IC, NOTOBJ },
	{ "unterminated string", "{\"answer\":\"x}", 0, &ALL, IC, NOTOBJ },
	{ "single quotes", "{'changes':[]}", 0, &ALL, IC, NOTOBJ },
	{ "plain text", "Done! I changed the notes.\n", 0, &ALL, IC, NOTOBJ },
	/* escapes cJSON fails on: refused by the shared pre-check, which
	 * says what and where (tests/unit/test_precheck.c has them all) */
	{ "lone high surrogate escape", "{\"answer\":\"\\ud800\"}", 0, &ALL, IC,
	  "high surrogate \\ud800 without its low half in a string (byte 11)" },
	{ "lone low surrogate escape", "{\"answer\":\"\\udc00x\"}", 0, &ALL, IC,
	  "low surrogate \\udc00 without its high half" },
	{ "high surrogate + non-low", "{\"answer\":\"\\ud83d\\u0041\"}", 0, &ALL, IC,
	  "high surrogate \\ud83d without its low half" },
	{ "unknown escape \\x", "{\"answer\":\"\\x41\"}", 0, &ALL, IC,
	  "unknown escape \\x in a string (byte 11)" },
	/* trailing garbage */
	{ "trailing text", "{\"changes\":[]}x", 0, &ALL, IC, "more after its JSON object (byte 14)" },
	{ "second object", "{}{}", 0, &ALL, IC, "more after its JSON object (byte 2)" },
	{ "trailing comma", "{} ,", 0, &ALL, IC, "more after its JSON object (byte 3)" },
	{ "trailing text after newline", "{\"answer\":\"a\"}\nDone\n", 0, &ALL, IC, "(byte 15)" },
	{ "trailing form feed", "{}\f", 0, &ALL, IC, "more after its JSON object (byte 2)" },
	/* changes / answer of the wrong type */
	{ "changes is an object", "{\"changes\":{}}", 0, &ALL, IC, "\"changes\" must be an array" },
	{ "changes is a string", "{\"changes\":\"[]\"}", 0, &ALL, IC, "\"changes\" must be an array" },
	{ "changes is a number", "{\"changes\":0}", 0, &ALL, IC, "\"changes\" must be an array" },
	{ "changes is false", "{\"changes\":false}", 0, &ALL, IC, "\"changes\" must be an array" },
	{ "answer is a number", "{\"changes\":[],\"answer\":1}", 0, &ALL, IC, "\"answer\" must be a string" },
	{ "answer is true", "{\"answer\":true}", 0, &ALL, IC, "\"answer\" must be a string" },
	{ "answer is an object", "{\"answer\":{}}", 0, &ALL, IC, "\"answer\" must be a string" },
	{ "answer is an array", "{\"answer\":[\"x\"]}", 0, &ALL, IC, "\"answer\" must be a string" },
	/* a change that is not an object */
	{ "change is a number", "{\"changes\":[1]}", 0, &ALL, IC, "changes[0] is not an object" },
	{ "change is a string", "{\"changes\":[\"a.md\"]}", 0, &ALL, IC, "changes[0] is not an object" },
	{ "change is null", "{\"changes\":[null]}", 0, &ALL, IC, "changes[0] is not an object" },
	{ "second change is an array",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\"},[]]}", 0, &ALL, IC,
	  "changes[1] is not an object" },
	/* path */
	{ "path missing", "{\"changes\":[{\"content\":\"x\"}]}", 0, &ALL, IC, "changes[0] " NEEDPATH },
	{ "path empty", "{\"changes\":[{\"path\":\"\",\"content\":\"x\"}]}", 0, &ALL, IC, NEEDPATH },
	{ "path null", "{\"changes\":[{\"path\":null,\"content\":\"x\"}]}", 0, &ALL, IC, NEEDPATH },
	{ "path a number", "{\"changes\":[{\"path\":7,\"content\":\"x\"}]}", 0, &ALL, IC, NEEDPATH },
	{ "path an array", "{\"changes\":[{\"path\":[\"a\"],\"content\":\"x\"}]}", 0, &ALL, IC, NEEDPATH },
	{ "path key case", "{\"changes\":[{\"Path\":\"a\",\"content\":\"x\"}]}", 0, &ALL, IC, NEEDPATH },
	/* non-string fields */
	{ "content a number", "{\"changes\":[{\"path\":\"a\",\"content\":1}]}", 0, &ALL, IC, "changes[0]: path, content, find, replace and op " STRINGS },
	{ "content an object", "{\"changes\":[{\"path\":\"a\",\"content\":{}}]}", 0, &ALL, IC, STRINGS },
	{ "content false", "{\"changes\":[{\"path\":\"a\",\"content\":false}]}", 0, &ALL, IC, STRINGS },
	{ "find a number", "{\"changes\":[{\"path\":\"a\",\"find\":1,\"replace\":\"x\"}]}", 0, &ALL, IC, STRINGS },
	{ "replace an array", "{\"changes\":[{\"path\":\"a\",\"find\":\"x\",\"replace\":[]}]}", 0, &ALL, IC, STRINGS },
	{ "op a number", "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":1}]}", 0, &ALL, IC, STRINGS },
	{ "op true", "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":true}]}", 0, &ALL, IC, STRINGS },
	/* which tool */
	{ "content and find, no op",
	  "{\"changes\":[{\"path\":\"notes/a.md\",\"content\":\"x\",\"find\":\"y\",\"replace\":\"z\"}]}",
	  0, &ALL, IC, "changes[0] (notes/a.md) " EITHER },
	{ "content and replace, no op",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"replace\":\"z\"}]}", 0, &ALL, IC, EITHER },
	{ "content and find only, no op",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"find\":\"y\"}]}", 0, &ALL, IC, EITHER },
	{ "nothing but path", "{\"changes\":[{\"path\":\"a\"}]}", 0, &ALL, IC, EITHER },
	{ "all null but path",
	  "{\"changes\":[{\"path\":\"a\",\"content\":null,\"find\":null,\"replace\":null,\"op\":null}]}",
	  0, &ALL, IC, EITHER },
	{ "patch with empty find",
	  "{\"changes\":[{\"path\":\"a\",\"find\":\"\",\"replace\":\"x\"}]}", 0, &ALL, IC,
	  "changes[0] (a): " NEEDPATCH },
	{ "patch find without replace",
	  "{\"changes\":[{\"path\":\"a\",\"find\":\"x\"}]}", 0, &ALL, IC, NEEDPATCH },
	{ "patch replace without find",
	  "{\"changes\":[{\"path\":\"a\",\"replace\":\"x\"}]}", 0, &ALL, IC, NEEDPATCH },
	{ "op patch with only content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":\"patch\"}]}", 0, &ALL, IC, NEEDPATCH },
	{ "op patch with empty find",
	  "{\"changes\":[{\"path\":\"a\",\"op\":\"patch\",\"find\":\"\",\"replace\":\"\"}]}", 0, &ALL, IC, NEEDPATCH },
	{ "op write without content",
	  "{\"changes\":[{\"path\":\"a\",\"find\":\"x\",\"replace\":\"y\",\"op\":\"write\"}]}", 0, &ALL, IC,
	  "changes[0] (a): a write needs \"content\"" },
	{ "unknown op",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":\"delete\"}]}", 0, &ALL, IC,
	  "changes[0]: op \"delete\" is neither \"write\" nor \"patch\"" },
	{ "op is case-sensitive",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":\"Write\"}]}", 0, &ALL, IC,
	  "op \"Write\" is neither" },
	{ "empty op",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"op\":\"\"}]}", 0, &ALL, IC, "op \"\" is neither" },
	{ "error in the third change names its index and path",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"b\",\"find\":\"f\",\"replace\":\"\"},"
	  "{\"path\":\"c/d.md\",\"content\":3}]}", 0, &ALL, IC, "changes[2]:" },
	/* undeclared tools */
	{ "write_note undeclared",
	  "{\"changes\":[{\"path\":\"n.md\",\"content\":\"x\"}]}", 0, &PATCH, UT,
	  "changes[0] (n.md) needs the tool \"write_note\", which the request's tools do not declare" },
	{ "patch_note undeclared",
	  "{\"changes\":[{\"path\":\"n.md\",\"find\":\"x\",\"replace\":\"y\"}]}", 0, &WRITE, UT,
	  "needs the tool \"patch_note\"" },
	{ "op write undeclared",
	  "{\"changes\":[{\"path\":\"a\",\"op\":\"write\",\"content\":\"x\",\"find\":\"y\",\"replace\":\"z\"}]}",
	  0, &PATCH, UT, "\"write_note\"" },
	{ "op patch undeclared",
	  "{\"changes\":[{\"path\":\"a\",\"op\":\"patch\",\"content\":\"x\",\"find\":\"y\",\"replace\":\"z\"}]}",
	  0, &WRITE, UT, "\"patch_note\"" },
	{ "only finish declared", "{\"changes\":[{\"path\":\"a\",\"content\":\"x\"}]}", 0, &FINISH, UT,
	  "\"write_note\"" },
	{ "no tools at all", "{\"changes\":[{\"path\":\"a\",\"find\":\"x\",\"replace\":\"\"}]}", 0, &NONE, UT,
	  "\"patch_note\"" },
	{ "second change undeclared, first fine",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\"},{\"path\":\"b\",\"find\":\"x\",\"replace\":\"y\"}]}",
	  0, &WRITE, UT, "changes[1] (b) needs the tool \"patch_note\"" },
	/* NUL */
	{ "raw NUL in a string", "{\"answer\":\"a\0b\"}", 16, &ALL, IC, "NUL byte" },
	{ "raw NUL after the object", "{}\0", 3, &ALL, IC, "NUL byte" },
	{ "raw NUL alone", "\0", 1, &ALL, IC, "NUL byte" },
	{ "\\u0000 in content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\\u0000y\"}]}", 0, &ALL, IC, "NUL (\\u0000)" },
	{ "\\u0000 in path", "{\"changes\":[{\"path\":\"a\\u0000b\",\"content\":\"x\"}]}", 0, &ALL, IC, "NUL (\\u0000)" },
	{ "\\u0000 in find",
	  "{\"changes\":[{\"path\":\"a\",\"find\":\"\\u0000\",\"replace\":\"x\"}]}", 0, &ALL, IC, "NUL (\\u0000)" },
	{ "\\u0000 in answer", "{\"answer\":\"\\u0000\"}", 0, &ALL, IC, "NUL (\\u0000)" },
	{ "\\u0000 in a key", "{\"ans\\u0000wer\":\"x\"}", 0, &ALL, IC, "NUL (\\u0000)" },
	{ "\\u0000 after an escaped quote", "{\"answer\":\"\\\"\\u0000\"}", 0, &ALL, IC, "NUL (\\u0000)" },
	/* cJSON 1.7.15 reads a \u escape with a non-hex digit as U+0000 and
	 * cuts the string there: these must be refused, not truncated */
	{ "\\uzzzz in content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"keep\\uzzzzlost\"}]}", 0, &ALL, IC, HEX4 },
	{ "\\u000g in answer", "{\"answer\":\"x\\u000gy\"}", 0, &ALL, IC, HEX4 },
	{ "\\u0x41 in path", "{\"changes\":[{\"path\":\"a\\u0x41\",\"content\":\"x\"}]}", 0, &ALL, IC, HEX4 },
	{ "\\u 123 in find",
	  "{\"changes\":[{\"path\":\"a\",\"find\":\"\\u 123\",\"replace\":\"x\"}]}", 0, &ALL, IC, HEX4 },
	{ "\\u at the end of the output", "{\"answer\":\"\\u", 0, &ALL, IC, HEX4 },
	{ "\\u12 at the end of the output", "{\"answer\":\"\\u12", 0, &ALL, IC, HEX4 },
	{ "\\u00\" (short escape)", "{\"answer\":\"\\u00\"}", 0, &ALL, IC, HEX4 },
	/* duplicate keys the contract reads: ambiguous, refused */
	{ "answer twice", "{\"answer\":\"one\",\"answer\":\"two\"}", 0, &ALL, IC,
	  "the output gives \"answer\" twice" },
	{ "changes twice", "{\"changes\":[],\"answer\":\"\",\"changes\":null}", 0, &ALL, IC,
	  "the output gives \"changes\" twice" },
	{ "content twice in a change",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\",\"content\":\"y\"}]}", 0, &ALL, IC,
	  "changes[0] gives \"content\" twice" },
	{ "path twice in the second change",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"x\"},{\"path\":\"b\",\"op\":\"write\","
	  "\"path\":\"c\",\"content\":\"y\"}]}", 0, &ALL, IC, "changes[1] gives \"path\" twice" },
	{ "op twice", "{\"changes\":[{\"path\":\"a\",\"op\":\"write\",\"content\":\"x\",\"op\":\"patch\"}]}",
	  0, &ALL, IC, "gives \"op\" twice" },
	/* raw control bytes inside strings (RFC 8259: must be escaped) */
	{ "raw newline in content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"l1\nl2\"}]}", 0, &ALL, IC,
	  "raw control byte 0x0a in a string (byte 37)" },
	{ "raw tab in answer", "{\"answer\":\"a\tb\"}", 0, &ALL, IC, "raw control byte 0x09" },
	{ "raw 0x01 in path", "{\"changes\":[{\"path\":\"\x01\",\"content\":\"\"}]}", 0, &ALL, IC,
	  "raw control byte 0x01" },
	{ "raw 0x1f in a key", "{\"ans\x1fwer\":\"\"}", 0, &ALL, IC, "raw control byte 0x1f" },
	/* invalid UTF-8 */
	{ "lone continuation byte", "{\"answer\":\"\x80\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "overlong slash", "{\"answer\":\"\xC0\xAF\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "UTF-8 surrogate", "{\"answer\":\"\xED\xA0\x80\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "truncated 4-byte sequence", "{\"answer\":\"\xF0\x9F\x98\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "beyond U+10FFFF", "{\"answer\":\"\xF4\x90\x80\x80\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "F5 lead byte", "{\"answer\":\"\xF5\x80\x80\x80\"}", 0, &ALL, IC, "not valid UTF-8" },
	{ "Latin-1 in content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"caf\xE9\"}]}", 0, &ALL, IC, "not valid UTF-8" },
	{ "invalid UTF-8 outside strings", "{}\xFF", 0, &ALL, IC, "not valid UTF-8" },
	{ "output ends mid-sequence", "{}\xE2\x80", 0, &ALL, IC, "not valid UTF-8" },
};

static int valid_message(const struct agent_error *e)
{
	size_t n = strnlen(e->message, sizeof e->message);

	return n > 0 && n < sizeof e->message && jstr_utf8_valid(e->message, n);
}

static void check_err_row(const struct err_row *r)
{
	struct result res;
	size_t len = r->len ? r->len : strlen(r->in);

	run(&res, r->in, len, *r->tools);
	if (!tap_ok(res.rc == -1 && res.err.code && !strcmp(res.err.code, r->code) &&
		    strstr(res.err.message, r->msg) && untouched(&res.b) && valid_message(&res.err),
		    "refused: %s", r->name))
		tap_diag("rc %ld, code %s, message \"%s\", buffer %zu bytes", res.rc,
			 res.err.code ? res.err.code : "(none)", res.err.message, res.b.len);
	jbuf_free(&res.b);
}

/* ------------------------------------------------------------------ */
/* Tool calls                                                          */

/* One expected call. write_note: a = path, b = content; patch_note: a =
 * path, b = find, c = replace; finish: a = answer. */
struct exp_call {
	const char *tool;
	const char *a, *b, *c;
};

#define MAXCALLS 6

struct ok_row {
	const char *name;
	const char *in;
	const struct toolset *tools;
	long rc;
	struct exp_call calls[MAXCALLS];	/* rc + 1 of them, finish last */
};

#define W(p, c) { "write_note", p, c, NULL }
#define P(p, f, r) { "patch_note", p, f, r }
#define F(a) { "finish", a, NULL, NULL }

static const struct ok_row ok_rows[] = {
	{ "zero changes", "{\"changes\":[],\"answer\":\"\"}", &ALL, 0, { F("") } },
	{ "empty object", "{}", &ALL, 0, { F("") } },
	{ "changes and answer null", "{\"changes\":null,\"answer\":null}", &ALL, 0, { F("") } },
	{ "answer only", "{\"answer\":\"Nothing to change.\"}", &ALL, 0, { F("Nothing to change.") } },
	{ "answer absent, changes empty", "{\"changes\":[]}", &FINISH, 0, { F("") } },
	{ "zero changes, no tools declared", "{\"answer\":\"hi\"}", &NONE, 0, { F("hi") } },
	{ "write", "{\"changes\":[{\"path\":\"notes/a.md\",\"content\":\"# A\\n\"}],\"answer\":\"wrote a\"}",
	  &ALL, 1, { W("notes/a.md", "# A\n"), F("wrote a") } },
	{ "write with empty content", "{\"changes\":[{\"path\":\"e\",\"content\":\"\"}]}",
	  &WRITE, 1, { W("e", ""), F("") } },
	{ "patch", "{\"changes\":[{\"path\":\"b.md\",\"find\":\"old\",\"replace\":\"new\"}],\"answer\":\"ok\"}",
	  &PATCH, 1, { P("b.md", "old", "new"), F("ok") } },
	{ "patch with empty replace", "{\"changes\":[{\"path\":\"b\",\"find\":\"x\",\"replace\":\"\"}]}",
	  &ALL, 1, { P("b", "x", ""), F("") } },
	{ "op write", "{\"changes\":[{\"op\":\"write\",\"path\":\"a\",\"content\":\"c\"}]}",
	  &ALL, 1, { W("a", "c"), F("") } },
	{ "op patch", "{\"changes\":[{\"op\":\"patch\",\"path\":\"a\",\"find\":\"f\",\"replace\":\"r\"}]}",
	  &ALL, 1, { P("a", "f", "r"), F("") } },
	{ "op write overrides find/replace",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"c\",\"find\":\"f\",\"replace\":\"r\",\"op\":\"write\"}]}",
	  &WRITE, 1, { W("a", "c"), F("") } },
	{ "op patch overrides content",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"c\",\"find\":\"f\",\"replace\":\"r\",\"op\":\"patch\"}]}",
	  &PATCH, 1, { P("a", "f", "r"), F("") } },
	{ "null content counts as absent",
	  "{\"changes\":[{\"path\":\"a\",\"content\":null,\"find\":\"f\",\"replace\":\"r\"}]}",
	  &ALL, 1, { P("a", "f", "r"), F("") } },
	{ "null find and replace count as absent",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"c\",\"find\":null,\"replace\":null,\"op\":null}]}",
	  &ALL, 1, { W("a", "c"), F("") } },
	{ "unknown keys ignored",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"c\",\"mode\":420,\"meta\":{\"x\":[1,2]}}],"
	  "\"answer\":\"a\",\"extra\":[true,null]}", &ALL, 1, { W("a", "c"), F("a") } },
	{ "mixed, in order",
	  "{\"changes\":[{\"path\":\"1\",\"content\":\"one\"},{\"path\":\"2\",\"find\":\"a\",\"replace\":\"b\"},"
	  "{\"path\":\"3\",\"op\":\"write\",\"content\":\"three\"},{\"path\":\"4\",\"op\":\"patch\",\"find\":\"c\","
	  "\"replace\":\"d\",\"content\":\"ignored\"}],\"answer\":\"four\"}",
	  &ALL, 4, { W("1", "one"), P("2", "a", "b"), W("3", "three"), P("4", "c", "d"), F("four") } },
	{ "finish need not be declared", "{\"changes\":[{\"path\":\"a\",\"content\":\"c\"}]}",
	  &NOFINISH, 1, { W("a", "c"), F("") } },
	{ "answer before changes", "{\"answer\":\"first\",\"changes\":[{\"path\":\"a\",\"content\":\"c\"}]}",
	  &ALL, 1, { W("a", "c"), F("first") } },
	{ "trailing whitespace", "{\"answer\":\"x\"} \r\n\t\n", &ALL, 0, { F("x") } },
	{ "leading and inner whitespace", "\n\t {\n \"changes\" : [ ] ,\r\n \"answer\" : \"x\" }\n",
	  &ALL, 0, { F("x") } },
	{ "brackets inside strings do not nest",
	  "{\"answer\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{\"}",
	  &ALL, 0, { F("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{") } },
	{ "escaped quote then brackets",
	  "{\"changes\":[{\"path\":\"q\\\"[{\",\"content\":\"}]\\\\\"}],\"answer\":\"\\\\\\\"\"}",
	  &ALL, 1, { W("q\"[{", "}]\\"), F("\\\"") } },
	{ "\\\\u0000 is text, not NUL",
	  "{\"changes\":[{\"path\":\"a\",\"content\":\"\\\\u0000\"}],\"answer\":\"\\\\u0000\\\\\"}",
	  &ALL, 1, { W("a", "\\u0000"), F("\\u0000\\") } },
	{ "\\u0001 and \\u0100 are not NUL",
	  "{\"answer\":\"\\u0001\\u0100\\u1000\\u0010\"}", &ALL, 0, { F("\x01\xC4\x80\xE1\x80\x80\x10") } },
	{ "escapes decoded",
	  "{\"changes\":[{\"path\":\"p\\/q\",\"content\":\"\\b\\f\\n\\r\\t\\\"\\\\\\/\\u001f\\u007f\"}]}",
	  &ALL, 1, { W("p/q", "\b\f\n\r\t\"\\/\x1f\x7f"), F("") } },
	{ "non-BMP raw and escaped, upper and lower hex",
	  "{\"changes\":[{\"path\":\"\xF0\x9F\x93\x9D.md\",\"find\":\"\\uD83D\\uDE00\","
	  "\"replace\":\"\\ud83d\\ude00\xF0\x9F\x98\x80\"}],\"answer\":\"\xF4\x8F\xBF\xBF\"}",
	  &ALL, 1, { P("\xF0\x9F\x93\x9D.md", "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80"),
		     F("\xF4\x8F\xBF\xBF") } },
	{ "U+2028/2029 raw and escaped",
	  "{\"changes\":[{\"path\":\"l\xE2\x80\xA8s\",\"content\":\"a\xE2\x80\xA8" "b\\u2029c\"}],"
	  "\"answer\":\"\\u2028\xE2\x80\xA9\"}",
	  &ALL, 1, { W("l\xE2\x80\xA8s", "a\xE2\x80\xA8" "b\xE2\x80\xA9" "c"), F("\xE2\x80\xA8\xE2\x80\xA9") } },
	{ "CRLF, tabs, escaped controls and raw DEL kept",
	  "{\"changes\":[{\"path\":\"w.txt\",\"content\":\"l1\\r\\nl2\\r\\n\\tx\\u0007\x7f\"}]}",
	  &ALL, 1, { W("w.txt", "l1\r\nl2\r\n\tx\a\x7f"), F("") } },
	{ "path with spaces, dots and backslashes",
	  "{\"changes\":[{\"path\":\" ../a b\\\\c.md \",\"content\":\"x\"}]}",
	  &ALL, 1, { W(" ../a b\\c.md ", "x"), F("") } },
	{ "find and replace with quotes and JSON text",
	  "{\"changes\":[{\"path\":\"c.json\",\"find\":\"{\\\"k\\\": [1, \\\"v\\\"]}\","
	  "\"replace\":\"{\\\"k\\\":\\\"\\\\u0000\\\"}\"}]}",
	  &PATCH, 1, { P("c.json", "{\"k\": [1, \"v\"]}", "{\"k\":\"\\u0000\"}"), F("") } },
	{ "duplicate key outside the contract is harmless",
	  "{\"x\":1,\"answer\":\"one\",\"x\":2,\"changes\":[{\"path\":\"a\",\"content\":\"c\","
	  "\"meta\":1,\"meta\":2}]}", &ALL, 1, { W("a", "c"), F("one") } },
};

/* The raw output: appended after PRE, valid UTF-8, no raw control
 * character and no raw U+2028/2029 anywhere (the escaper writes them as
 * \u2028/\u2029, inside the arguments string then as \\u2028). */
static int raw_ok(const struct jbuf *b)
{
	const char *p = b->p + strlen(PRE);
	size_t n = b->len - strlen(PRE);

	if (b->oom || b->len < strlen(PRE) || memcmp(b->p, PRE, strlen(PRE)))
		return 0;
	if (!jstr_utf8_valid(p, n) || memmem(p, n, "\xE2\x80\xA8", 3) || memmem(p, n, "\xE2\x80\xA9", 3))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20)
			return 0;
	return 1;
}

static int same(const cJSON *v, const char *want)
{
	return cJSON_IsString(v) && strlen(v->valuestring) == strlen(want) &&
	       !memcmp(v->valuestring, want, strlen(want));
}

static const char *const write_keys[] = { "path", "content" };
static const char *const patch_keys[] = { "path", "find", "replace" };
static const char *const finish_keys[] = { "answer" };

/* One call against its expectation; *why says what differed. */
static int check_call(const cJSON *c, size_t i, const struct exp_call *e, const char **why)
{
	const cJSON *fn, *name, *args, *id, *type;
	const char *const *keys;
	const char *vals[3] = { e->a, e->b, e->c };
	size_t nkeys;
	char want_id[64];
	cJSON *a;
	int ok = 1;

	*why = "shape";
	if (!cJSON_IsObject(c) || cJSON_GetArraySize(c) != 3)
		return 0;
	id = cJSON_GetObjectItemCaseSensitive(c, "id");
	type = cJSON_GetObjectItemCaseSensitive(c, "type");
	fn = cJSON_GetObjectItemCaseSensitive(c, "function");
	snprintf(want_id, sizeof want_id, TEST_CALL "%zu", i);
	*why = "id";
	if (!same(id, want_id))
		return 0;
	*why = "type";
	if (!same(type, "function"))
		return 0;
	*why = "function";
	if (!cJSON_IsObject(fn) || cJSON_GetArraySize(fn) != 2)
		return 0;
	name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	*why = "name";
	if (!same(name, e->tool))
		return 0;
	*why = "arguments not a string";
	if (!cJSON_IsString(args))
		return 0;
	if (!strcmp(e->tool, "write_note"))
		keys = write_keys, nkeys = 2;
	else if (!strcmp(e->tool, "patch_note"))
		keys = patch_keys, nkeys = 3;
	else
		keys = finish_keys, nkeys = 1;
	*why = "arguments not one JSON object";
	a = cJSON_ParseWithOpts(args->valuestring, NULL, 1);
	if (!cJSON_IsObject(a) || (size_t)cJSON_GetArraySize(a) != nkeys) {
		cJSON_Delete(a);
		return 0;
	}
	for (size_t k = 0; k < nkeys; k++)
		if (!same(cJSON_GetObjectItemCaseSensitive(a, keys[k]), vals[k])) {
			*why = keys[k];
			ok = 0;
		}
	cJSON_Delete(a);
	return ok;
}

/* Parses the output of a success and checks rc + 1 calls against exp. */
static int check_calls(const char *name, struct jbuf *b, long rc, const struct exp_call *exp)
{
	const char *text = jbuf_cstr(b), *why = NULL;
	cJSON *arr;
	const cJSON *c;
	size_t i = 0;
	int ok;

	if (!text)
		return tap_ok(0, "%s: output", name);
	arr = cJSON_ParseWithOpts(text + strlen(PRE), NULL, 1);
	ok = tap_ok(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == rc + 1 && raw_ok(b),
		    "%s: a JSON array of %ld calls", name, rc + 1);
	if (!ok) {
		tap_diag("got %s", text);
		cJSON_Delete(arr);
		return 0;
	}
	cJSON_ArrayForEach(c, arr) {
		if (!check_call(c, i, &exp[i], &why)) {
			ok = 0;
			break;
		}
		i++;
	}
	if (!tap_ok(ok, "%s: ids, types, names and arguments exact", name))
		tap_diag("call %zu: %s differs in %s", i, why, text);
	cJSON_Delete(arr);
	return ok;
}

static void check_ok_row(const struct ok_row *r)
{
	struct result res;

	run(&res, r->in, strlen(r->in), *r->tools);
	if (!tap_ok(res.rc == r->rc, "%s: rc %ld", r->name, r->rc))
		tap_diag("rc %ld: %s: %s", res.rc, res.err.code ? res.err.code : "", res.err.message);
	else
		check_calls(r->name, &res.b, r->rc, r->calls);
	jbuf_free(&res.b);
}

/* ------------------------------------------------------------------ */
/* Exact bytes, programmatic inputs                                    */

static const char finish_empty[] =
	"[{\"id\":\"" TEST_CALL "0\",\"type\":\"function\",\"function\":{\"name\":\"finish\","
	"\"arguments\":\"{\\\"answer\\\":\\\"\\\"}\"}}]";

static void check_exact(void)
{
	static const char write_out[] =
		"[{\"id\":\"" TEST_CALL "0\",\"type\":\"function\",\"function\":{\"name\":\"write_note\","
		"\"arguments\":\"{\\\"path\\\":\\\"a\\\",\\\"content\\\":\\\"x\\\\n\\\\u2028\\\"}\"}},"
		"{\"id\":\"" TEST_CALL "1\",\"type\":\"function\",\"function\":{\"name\":\"patch_note\","
		"\"arguments\":\"{\\\"path\\\":\\\"b\\\",\\\"find\\\":\\\"\\\\\\\"\\\",\\\"replace\\\":\\\"\\\"}\"}},"
		"{\"id\":\"" TEST_CALL "2\",\"type\":\"function\",\"function\":{\"name\":\"finish\","
		"\"arguments\":\"{\\\"answer\\\":\\\"done\\\"}\"}}]";
	static const char write_in[] =
		"{\"changes\":[{\"path\":\"a\",\"content\":\"x\\n\xE2\x80\xA8\"},"
		"{\"path\":\"b\",\"find\":\"\\\"\",\"replace\":\"\"}],\"answer\":\"done\"}";
	struct result res;
	struct jbuf fo = {0};

	run(&res, "{}", 2, ALL);
	tap_ok(res.rc == 0 && res.b.len == strlen(PRE) + strlen(finish_empty) &&
	       !memcmp(res.b.p + strlen(PRE), finish_empty, strlen(finish_empty)),
	       "exact bytes: zero changes");
	agent_finish_only(&fo, TEST_REQ_ID);
	tap_ok(fo.len == res.b.len - strlen(PRE) && !memcmp(fo.p, res.b.p + strlen(PRE), fo.len),
	       "agent_finish_only equals the zero-changes output");
	jbuf_free(&fo);
	jbuf_free(&res.b);

	run(&res, write_in, strlen(write_in), ALL);
	if (!tap_ok(res.rc == 2 && res.b.len == strlen(PRE) + strlen(write_out) &&
		    !memcmp(res.b.p + strlen(PRE), write_out, strlen(write_out)),
		    "exact bytes: write, patch, finish (U+2028 as \\\\u2028)"))
		tap_diag("got %.*s", (int)res.b.len, res.b.p);
	jbuf_free(&res.b);

	/* appends: a second call adds its array after the first */
	{
		struct jbuf b = {0};
		struct agent_error e;
		long r1 = agent_tool_calls("{}", 2, tools_all, 3, TEST_REQ_ID, &b, &e);
		long r2 = agent_tool_calls("{}", 2, tools_all, 3, TEST_REQ_ID, &b, &e);

		tap_ok(r1 == 0 && r2 == 0 && b.len == 2 * strlen(finish_empty) &&
		       !memcmp(b.p, finish_empty, strlen(finish_empty)) &&
		       !memcmp(b.p + strlen(finish_empty), finish_empty, strlen(finish_empty)),
		       "appends to what the buffer already holds");
		jbuf_free(&b);
	}
}

/* Every byte 0x01..0x7F and a set of multi-byte characters, JSON-escaped
 * the way a program's json.dumps(ensure_ascii=True/False) would, must
 * come back out of the arguments byte for byte. */
static void check_lossless(void)
{
	struct jbuf in = {0}, want = {0};
	struct exp_call exp[2];
	struct result res;
	static const char *const mb[] = {
		"\xC2\xA0", "\xC3\xA9", "\xDF\xBF", "\xE0\xA0\x80", "\xE2\x80\xA8", "\xE2\x80\xA9",
		"\xEF\xBB\xBF", "\xEF\xBF\xBD", "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF0\x9F\x98\x80",
		"\xF4\x8F\xBF\xBF",
	};

	/* content raw-escaped via jstr_escape (so also \u001f, \u2028 forms) */
	for (int c = 1; c < 0x80; c++) {
		char ch = (char)c;

		jbuf_append(&want, &ch, 1);
	}
	for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
		jbuf_puts(&want, mb[i]);
	jbuf_puts(&want, "\r\n\r\n\t\t\"\\\"\\\\u0000");
	jbuf_puts(&in, "{\"changes\":[{\"path\":");
	jstr_escape(&in, want.p, want.len);
	jbuf_puts(&in, ",\"content\":");
	jstr_escape(&in, want.p, want.len);
	jbuf_puts(&in, "}],\"answer\":");
	jstr_escape(&in, want.p, want.len);
	jbuf_puts(&in, "}");
	jbuf_cstr(&want);
	exp[0] = (struct exp_call){ "write_note", want.p, want.p, NULL };
	exp[1] = (struct exp_call){ "finish", want.p, NULL, NULL };
	run(&res, in.p, in.len, ALL);
	if (tap_ok(res.rc == 1, "lossless: every ASCII byte and 12 multi-byte characters"))
		check_calls("lossless", &res.b, 1, exp);
	else
		tap_diag("%s: %s", res.err.code, res.err.message);
	jbuf_free(&res.b);
	jbuf_free(&in);
	jbuf_free(&want);
}

/* 1 MiB of content, and a 1 MiB find/replace pair. */
static void check_large(void)
{
	const size_t big = 1 << 20;
	char *want = malloc(big + 1);
	struct jbuf in = {0};
	struct exp_call exp[3];
	struct result res;
	static const char pat[] = "line \"quoted\" \\ tab\t\xE2\x82\xAC\r\n";
	size_t cut;

	if (!want)
		abort();
	for (size_t i = 0; i < big; i++)
		want[i] = pat[i % (sizeof pat - 1)];
	/* do not end inside the 3-byte euro sign */
	cut = jstr_utf8_prefix(want, big);
	memset(want + cut, 'x', big - cut);
	want[big] = '\0';
	jbuf_puts(&in, "{\"changes\":[{\"path\":\"big.txt\",\"content\":");
	jstr_escape(&in, want, big);
	jbuf_puts(&in, "},{\"path\":\"big.txt\",\"find\":");
	jstr_escape(&in, want, big);
	jbuf_puts(&in, ",\"replace\":");
	jstr_escape(&in, want, big);
	jbuf_puts(&in, "}],\"answer\":\"big\"}");
	exp[0] = (struct exp_call){ "write_note", "big.txt", want, NULL };
	exp[1] = (struct exp_call){ "patch_note", "big.txt", want, want };
	exp[2] = (struct exp_call){ "finish", "big", NULL, NULL };
	run(&res, in.p, in.len, ALL);
	if (tap_ok(res.rc == 2, "1 MiB content and find/replace (%zu bytes of JSON)", in.len))
		check_calls("1 MiB", &res.b, 2, exp);
	else
		tap_diag("%s: %s", res.err.code, res.err.message);
	jbuf_free(&res.b);
	jbuf_free(&in);
	free(want);
}

/* 200 changes: ids …_0…_199, finish …_200. */
static void check_many(void)
{
	struct jbuf in = {0};
	struct result res;
	const char *text;
	cJSON *arr;
	int ok = 1, i = 0;
	const cJSON *c;

	jbuf_puts(&in, "{\"changes\":[");
	for (int k = 0; k < 200; k++)
		jbuf_printf(&in, "%s{\"path\":\"n%d\",%s}", k ? "," : "", k,
			    k % 2 ? "\"find\":\"a\",\"replace\":\"b\"" : "\"content\":\"c\"");
	jbuf_puts(&in, "],\"answer\":\"many\"}");
	run(&res, in.p, in.len, ALL);
	text = jbuf_cstr(&res.b);
	arr = text ? cJSON_Parse(text + strlen(PRE)) : NULL;
	ok = res.rc == 200 && cJSON_GetArraySize(arr) == 201;
	cJSON_ArrayForEach(c, arr) {
		char want[64], path[32];
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
		const char *tool = i == 200 ? "finish" : i % 2 ? "patch_note" : "write_note";
		cJSON *a;

		snprintf(want, sizeof want, TEST_CALL "%d", i);
		snprintf(path, sizeof path, "n%d", i);
		ok = ok && same(cJSON_GetObjectItemCaseSensitive(c, "id"), want) &&
		     same(cJSON_GetObjectItemCaseSensitive(fn, "name"), tool);
		a = cJSON_Parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "arguments")));
		ok = ok && (i == 200 ? same(cJSON_GetObjectItemCaseSensitive(a, "answer"), "many")
				     : same(cJSON_GetObjectItemCaseSensitive(a, "path"), path));
		cJSON_Delete(a);
		i++;
	}
	tap_ok(ok, "200 changes: ids ..._0.._199 in order, finish is ..._200");
	cJSON_Delete(arr);
	jbuf_free(&res.b);
	jbuf_free(&in);
}

/* Nesting: 64 levels are fine, 65 are refused, in any position. */
static void check_depth(void)
{
	struct jbuf in = {0};
	struct result res;

	/* root object (1) + "x": 63 arrays = 64 */
	jbuf_puts(&in, "{\"answer\":\"deep\",\"x\":");
	for (int k = 0; k < 63; k++)
		jbuf_puts(&in, "[");
	for (int k = 0; k < 63; k++)
		jbuf_puts(&in, "]");
	jbuf_puts(&in, "}");
	run(&res, in.p, in.len, ALL);
	tap_ok(res.rc == 0 && raw_ok(&res.b), "nesting of exactly 64 levels accepted");
	jbuf_free(&res.b);

	in.len = 0;
	jbuf_puts(&in, "{\"answer\":\"deep\",\"x\":");
	for (int k = 0; k < 64; k++)
		jbuf_puts(&in, k % 2 ? "{\"k\":" : "[");
	for (int k = 63; k >= 0; k--)
		jbuf_puts(&in, k % 2 ? "}" : "]");
	jbuf_puts(&in, "}");
	run(&res, in.p, in.len, ALL);
	tap_ok(res.rc == -1 && !strcmp(res.err.code, "invalid_changes") &&
	       strstr(res.err.message, "nested deeper than 64 levels") && untouched(&res.b),
	       "nesting of 65 levels (objects and arrays) refused");
	jbuf_free(&res.b);

	/* 100000 unclosed brackets: refused by the prescan, no deep recursion */
	in.len = 0;
	for (int k = 0; k < 100000; k++)
		jbuf_puts(&in, "[");
	run(&res, in.p, in.len, ALL);
	tap_ok(res.rc == -1 && strstr(res.err.message, "nested deeper") && untouched(&res.b),
	       "100000 open brackets refused");
	jbuf_free(&res.b);

	/* 65 levels inside changes: the depth counts from the root */
	in.len = 0;
	jbuf_puts(&in, "{\"changes\":[{\"path\":\"a\",\"content\":\"c\",\"meta\":");
	for (int k = 0; k < 62; k++)
		jbuf_puts(&in, "[");
	for (int k = 0; k < 62; k++)
		jbuf_puts(&in, "]");
	jbuf_puts(&in, "}]}");
	run(&res, in.p, in.len, ALL);
	tap_ok(res.rc == -1 && strstr(res.err.message, "nested deeper than 64") && untouched(&res.b),
	       "65 levels inside a change refused");
	jbuf_free(&res.b);
	jbuf_free(&in);
}

/* An error message quoting a long non-ASCII path or op stays valid UTF-8. */
static void check_long_names(void)
{
	struct jbuf in = {0};
	struct result res;

	jbuf_puts(&in, "{\"changes\":[{\"path\":\"a");
	for (int k = 0; k < 150; k++)
		jbuf_puts(&in, "\xC3\xA9");	/* é: byte 200 falls inside one */
	jbuf_puts(&in, "\",\"content\":\"x\"}]}");
	run(&res, in.p, in.len, PATCH);
	if (!tap_ok(res.rc == -1 && !strcmp(res.err.code, "undeclared_tool") &&
		    strstr(res.err.message, "(a\xC3\xA9\xC3\xA9") && valid_message(&res.err),
		    "message quoting a long non-ASCII path is valid UTF-8"))
		tap_diag("%s", res.err.message);
	jbuf_free(&res.b);

	in.len = 0;
	jbuf_puts(&in, "{\"changes\":[{\"path\":\"p\",\"content\":\"x\",\"op\":\"w");
	for (int k = 0; k < 40; k++)
		jbuf_puts(&in, "\xE2\x82\xAC");	/* €: byte 32 falls inside one */
	jbuf_puts(&in, "\"}]}");
	run(&res, in.p, in.len, ALL);
	if (!tap_ok(res.rc == -1 && strstr(res.err.message, "op \"w\xE2\x82\xAC") &&
		    valid_message(&res.err), "message quoting a long non-ASCII op is valid UTF-8"))
		tap_diag("%s", res.err.message);
	jbuf_free(&res.b);
	jbuf_free(&in);
}

/* Every strict prefix of a valid output is refused, except the object
 * itself without its trailing space; each prefix sits at the guard page,
 * so a read past the end faults. */
static void check_prefixes(void)
{
	static const char full[] =
		"{\"changes\":[{\"path\":\"a\\u00e9\",\"content\":\"\\ud83d\\ude00x\"},"
		"{\"path\":\"b\",\"op\":\"patch\",\"find\":\"\\\"\",\"replace\":\"\"}],\"answer\":\"\xE2\x82\xAC\"} ";
	size_t n = strlen(full), bad = 0;

	for (size_t k = 0; k < n; k++) {
		struct result res;

		run(&res, full, k, ALL);
		/* the whole object, just without its trailing space, is fine */
		if (k == n - 1 ? res.rc != 2
			       : res.rc != -1 || !untouched(&res.b) || !valid_message(&res.err))
			bad++;
		jbuf_free(&res.b);
	}
	tap_ok(bad == 0, "all %zu truncations refused without reading past the end", n);
}

/* Ids: the request's random part and the index, so no two calls of
 * two requests share one. */
static void check_ids(void)
{
	char a[AGENT_CALL_ID_MAX], b[AGENT_CALL_ID_MAX], c[AGENT_CALL_ID_MAX];

	agent_call_id(a, "chatcmpl-00112233445566778899aabb", 0);
	agent_call_id(b, "chatcmpl-00112233445566778899aabc", 0);
	agent_call_id(c, "chatcmpl-00112233445566778899aabb", 10);
	tap_ok(!strcmp(a, "call_00112233445566778899aabb_0") &&
	       !strcmp(c, "call_00112233445566778899aabb_10") && strcmp(a, b),
	       "call ids: call_<request's random part>_<index>, one request's differ from another's");
}

int main(void)
{
	check_ids();
	for (size_t i = 0; i < sizeof err_rows / sizeof err_rows[0]; i++)
		check_err_row(&err_rows[i]);
	for (size_t i = 0; i < sizeof ok_rows / sizeof ok_rows[0]; i++)
		check_ok_row(&ok_rows[i]);
	check_exact();
	check_lossless();
	check_large();
	check_many();
	check_depth();
	check_long_names();
	check_prefixes();
	return tap_done();
}
