/* Table-driven tests for req_parse (SPEC §4, reading a chat request).
 * A row is a request body, the registry's allowlist and --max-blocks,
 * and everything req_parse should decide: status, error code and param,
 * the blocks (label, interpreter, exact code bytes, lines), stdin, the
 * delivery bag, the flags, the skipped fences. Every body is placed right
 * before a PROT_NONE page so a read past its end faults.
 *
 * Bodies are written with ' for " to stay readable; a JSON string that
 * needs an apostrophe spells it \u0027. Rows marked raw are used as is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/precheck.h"
#include "json/request.h"
#include "tests/guard.h"
#include "tests/tap.h"

#define ALL "python,bash,node,ruby,php,perl"
#define LIST_NONE ((size_t)-1)	/* a row's max_skipped for --max-skipped-fences 0 */

static const struct req_limits lim16 = { .max_blocks = 16, .max_skipped = 16 };

struct blk {
	const char *label;
	const char *lang;	/* interp->name */
	const char *code;
	unsigned start, end;
};

struct skip {
	const char *label;
	unsigned line;
};

struct row {
	const char *name;
	const char *body;
	size_t len;		/* 0: strlen(body) */
	int raw;		/* 1: no ' → " conversion */
	const char *allow;	/* NULL: ALL; "" is an empty allowlist */
	size_t max_blocks;	/* 0: 16 */
	size_t max_skipped;	/* 0: 16; LIST_NONE: 0 */
	int status;		/* 0, 400 or 403 */
	const char *code;	/* expected err->code (NULL: none) */
	const char *param;	/* expected err->param (NULL: none) */
	const char *msg;	/* substring of err->message */
	size_t nblocks;
	struct blk b[4];
	const char *in;		/* stdin; NULL: stdin_data must be NULL */
	const char *bag;	/* NULL: no bag */
	int rerun, agent, stream, usage;
	double timeout;
	const char *model_interp;	/* NULL: model names no interpreter */
	const char *tools;	/* declared names joined with ','; NULL: none */
	size_t nskipped;
	struct skip s[4];
	size_t truncated;	/* skipped fences counted past max_skipped */
	const char *code_text;	/* NULL: not checked */
};

/* body builders */
#define M(model, msgs) "{'model':'" model "','messages':[" msgs "]}"
#define MX(model, extra, msgs) "{'model':'" model "'," extra ",'messages':[" msgs "]}"
#define U(c) "{'role':'user','content':'" c "'}"
#define S(c) "{'role':'system','content':'" c "'}"
#define D(c) "{'role':'developer','content':'" c "'}"
#define A(c) "{'role':'assistant','content':'" c "'}"
#define T(c) "{'role':'tool','tool_call_id':'call_1','content':'" c "'}"
#define NM(role, name, c) "{'role':'" role "','name':'" name "','content':'" c "'}"
#define PY1 "```python\\nprint(1)\\n```"
#define PY2 "```python\\nprint(2)\\n```"
#define SH "```sh\\necho hi\\n```"
#define FIN "{'type':'function','function':{'name':'finish','parameters':{}}}"
#define FN(n) "{'type':'function','function':{'name':'" n "'}}"

#define X4(s) s s s s
#define X16(s) X4(X4(s))
#define N63(c) X4(X4(c c c)) X4(c c c) c c c
#define N2048(c) X16(X16(X4(c c)))

/* five skipped fences on lines 1-10, then a block from line 11 */
#define SK5 "```json\\n```\\n```text\\n```\\n```json\\n```\\n```\\n```\\n```zz\\n```\\n"
/* labels of 64 and 63 bytes */
#define L64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define L63 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"

/* one python block "print(1)\n" on lines 1-3 */
#define B_PY1 { "python", "python", "print(1)\n", 1, 3 }
#define B_PY2 { "python", "python", "print(2)\n", 1, 3 }
#define OK_PY1 .nblocks = 1, .b = { B_PY1 }

static const struct row rows[] = {
	/* ---- content forms ---- */
	{ .name = "string content, python fence", .body = M("gpt-4", U(PY1)),
	  OK_PY1, .code_text = "```python\nprint(1)\n```" },
	{ .name = "text parts are concatenated with nothing between",
	  .body = M("gpt-4", "{'role':'user','content':[{'type':'text','text':'```py\\nprint('},"
		    "{'type':'text','text':'2)\\n'},{'type':'text','text':'```'}]}"),
	  .nblocks = 1, .b = { { "py", "python", "print(2)\n", 1, 3 } },
	  .code_text = "```py\nprint(2)\n```" },
	{ .name = "null and absent content are empty",
	  .body = M("gpt-4", "{'role':'user','content':null},{'role':'assistant'}," U(PY1)),
	  OK_PY1 },
	{ .name = "empty parts array: whole-message fallback runs \"\"",
	  .body = M("python", "{'role':'user','content':[]}"),
	  .nblocks = 1, .b = { { "", "python", "", 1, 1 } }, .model_interp = "python" },
	{ .name = "image part with a remote URL → 400: this server fetches nothing",
	  .body = M("gpt-4", "{'role':'user','content':[{'type':'text','text':'" PY1 "'},"
		    "{'type':'image_url','image_url':{'url':'http://x/y.png'}}]}"),
	  .status = 400, .code = "invalid_file", .param = "messages",
	  .msg = "this server holds no files and fetches nothing" },
	{ .name = "part without text → 400",
	  .body = M("gpt-4", U(PY1) ",{'role':'user','content':[{'type':'text'}]}"),
	  .status = 400, .code = "invalid_type", .param = "messages", .msg = "messages[1].content" },
	{ .name = "part with numeric text → 400",
	  .body = M("gpt-4", "{'role':'user','content':[{'type':'text','text':5}]}"),
	  .status = 400, .code = "invalid_type", .param = "messages" },
	{ .name = "part that is a bare string → 400",
	  .body = M("gpt-4", "{'role':'user','content':['" PY1 "']}"),
	  .status = 400, .code = "invalid_type", .param = "messages" },
	{ .name = "input_audio part → 400",
	  .body = M("gpt-4", "{'role':'user','content':[{'type':'input_audio','text':'x'}]}"),
	  .status = 400, .code = "invalid_type", .param = "messages" },
	{ .name = "numeric content → 400",
	  .body = M("gpt-4", "{'role':'user','content':42}"),
	  .status = 400, .code = "invalid_type", .param = "messages",
	  .msg = "must be a string, an array of text parts or null" },
	{ .name = "object content → 400",
	  .body = M("gpt-4", "{'role':'user','content':{'type':'text','text':'x'}}"),
	  .status = 400, .code = "invalid_type", .param = "messages" },

	/* ---- which message is the code message ---- */
	{ .name = "the last user message with a block wins",
	  .body = M("gpt-4", U(PY1) "," U(PY2)), .nblocks = 1, .b = { B_PY2 } },
	{ .name = "a later message without a runnable block is passed over",
	  .body = M("gpt-4", U(PY1) "," U("```json\\n{}\\n```") "," U("thanks")), OK_PY1 },
	{ .name = "a system message can be the code message",
	  .body = M("gpt-4", S(PY1) "," U("run it")), OK_PY1 },
	{ .name = "developer is treated like system",
	  .body = M("gpt-4", D(PY1) "," U("run it")), OK_PY1 },
	{ .name = "fleet_input is never code, and is the bag",
	  .body = M("gpt-4", U(PY1) "," NM("user", "fleet_input", PY2)),
	  OK_PY1, .bag = "```python\nprint(2)\n```" },
	{ .name = "a message named stdin is never code",
	  .body = M("gpt-4", U(PY1) "," NM("user", "stdin", PY2)),
	  OK_PY1, .in = "```python\nprint(2)\n```" },
	{ .name = "only fleet_input has code → 400, labels seen: none",
	  .body = M("gpt-4", NM("user", "fleet_input", PY1) "," U("go")),
	  .status = 400, .code = "no_runnable_block", .param = "messages",
	  .msg = "(labels seen: none)" },
	{ .name = "assistant code is never run",
	  .body = M("gpt-4", U("write code") "," A(PY1)),
	  .status = 400, .code = "no_runnable_block", .param = "messages" },
	{ .name = "tool output code is never run",
	  .body = M("gpt-4", U("go") "," T(PY1)),
	  .status = 400, .code = "no_runnable_block", .param = "messages" },
	{ .name = "another name does not stop a message being code",
	  .body = M("gpt-4", NM("user", "alice", PY1)), OK_PY1 },

	/* ---- unlabeled fences and the model ---- */
	{ .name = "model python runs unlabeled fences",
	  .body = M("python", U("```\\nprint(3)\\n```")),
	  .nblocks = 1, .b = { { "", "python", "print(3)\n", 1, 3 } }, .model_interp = "python" },
	{ .name = "model alias py",
	  .body = M("py", U("~~~\\nprint(3)\\n~~~")),
	  .nblocks = 1, .b = { { "", "python", "print(3)\n", 1, 3 } }, .model_interp = "python" },
	{ .name = "model name is case-insensitive",
	  .body = M("Bash", U("```\\necho hi\\n```")),
	  .nblocks = 1, .b = { { "", "bash", "echo hi\n", 1, 3 } }, .model_interp = "bash" },
	{ .name = "model javascript → node",
	  .body = M("javascript", U("```\\nconsole.log(1)\\n```")),
	  .nblocks = 1, .b = { { "", "node", "console.log(1)\n", 1, 3 } }, .model_interp = "node" },
	{ .name = "other model: unlabeled fence skipped with its line",
	  .body = M("gpt-4o", U("```\\nplain\\n```\\n" PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 4, 6 } },
	  .nskipped = 1, .s = { { "", 1 } } },
	{ .name = "model sh: unlabeled and labeled blocks in order",
	  .body = M("sh", U("```\\necho hi\\n```\\n" PY1)),
	  .nblocks = 2, .b = { { "", "bash", "echo hi\n", 1, 3 },
			       { "python", "python", "print(1)\n", 4, 6 } },
	  .model_interp = "bash" },
	{ .name = "model names an interpreter the allowlist lacks, blocks are python",
	  .allow = "python", .body = M("bash", U(PY1)), OK_PY1, .model_interp = "bash" },

	/* ---- whole-message fallback ---- */
	{ .name = "model python, no fence: the user message runs whole",
	  .body = M("python", U("print(42)")),
	  .nblocks = 1, .b = { { "", "python", "print(42)", 1, 1 } }, .model_interp = "python" },
	{ .name = "whole message, two lines and a final newline",
	  .body = M("python3", U("import sys\\nprint(sys.argv)\\n")),
	  .nblocks = 1, .b = { { "", "python", "import sys\nprint(sys.argv)\n", 1, 2 } },
	  .model_interp = "python" },
	{ .name = "whole message: the last user message",
	  .body = M("python", U("print(1)") "," U("print(2)")),
	  .nblocks = 1, .b = { { "", "python", "print(2)", 1, 1 } }, .model_interp = "python" },
	{ .name = "whole message with a system message before it: stdin",
	  .body = M("python", S("3 4") "," U("print(input())")),
	  .nblocks = 1, .b = { { "", "python", "print(input())", 1, 1 } },
	  .model_interp = "python", .in = "3 4" },
	{ .name = "whole message keeps an unknown fence as text",
	  .body = M("python", U("```json\\n{}\\n```")),
	  .nblocks = 1, .b = { { "", "python", "```json\n{}\n```", 1, 3 } },
	  .model_interp = "python" },
	{ .name = "whole message never takes a system message",
	  .body = M("python", S("print(1)")),
	  .status = 400, .code = "no_runnable_block", .param = "messages" },
	{ .name = "whole message skips a message named stdin",
	  .body = M("python", U("print(input())") "," NM("user", "stdin", "abc")),
	  .nblocks = 1, .b = { { "", "python", "print(input())", 1, 1 } },
	  .model_interp = "python", .in = "abc" },
	{ .name = "whole message followed by an assistant turn: rerun guard",
	  .allow = "bash", .body = M("python", U("print(1)") "," A("1")),
	  .nblocks = 1, .b = { { "", "python", "print(1)", 1, 1 } },
	  .model_interp = "python", .rerun = 1 },

	/* ---- fences: labels, skipped, CommonMark details ---- */
	{ .name = "unknown labels skipped with their lines",
	  .body = M("gpt-4", U("```json\\n{}\\n```\\ntext\\n" PY1 "\\n```mermaid\\ngraph\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 5, 7 } },
	  .nskipped = 2, .s = { { "json", 1 }, { "mermaid", 8 } } },
	{ .name = "label case is kept, lookup ignores it",
	  .body = M("gpt-4", U("```PYTHON\\nprint(1)\\n```")),
	  .nblocks = 1, .b = { { "PYTHON", "python", "print(1)\n", 1, 3 } } },
	{ .name = "only the first word of the info string",
	  .body = M("gpt-4", U("```python title=\\'a.py\\' {.x}\\nprint(1)\\n```")), OK_PY1 },
	{ .name = "tilde fence",
	  .body = M("gpt-4", U("~~~bash\\necho hi\\n~~~")),
	  .nblocks = 1, .b = { { "bash", "bash", "echo hi\n", 1, 3 } } },
	{ .name = "a fence inside a longer fence is content",
	  .body = M("gpt-4", U("````markdown\\n" PY1 "\\n````")),
	  .status = 400, .code = "no_runnable_block", .param = "messages", .msg = "(labels seen: \"markdown\")" },
	{ .name = "an unclosed fence runs to the end",
	  .body = M("gpt-4", U("```python\\nprint(1)\\nprint(2)")),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\nprint(2)", 1, 3 } } },
	{ .name = "indented fence: indent removed from content",
	  .body = M("gpt-4", U("Run:\\n  ```python\\n  x = 1\\n   print(x)\\n  ```")),
	  .nblocks = 1, .b = { { "python", "python", "x = 1\n print(x)\n", 2, 5 } } },
	{ .name = "CRLF lines: label clean, content raw",
	  .body = M("gpt-4", U("```python\\r\\nprint(1)\\r\\n```\\r\\n")),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\r\n", 1, 3 } } },
	{ .name = "all six built-ins and aliases",
	  .body = M("gpt-4", U("```js\\n1\\n```\\n```rb\\n2\\n```\\n```php\\n3\\n```\\n"
			       "```pl\\n4\\n```")),
	  .nblocks = 4, .b = { { "js", "node", "1\n", 1, 3 }, { "rb", "ruby", "2\n", 4, 6 },
			       { "php", "php", "3\n", 7, 9 }, { "pl", "perl", "4\n", 10, 12 } } },
	{ .name = "empty block",
	  .body = M("gpt-4", U("```python\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "", 1, 2 } } },

	/* ---- no runnable block ---- */
	{ .name = "no runnable block lists each label once",
	  .body = M("gpt-4", S("```text\\nhi\\n```") "," U("```json\\n{}\\n```\\n```text\\nx\\n```\\n"
						  "```json\\n[]\\n```")),
	  .status = 400, .code = "no_runnable_block", .param = "messages",
	  .msg = "(labels seen: \"text\", \"json\")" },
	{ .name = "prose only → labels seen: none",
	  .body = M("gpt-4", U("hello")),
	  .status = 400, .code = "no_runnable_block", .param = "messages", .msg = "(labels seen: none)" },
	{ .name = "an unlabeled fence is listed as \"\"",
	  .body = M("gpt-4", U("```\\nx\\n```")),
	  .status = 400, .code = "no_runnable_block", .param = "messages", .msg = "(labels seen: \"\")" },

	/* ---- --max-blocks ---- */
	{ .name = "3 blocks with max 2 → 400",
	  .max_blocks = 2, .body = M("gpt-4", U(PY1 "\\n" PY1 "\\n" SH)),
	  .status = 400, .code = "too_many_blocks", .param = "messages",
	  .msg = "has 3 runnable blocks; at most 2 are accepted" },
	{ .name = "2 blocks with max 2",
	  .max_blocks = 2, .body = M("gpt-4", U(PY1 "\\n" SH)),
	  .nblocks = 2, .b = { B_PY1, { "sh", "bash", "echo hi\n", 4, 6 } } },
	{ .name = "skipped fences do not count toward the maximum",
	  .max_blocks = 1, .body = M("gpt-4", U("```json\\n1\\n```\\n" PY1 "\\n```json\\n2\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 4, 6 } },
	  .nskipped = 2, .s = { { "json", 1 }, { "json", 7 } } },
	{ .name = "17 blocks with the default 16 → 400",
	  .body = M("gpt-4", U(X16("```sh\\n:\\n```\\n") "```sh\\n:\\n```")),
	  .status = 400, .code = "too_many_blocks", .param = "messages", .msg = "has 17 runnable blocks; at most 16" },

	/* ---- --max-skipped-fences: the first N listed, the rest counted ---- */
	{ .name = "5 skipped fences, 2 listed, 3 counted",
	  .max_skipped = 2, .body = M("gpt-4", U(SK5 PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 11, 13 } },
	  .nskipped = 2, .s = { { "json", 1 }, { "text", 3 } }, .truncated = 3 },
	{ .name = "5 skipped fences with --max-skipped-fences 0: 5 counted",
	  .max_skipped = LIST_NONE, .body = M("gpt-4", U(SK5 PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 11, 13 } }, .truncated = 5 },
	{ .name = "4 skipped fences with --max-skipped-fences 4: all listed",
	  .max_skipped = 4, .body = M("gpt-4", U("```a\\n```\\n```b\\n```\\n" PY1 "\\n```c\\n```\\n```d\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 5, 7 } },
	  .nskipped = 4, .s = { { "a", 1 }, { "b", 3 }, { "c", 8 }, { "d", 10 } } },
	{ .name = "the runnable blocks do not count as skipped",
	  .max_skipped = 1, .body = M("gpt-4", U(PY1 "\\n```x\\n```\\n" PY2 "\\n```y\\n```")),
	  .nblocks = 2, .b = { { "python", "python", "print(1)\n", 1, 3 },
			       { "python", "python", "print(2)\n", 6, 8 } },
	  .nskipped = 1, .s = { { "x", 4 } }, .truncated = 1 },
	{ .name = "a label of 64 bytes is kept whole",
	  .body = M("gpt-4", U("```" L64 "\\n```\\n" PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 3, 5 } },
	  .nskipped = 1, .s = { { L64, 1 } } },
	{ .name = "a label of 100 bytes is cut to 64",
	  .body = M("gpt-4", U("```" L64 "0123456789012345678901234567890123456789\\n```\\n" PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 3, 5 } },
	  .nskipped = 1, .s = { { L64, 1 } } },
	{ .name = "a long label is cut before a character, never inside",
	  .body = M("gpt-4", U("```" L63 "\\u00e9\\u00e9\\n```\\n" PY1)),
	  .nblocks = 1, .b = { { "python", "python", "print(1)\n", 3, 5 } },
	  .nskipped = 1, .s = { { L63, 1 } } },
	{ .name = "labels seen: a long label quoted up to a character",
	  .body = M("gpt-4", U("```" L63 "\\u00e9\\n```")),
	  .status = 400, .code = "no_runnable_block", .param = "messages",
	  .msg = "(labels seen: \"" L63 "\")" },

	/* ---- --allowed-programs ---- */
	{ .name = "bash block, python allowed → 403",
	  .allow = "python", .body = M("gpt-4", U(SH)),
	  .status = 403, .code = "program_not_allowed", .param = "messages",
	  .msg = "block 0 (\"sh\", line 1) needs interpreter \"bash\"" },
	{ .name = "second block not allowed → 403 naming it",
	  .allow = "python", .body = M("gpt-4", U(PY1 "\\n" SH)),
	  .status = 403, .code = "program_not_allowed", .param = "messages",
	  .msg = "block 1 (\"sh\", line 4) needs interpreter \"bash\"" },
	{ .name = "empty allowlist → 403 execution disabled",
	  .allow = "", .body = M("gpt-4", U(PY1)),
	  .status = 403, .code = "execution_disabled", .msg = "--allowed-programs is empty" },
	{ .name = "whole-message fallback checks the allowlist",
	  .allow = "bash", .body = M("python", U("print(1)")),
	  .status = 403, .code = "program_not_allowed", .param = "messages", .msg = "needs interpreter \"python\"" },
	{ .name = "allowed by alias",
	  .allow = "py", .body = M("gpt-4", U(PY1)), OK_PY1 },

	/* ---- n ---- */
	{ .name = "n 2 → 400", .body = MX("gpt-4", "'n':2", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "n" },
	{ .name = "n 0 → 400", .body = MX("gpt-4", "'n':0", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "n" },
	{ .name = "n 1.5 → 400", .body = MX("gpt-4", "'n':1.5", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "n" },
	{ .name = "n \"1\" → 400", .body = MX("gpt-4", "'n':'1'", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "n" },
	{ .name = "n true → 400", .body = MX("gpt-4", "'n':true", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "n" },
	{ .name = "n 1", .body = MX("gpt-4", "'n':1", U(PY1)), OK_PY1 },
	{ .name = "n 1.0", .body = MX("gpt-4", "'n':1.0", U(PY1)), OK_PY1 },
	{ .name = "n null", .body = MX("gpt-4", "'n':null", U(PY1)), OK_PY1 },
	{ .name = "sampling parameters are ignored",
	  .body = MX("gpt-4", "'temperature':0.2,'top_p':1,'seed':7,'max_tokens':10,"
		     "'user':'u','logit_bias':{'50256':-100},'stop':['x'],'response_format':"
		     "{'type':'text'},'frequency_penalty':0", U(PY1)), OK_PY1 },

	/* ---- stream ---- */
	{ .name = "stream true", .body = MX("gpt-4", "'stream':true", U(PY1)), OK_PY1, .stream = 1 },
	{ .name = "stream false", .body = MX("gpt-4", "'stream':false", U(PY1)), OK_PY1 },
	{ .name = "stream null", .body = MX("gpt-4", "'stream':null", U(PY1)), OK_PY1 },
	{ .name = "stream \"true\" → 400", .body = MX("gpt-4", "'stream':'true'", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "stream" },
	{ .name = "stream 1 → 400", .body = MX("gpt-4", "'stream':1", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "stream" },
	{ .name = "include_usage true",
	  .body = MX("gpt-4", "'stream':true,'stream_options':{'include_usage':true}", U(PY1)),
	  OK_PY1, .stream = 1, .usage = 1 },
	{ .name = "include_usage false",
	  .body = MX("gpt-4", "'stream':true,'stream_options':{'include_usage':false}", U(PY1)),
	  OK_PY1, .stream = 1 },
	/* one key per row: a body that gives a key twice is refused (issue 35) */
	{ .name = "stream_options {}", .body = MX("gpt-4", "'stream_options':{}", U(PY1)), OK_PY1 },
	{ .name = "stream_options null", .body = MX("gpt-4", "'stream_options':null", U(PY1)),
	  OK_PY1 },
	{ .name = "include_usage null is absent",
	  .body = MX("gpt-4", "'stream':true,'stream_options':{'include_usage':null}", U(PY1)),
	  OK_PY1, .stream = 1 },
	{ .name = "stream_options \"yes\" → 400",
	  .body = MX("gpt-4", "'stream_options':'yes'", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "stream_options" },
	{ .name = "include_usage 1 → 400",
	  .body = MX("gpt-4", "'stream_options':{'include_usage':1}", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "stream_options" },

	/* ---- tools ---- */
	{ .name = "finish declared → agent mode",
	  .body = MX("gpt-4", "'tools':[" FIN "]", U(PY1)), OK_PY1, .agent = 1, .tools = "finish" },
	{ .name = "several tools, finish among them",
	  .body = MX("gpt-4", "'tools':[" FN("bash_exec") "," FIN "," FN("read_file") "]", U(PY1)),
	  OK_PY1, .agent = 1, .tools = "bash_exec,finish,read_file" },
	{ .name = "tools without finish → run mode",
	  .body = MX("gpt-4", "'tools':[" FN("get_weather") "]", U(PY1)),
	  OK_PY1, .tools = "get_weather" },
	{ .name = "Finish is not finish",
	  .body = MX("gpt-4", "'tools':[" FN("Finish") "]", U(PY1)), OK_PY1, .tools = "Finish" },
	{ .name = "tools [] and tool_choice",
	  .body = MX("gpt-4", "'tools':[],'tool_choice':'auto','parallel_tool_calls':false", U(PY1)),
	  OK_PY1 },
	{ .name = "tools null", .body = MX("gpt-4", "'tools':null", U(PY1)), OK_PY1 },
	{ .name = "tools a string → 400", .body = MX("gpt-4", "'tools':'finish'", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools", .msg = "tools must be an array" },
	{ .name = "tool without function → 400",
	  .body = MX("gpt-4", "'tools':[{'type':'function'}]", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools", .msg = "tools[0] must be" },
	{ .name = "tool of another type → 400",
	  .body = MX("gpt-4", "'tools':[{'type':'retrieval','function':{'name':'finish'}}]", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools" },
	{ .name = "tool with an empty name → 400",
	  .body = MX("gpt-4", "'tools':[" FN("") "]", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools" },
	{ .name = "tool with a numeric name → 400",
	  .body = MX("gpt-4", "'tools':[{'type':'function','function':{'name':5}}]", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools" },
	{ .name = "second tool invalid → 400 naming tools[1]",
	  .body = MX("gpt-4", "'tools':[" FIN ",'finish']", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "tools", .msg = "tools[1] must be" },

	/* ---- codellm.timeout_s ---- */
	{ .name = "timeout_s 5", .body = MX("gpt-4", "'codellm':{'timeout_s':5}", U(PY1)),
	  OK_PY1, .timeout = 5 },
	{ .name = "timeout_s 0.25", .body = MX("gpt-4", "'codellm':{'timeout_s':0.25}", U(PY1)),
	  OK_PY1, .timeout = 0.25 },
	{ .name = "timeout_s 1e6 is kept (the handler clamps)",
	  .body = MX("gpt-4", "'codellm':{'timeout_s':1e6}", U(PY1)), OK_PY1, .timeout = 1e6 },
	{ .name = "timeout_s 0 → 400", .body = MX("gpt-4", "'codellm':{'timeout_s':0}", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "codellm.timeout_s" },
	{ .name = "timeout_s -1 → 400", .body = MX("gpt-4", "'codellm':{'timeout_s':-1}", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "codellm.timeout_s" },
	{ .name = "timeout_s \"5\" → 400", .body = MX("gpt-4", "'codellm':{'timeout_s':'5'}", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "codellm.timeout_s" },
	{ .name = "timeout_s 1e400 (infinite) → 400",
	  .body = MX("gpt-4", "'codellm':{'timeout_s':1e400}", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "codellm.timeout_s" },
	{ .name = "timeout_s null", .body = MX("gpt-4", "'codellm':{'timeout_s':null}", U(PY1)),
	  OK_PY1 },
	{ .name = "codellm {}", .body = MX("gpt-4", "'codellm':{}", U(PY1)), OK_PY1 },
	{ .name = "codellm a string → 400", .body = MX("gpt-4", "'codellm':'fast'", U(PY1)),
	  .status = 400, .code = "invalid_type", .param = "codellm" },

	/* ---- re-execution guard ---- */
	{ .name = "assistant after the code message",
	  .body = M("gpt-4", U(PY1) "," A("1")), OK_PY1, .rerun = 1 },
	{ .name = "tool after the code message, agent mode",
	  .body = MX("gpt-4", "'tools':[" FIN "]", U(PY1) ","
		     "{'role':'assistant','content':null,'tool_calls':[{'id':'call_1',"
		     "'type':'function','function':{'name':'finish','arguments':'{}'}}]},"
		     T("done")),
	  OK_PY1, .rerun = 1, .agent = 1, .tools = "finish" },
	{ .name = "function role after the code message",
	  .body = M("gpt-4", U(PY1) ",{'role':'function','name':'f','content':'x'}"),
	  OK_PY1, .rerun = 1 },
	{ .name = "assistant before the code message is no guard",
	  .body = M("gpt-4", U("hi") "," A("hello") "," U(PY1)), OK_PY1 },
	{ .name = "a user message after the code message is no guard",
	  .body = M("gpt-4", U(PY1) "," U("thanks")), OK_PY1 },
	{ .name = "rerun guard skips the allowlist check",
	  .allow = "python", .body = M("gpt-4", U(SH) "," A("hi")),
	  .nblocks = 1, .b = { { "sh", "bash", "echo hi\n", 1, 3 } }, .rerun = 1 },
	{ .name = "rerun guard skips the empty-allowlist 403",
	  .allow = "", .body = M("gpt-4", U(PY1) "," T("x")), OK_PY1, .rerun = 1 },

	/* ---- stdin ---- */
	{ .name = "named stdin wins over a system message",
	  .body = M("gpt-4", S("from system") "," NM("user", "stdin", "named\\n") "," U(PY1)),
	  OK_PY1, .in = "named\n" },
	{ .name = "last plain system message before the code message",
	  .body = M("gpt-4", S("first") "," S("second") "," U(PY1)), OK_PY1, .in = "second" },
	{ .name = "a system message with a fence is not stdin",
	  .body = M("gpt-4", S("plain") "," S("```json\\n{}\\n```") "," U(PY1)), OK_PY1, .in = "plain" },
	{ .name = "a named system message is not stdin",
	  .body = M("gpt-4", S("plain") "," NM("system", "ops", "named") "," U(PY1)),
	  OK_PY1, .in = "plain" },
	{ .name = "name null counts as no name",
	  .body = M("gpt-4", "{'role':'system','name':null,'content':'d'}," U(PY1)), OK_PY1, .in = "d" },
	{ .name = "a system message after the code message is not stdin",
	  .body = M("gpt-4", U(PY1) "," S("after")), OK_PY1 },
	{ .name = "a user message is not stdin",
	  .body = M("gpt-4", U("data") "," U(PY1)), OK_PY1 },
	{ .name = "agent mode: no system-message stdin",
	  .body = MX("gpt-4", "'tools':[" FIN "]", S("data") "," U(PY1)),
	  OK_PY1, .agent = 1, .tools = "finish" },
	{ .name = "agent mode: named stdin still counts",
	  .body = MX("gpt-4", "'tools':[" FIN "]", NM("user", "stdin", "data") "," U(PY1)),
	  OK_PY1, .agent = 1, .tools = "finish", .in = "data" },
	{ .name = "code in a system message, stdin from an earlier one",
	  .body = M("gpt-4", S("data") "," S(PY1)), OK_PY1, .in = "data" },
	{ .name = "developer message as stdin, like system",
	  .body = M("gpt-4", D("dev data") "," U(PY1)), OK_PY1, .in = "dev data" },
	{ .name = "named stdin from text parts, any role",
	  .body = M("gpt-4", "{'role':'system','name':'stdin','content':[{'type':'text','text':'a'},"
		    "{'type':'text','text':'b'}]}," U(PY1)), OK_PY1, .in = "ab" },
	{ .name = "the last named stdin",
	  .body = M("gpt-4", NM("user", "stdin", "one") "," U(PY1) "," NM("user", "stdin", "two")),
	  OK_PY1, .in = "two" },
	{ .name = "empty named stdin: no stdin, no fallback",
	  .body = M("gpt-4", S("system") "," NM("user", "stdin", "") "," U(PY1)), OK_PY1 },
	{ .name = "empty system message: no stdin",
	  .body = M("gpt-4", S("") "," U(PY1)), OK_PY1 },

	/* ---- the delivery bag ---- */
	{ .name = "bag content exact",
	  .body = M("gpt-4", U(PY1) "," NM("user", "fleet_input",
					 "{\\'a\\': [1, 2]}\\n\\tcaf\\u00e9 \\ud83d\\ude00\\n")),
	  OK_PY1, .bag = "{\"a\": [1, 2]}\n\tcaf\xC3\xA9 \xF0\x9F\x98\x80\n" },
	{ .name = "empty bag is still a bag",
	  .body = M("gpt-4", NM("system", "fleet_input", "") "," U(PY1)), OK_PY1, .bag = "" },
	{ .name = "bag from text parts",
	  .body = M("gpt-4", "{'role':'user','name':'fleet_input','content':[{'type':'text','text':'x'},"
		    "{'type':'text','text':'y'}]}," U(PY1)), OK_PY1, .bag = "xy" },
	{ .name = "the last fleet_input is the bag",
	  .body = M("gpt-4", NM("user", "fleet_input", "old") "," U(PY1) ","
		    NM("user", "fleet_input", "new")), OK_PY1, .bag = "new" },
	{ .name = "bag and stdin together",
	  .body = M("gpt-4", NM("user", "fleet_input", "B") "," NM("user", "stdin", "I") "," U(PY1)),
	  OK_PY1, .bag = "B", .in = "I" },

	/* ---- JSON, encoding, limits ---- */
	{ .name = "truncated JSON → 400", .body = "{'model':'gpt-4','messages':[",
	  .status = 400, .code = "invalid_json", .msg = "not valid JSON" },
	{ .name = "trailing garbage → 400", .body = M("gpt-4", U(PY1)) " x",
	  .status = 400, .code = "invalid_json", .msg = "data after the JSON value" },
	{ .name = "two objects → 400", .body = M("gpt-4", U(PY1)) M("gpt-4", U(PY1)),
	  .status = 400, .code = "invalid_json", .msg = "data after the JSON value" },
	{ .name = "trailing whitespace is fine", .body = M("gpt-4", U(PY1)) " \r\n\t\n", OK_PY1 },
	{ .name = "leading whitespace is fine", .body = "\n  " M("gpt-4", U(PY1)), OK_PY1 },
	{ .name = "array body → 400", .body = "[" M("gpt-4", U(PY1)) "]",
	  .status = 400, .code = "invalid_json", .msg = "must be a JSON object" },
	{ .name = "string body → 400", .body = "'hello'",
	  .status = 400, .code = "invalid_json", .msg = "must be a JSON object" },
	{ .name = "number body → 400", .body = "42",
	  .status = 400, .code = "invalid_json", .msg = "must be a JSON object" },
	{ .name = "null body → 400", .body = "null",
	  .status = 400, .code = "invalid_json", .msg = "must be a JSON object" },
	{ .name = "empty body → 400", .body = "", .status = 400, .code = "invalid_json" },
	{ .name = "whitespace body → 400", .body = "  \n", .status = 400, .code = "invalid_json" },
	{ .name = "invalid UTF-8 in a string → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":"
		  "\"```python\\nprint('\xFF')\\n```\"}]}",
	  .status = 400, .code = "invalid_json", .msg = "not valid UTF-8" },
	{ .name = "overlong '/' (C0 AF) → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":\"\xC0\xAF\"}]}",
	  .status = 400, .code = "invalid_json", .msg = "not valid UTF-8" },
	{ .name = "UTF-8 surrogate (ED A0 80) → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":\"\xED\xA0\x80\"}]}",
	  .status = 400, .code = "invalid_json", .msg = "not valid UTF-8" },
	{ .name = "truncated UTF-8 at the very end → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[]}\xE2\x82",
	  .status = 400, .code = "invalid_json", .msg = "not valid UTF-8" },
	{ .name = "\\u0000 in content → 400",
	  .body = M("gpt-4", U("```python\\nprint(1)\\u0000import os\\n```")),
	  .status = 400, .code = "invalid_json", .msg = "NUL" },
	{ .name = "\\u0000 in a key → 400",
	  .body = "{'model':'gpt-4','x\\u0000':1,'messages':[" U(PY1) "]}",
	  .status = 400, .code = "invalid_json", .msg = "NUL" },
	{ .name = "\\u0000 in the model → 400",
	  .body = M("python\\u0000x", U(PY1)), .status = 400, .code = "invalid_json" },
	{ .name = "\\u0000 in an ignored field → 400",
	  .body = MX("gpt-4", "'user':'\\u0000'", U(PY1)), .status = 400, .code = "invalid_json" },
	{ .name = "escaped backslash then \\u0000 → 400",
	  .body = M("gpt-4", U("```python\\nprint(\\'\\\\\\u0000\\')\\n```")),
	  .status = 400, .code = "invalid_json", .msg = "NUL" },
	{ .name = "\"\\\\u0000\" is a backslash and text, fine",
	  .body = M("gpt-4", U("```python\\nprint(\\'\\\\u0000\\')\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(\"\\u0000\")\n", 1, 3 } } },
	{ .name = "escaped quote then \\\\u0000 text, fine",
	  .body = M("gpt-4", U("```python\\nprint(\\'\\\\\\'\\\\u0000\\')\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(\"\\\"\\u0000\")\n", 1, 3 } } },
	{ .name = "\\u0001 is kept", .body = M("gpt-4", U("```python\\nx=\\'\\u0001\\'\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "x=\"\x01\"\n", 1, 3 } } },
	{ .name = "raw NUL in a string → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":"
		  "\"```python\\nprint(1)\0import os\\n```\"}]}",
	  .len = sizeof("{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":"
		  "\"```python\\nprint(1)\0import os\\n```\"}]}") - 1,
	  .status = 400, .code = "invalid_json", .msg = "NUL" },
	{ .name = "raw NUL between tokens → 400", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\0\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  .len = sizeof("{\"model\":\"gpt-4\",\0\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}") - 1,
	  .status = 400, .code = "invalid_json" },
	{ .name = "nesting of exactly REQ_MAX_DEPTH (64)",
	  .body = "{'x':" N63("[") N63("]") ",'model':'gpt-4','messages':[" U(PY1) "]}", OK_PY1 },
	{ .name = "nesting of 65 → 400",
	  .body = "{'x':" N63("[") "[" "]" N63("]") ",'model':'gpt-4','messages':[" U(PY1) "]}",
	  .status = 400, .code = "invalid_json", .msg = "nested deeper than 64" },
	{ .name = "nesting of 2049 → 400 before cJSON's limit",
	  .body = "{'x':" N2048("[") N2048("]") "}",
	  .status = 400, .code = "invalid_json", .msg = "nested deeper than 64" },
	{ .name = "brackets inside strings do not nest",
	  .body = M("gpt-4", U("```python\\nprint(\\'" X16("[[[[{{{{") "\\')\\n```")),
	  .nblocks = 1, .b = { { "python", "python", "print(\"" X16("[[[[{{{{") "\")\n", 1, 3 } } },
	{ .name = "raw emoji and CJK preserved byte-exact", .raw = 1,
	  .body = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":"
		  "\"```python\\nprint('\xF0\x9F\x98\x80 \xE4\xB8\xAD \xF4\x8F\xBF\xBF')\\n```\"}]}",
	  .nblocks = 1, .b = { { "python", "python",
				 "print('\xF0\x9F\x98\x80 \xE4\xB8\xAD \xF4\x8F\xBF\xBF')\n", 1, 3 } } },
	{ .name = "\\ud83d\\ude00 pair → F0 9F 98 80",
	  .body = M("gpt-4", U("```python\\nprint(\\'\\ud83d\\ude00\\uDBFF\\uDFFF\\u00e9\\u4e2d\\')\\n```")),
	  .nblocks = 1, .b = { { "python", "python",
				 "print(\"\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\xC3\xA9\xE4\xB8\xAD\")\n",
				 1, 3 } } },
	{ .name = "lone high surrogate escape → 400",
	  .body = M("gpt-4", U("```python\\nprint(\\'\\ud83d\\')\\n```")),
	  .status = 400, .code = "invalid_json" },
	{ .name = "lone low surrogate escape → 400",
	  .body = M("gpt-4", U("\\ude00")), .status = 400, .code = "invalid_json" },
	{ .name = "body ending in a backslash inside a string → 400",
	  .body = "{'model':'gpt-4\\", .status = 400, .code = "invalid_json" },
	{ .name = "body ending inside a \\u escape → 400",
	  .body = "{'model':'gpt-4\\u00", .status = 400, .code = "invalid_json" },
	{ .name = "body ending after 'tru' → 400",
	  .body = "{'stream':tru", .status = 400, .code = "invalid_json" },
	{ .name = "body ending in a number → 400",
	  .body = "{'n':1", .status = 400, .code = "invalid_json" },

	/* ---- model and messages shape ---- */
	{ .name = "model missing → 400", .body = "{'messages':[" U(PY1) "]}",
	  .status = 400, .code = "missing_required_parameter", .param = "model" },
	{ .name = "model empty → 400", .body = M("", U(PY1)),
	  .status = 400, .code = "missing_required_parameter", .param = "model" },
	{ .name = "model a number → 400", .body = "{'model':4,'messages':[" U(PY1) "]}",
	  .status = 400, .code = "missing_required_parameter", .param = "model" },
	{ .name = "model of 256 bytes", .body = M(X16(X16("m")), U(PY1)), OK_PY1 },
	{ .name = "model of 257 bytes → 400", .body = M(X16(X16("m")) "m", U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "model" },
	{ .name = "messages missing → 400", .body = "{'model':'gpt-4'}",
	  .status = 400, .code = "missing_required_parameter", .param = "messages" },
	{ .name = "messages [] → 400", .body = M("gpt-4", ""),
	  .status = 400, .code = "missing_required_parameter", .param = "messages" },
	{ .name = "messages an object → 400", .body = "{'model':'gpt-4','messages':" U(PY1) "}",
	  .status = 400, .code = "missing_required_parameter", .param = "messages" },
	{ .name = "message not an object → 400", .body = M("gpt-4", U(PY1) ",'hi'"),
	  .status = 400, .code = "invalid_type", .param = "messages", .msg = "messages[1] must be" },
	{ .name = "message without role → 400", .body = M("gpt-4", "{'content':'" PY1 "'}"),
	  .status = 400, .code = "invalid_type", .param = "messages" },
	{ .name = "unknown role → 400", .body = M("gpt-4", "{'role':'robot','content':'x'}," U(PY1)),
	  .status = 400, .code = "invalid_value", .param = "messages", .msg = "\"robot\"" },
	{ .name = "role case matters → 400", .body = M("gpt-4", "{'role':'User','content':'" PY1 "'}"),
	  .status = 400, .code = "invalid_value", .param = "messages" },
	{ .name = "numeric name → 400",
	  .body = M("gpt-4", "{'role':'user','name':5,'content':'" PY1 "'}"),
	  .status = 400, .code = "invalid_type", .param = "messages", .msg = "name must be a string" },
	{ .name = "unknown top-level and message fields are ignored",
	  .body = "{'model':'gpt-4','metadata':{'a':[1,{'b':null}]},'messages':[{'role':'user',"
		  "'content':'" PY1 "','extra':true}]}", OK_PY1 },
};

static char *convert(const struct row *r, size_t *len)
{
	size_t n = r->len ? r->len : strlen(r->body);
	char *b = malloc(n ? n : 1);

	if (!b)
		abort();
	memcpy(b, r->body, n);
	if (!r->raw)
		for (size_t i = 0; i < n; i++)
			if (b[i] == '\'')
				b[i] = '"';
	*len = n;
	return b;
}

static int streq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* stdin/bag: NULL expected means the pointer is NULL; otherwise the bytes
 * match exactly and the length is right. */
static int same_bytes(const char *got, size_t got_len, const char *want)
{
	if (!want)
		return got == NULL && got_len == 0;
	return got && got_len == strlen(want) && !memcmp(got, want, got_len);
}

static void check_error(const struct row *x, int rc, const struct chat_request *r,
			const struct req_error *e)
{
	int ok;

	if (!x->status) {
		if (!tap_ok(rc == 0, "%s: accepted", x->name))
			tap_diag("status %d code %s param %s: %s", e->status,
				 e->code ? e->code : "(null)", e->param ? e->param : "(null)",
				 e->message);
		return;
	}
	ok = rc == -1 && e->status == x->status && streq(e->code, x->code) &&
	     streq(e->param, x->param) && e->message[0] &&
	     (!x->msg || strstr(e->message, x->msg)) &&
	     streq(e->type, x->status == 403 ? "permission_error" : "invalid_request_error") &&
	     r->nblocks == 0 && r->blocks == NULL && r->model == NULL;
	if (!tap_ok(ok, "%s: %d %s", x->name, x->status, x->code ? x->code : ""))
		tap_diag("rc %d status %d code %s param %s: %s", rc, e->status,
			 e->code ? e->code : "(null)", e->param ? e->param : "(null)",
			 e->message);
}

static void check_blocks(const struct row *x, const struct chat_request *r)
{
	int ok = r->nblocks == x->nblocks && r->blocks;

	for (size_t i = 0; ok && i < x->nblocks; i++) {
		const struct req_block *b = &r->blocks[i];
		const struct blk *w = &x->b[i];

		ok = b->interp && !strcmp(b->interp->name, w->lang) &&
		     b->label && !strcmp(b->label, w->label) &&
		     b->code && b->code_len == strlen(w->code) &&
		     !memcmp(b->code, w->code, b->code_len) && b->code[b->code_len] == '\0' &&
		     b->start_line == w->start && b->end_line == w->end;
		if (!ok)
			tap_diag("block %zu: %s \"%s\" lines %u-%u code(%zu) \"%s\"", i,
				 b->interp ? b->interp->name : "(null)", b->label ? b->label : "(null)",
				 b->start_line, b->end_line, b->code_len, b->code ? b->code : "(null)");
	}
	if (!ok)
		tap_diag("nblocks %zu, want %zu", r->nblocks, x->nblocks);
	if (ok && x->code_text)
		ok = r->code_text && r->code_text_len == strlen(x->code_text) &&
		     !memcmp(r->code_text, x->code_text, r->code_text_len);
	tap_ok(ok, "%s: blocks", x->name);
}

static void check_inputs(const struct row *x, const struct chat_request *r)
{
	int ok = same_bytes(r->stdin_data, r->stdin_len, x->in) &&
		 same_bytes(r->bag, r->bag_len, x->bag);

	if (!tap_ok(ok, "%s: stdin and bag", x->name))
		tap_diag("stdin %s(%zu) \"%.*s\", bag %s(%zu) \"%.*s\"",
			 r->stdin_data ? "" : "NULL", r->stdin_len, (int)r->stdin_len,
			 r->stdin_data ? r->stdin_data : "", r->bag ? "" : "NULL", r->bag_len,
			 (int)r->bag_len, r->bag ? r->bag : "");
}

static void check_flags(const struct row *x, const struct chat_request *r)
{
	char tools[256] = "";
	int ok;

	for (size_t i = 0; i < r->ntools; i++)
		snprintf(tools + strlen(tools), sizeof tools - strlen(tools), "%s%s",
			 i ? "," : "", r->tools[i]);
	ok = r->rerun_guard == x->rerun && r->agent == x->agent && r->stream == x->stream &&
	     r->include_usage == x->usage && r->timeout_s == x->timeout &&
	     (x->model_interp ? r->model_interp && !strcmp(r->model_interp->name, x->model_interp)
			      : !r->model_interp) &&
	     !strcmp(tools, x->tools ? x->tools : "") && r->model && r->model[0];
	if (!tap_ok(ok, "%s: flags", x->name))
		tap_diag("rerun %d agent %d stream %d usage %d timeout %g interp %s tools \"%s\"",
			 r->rerun_guard, r->agent, r->stream, r->include_usage, r->timeout_s,
			 r->model_interp ? r->model_interp->name : "(null)", tools);
}

static void check_skipped(const struct row *x, const struct chat_request *r)
{
	int ok = r->nskipped == x->nskipped && r->skipped_truncated == x->truncated;

	for (size_t i = 0; ok && i < x->nskipped; i++)
		ok = r->skipped[i].label && !strcmp(r->skipped[i].label, x->s[i].label) &&
		     r->skipped[i].line == x->s[i].line;
	if (!tap_ok(ok, "%s: skipped fences", x->name))
		tap_diag("%zu listed, %zu more counted", r->nskipped, r->skipped_truncated);
	if (!ok)
		for (size_t i = 0; i < r->nskipped; i++)
			tap_diag("skipped \"%s\" line %u", r->skipped[i].label, r->skipped[i].line);
}

static void run_row(const struct row *x)
{
	struct registry reg;
	struct req_limits lim;
	struct chat_request r;
	struct req_error e;
	struct guarded g;
	char err[256];
	size_t len;
	char *body = convert(x, &len);
	const char *in;
	int rc;

	if (reg_init(&reg) < 0 || reg_allow(&reg, x->allow ? x->allow : ALL, err, sizeof err) < 0)
		abort();
	in = guard_copy(&g, body, len);
	lim.max_blocks = x->max_blocks ? x->max_blocks : 16;
	lim.max_skipped = x->max_skipped == LIST_NONE ? 0 : x->max_skipped ? x->max_skipped : 16;
	rc = req_parse(in, len, &reg, &lim, &r, &e);
	check_error(x, rc, &r, &e);
	if (rc == 0 && !x->status) {
		check_blocks(x, &r);
		check_inputs(x, &r);
		check_flags(x, &r);
		check_skipped(x, &r);
	}
	req_free(&r);
	guard_free(&g);
	free(body);
	reg_free(&reg);
}

/* Every prefix of a valid body is parsed against the guard page: none
 * may read past its end, and all but the complete body fail cleanly. */
static void check_prefixes(void)
{
	static const char full[] = MX("python", "'stream':true,'n':1,'tools':[" FIN "],"
				      "'codellm':{'timeout_s':2.5}",
				      S("in") "," U("```python\\nprint(\\'\\ud83d\\ude00\\')\\n```"));
	struct registry reg;
	char err[64], body[sizeof full];
	int ok = 1;

	memcpy(body, full, sizeof full);
	for (char *p = body; *p; p++)
		if (*p == '\'')
			*p = '"';
	reg_init(&reg);
	reg_allow(&reg, ALL, err, sizeof err);
	for (size_t n = 0; n < sizeof full - 1; n++) {
		struct guarded g;
		struct chat_request r;
		struct req_error e;
		int rc = req_parse(guard_copy(&g, body, n), n, &reg, &lim16, &r, &e);

		if (rc != -1 || e.status != 400 || !e.message[0]) {
			tap_diag("prefix of %zu bytes: rc %d status %d", n, rc, e.status);
			ok = 0;
		}
		req_free(&r);
		guard_free(&g);
	}
	tap_ok(ok, "every proper prefix of a valid body is a clean 400");
	reg_free(&reg);
}

/* Parses a body built at run time, against the guard page. */
static int parse_built(struct jbuf *b, struct chat_request *r, struct req_error *e)
{
	struct registry reg;
	struct guarded g;
	char err[64];
	int rc;

	if (!jbuf_cstr(b))
		abort();
	reg_init(&reg);
	reg_allow(&reg, ALL, err, sizeof err);
	rc = req_parse(guard_copy(&g, b->p, b->len), b->len, &reg, &lim16, r, e);
	guard_free(&g);
	reg_free(&reg);
	return rc;
}

/* REQ_MAX_TOOLS and REQ_MAX_MESSAGES: the limit passes, one more fails. */
static void check_limits(void)
{
	for (size_t extra = 0; extra < 2; extra++) {
		struct jbuf b = {0};
		struct chat_request r;
		struct req_error e;
		size_t n = REQ_MAX_TOOLS + extra;
		int rc;

		jbuf_puts(&b, "{\"model\":\"gpt-4\",\"tools\":[");
		for (size_t i = 0; i + 1 < n; i++)
			jbuf_printf(&b, "{\"type\":\"function\",\"function\":{\"name\":\"f%zu\"}},", i);
		jbuf_puts(&b, "{\"type\":\"function\",\"function\":{\"name\":\"finish\"}}");
		jbuf_puts(&b, "],\"messages\":[{\"role\":\"user\",\"content\":\"```sh\\nls\\n```\"}]}");
		rc = parse_built(&b, &r, &e);
		if (!extra)
			tap_ok(rc == 0 && r.ntools == n && r.agent &&
			       !strcmp(r.tools[n - 1], "finish") && !strcmp(r.tools[0], "f0"),
			       "%zu tools accepted", n);
		else
			tap_ok(rc == -1 && e.status == 400 && streq(e.param, "tools") &&
			       strstr(e.message, "at most 128 tools"), "%zu tools → 400", n);
		req_free(&r);
		jbuf_free(&b);

		n = REQ_MAX_MESSAGES + extra;
		jbuf_puts(&b, "{\"model\":\"gpt-4\",\"messages\":[");
		for (size_t i = 0; i + 1 < n; i++)
			jbuf_puts(&b, "{\"role\":\"user\",\"content\":\"x\"},");
		jbuf_puts(&b, "{\"role\":\"user\",\"content\":\"```sh\\nls\\n```\"}]}");
		rc = parse_built(&b, &r, &e);
		if (!extra)
			tap_ok(rc == 0 && r.nblocks == 1 && !strcmp(r.blocks[0].code, "ls\n"),
			       "%zu messages accepted", n);
		else
			tap_ok(rc == -1 && e.status == 400 && streq(e.code, "invalid_value") &&
			       strstr(e.message, "at most 4096 messages"), "%zu messages → 400", n);
		req_free(&r);
		jbuf_free(&b);
	}
}

/* PRECHECK_MAX_VALUES: a request of exactly that many JSON values
 * passes, one more is refused before cJSON builds anything. */
static void check_values(void)
{
	for (size_t extra = 0; extra < 2; extra++) {
		struct jbuf b = {0};
		struct chat_request r;
		struct req_error e;
		/* the object, model, messages, the message, role, content, x */
		size_t zeros = PRECHECK_MAX_VALUES - 7 + extra;
		int rc;

		jbuf_puts(&b, "{\"model\":\"gpt-4\",\"x\":[0");
		for (size_t i = 1; i < zeros; i++)
			jbuf_puts(&b, ",0");
		jbuf_puts(&b, "],\"messages\":[{\"role\":\"user\",\"content\":\"```sh\\nls\\n```\"}]}");
		rc = parse_built(&b, &r, &e);
		if (!extra)
			tap_ok(rc == 0 && r.nblocks == 1, "%d JSON values accepted", PRECHECK_MAX_VALUES);
		else if (!tap_ok(rc == -1 && e.status == 400 && streq(e.code, "invalid_json") &&
				 strstr(e.message, "holds more than 131072 JSON values (byte "),
				 "%d JSON values → 400 invalid_json", PRECHECK_MAX_VALUES + 1))
			tap_diag("rc %d: %s", rc, e.message);
		req_free(&r);
		jbuf_free(&b);
	}
}

/* The names a file part may take (codellm.7 "FILES"): "out" is the
 * request's like any plain name (the run makes nothing in the workdir,
 * issue 30), the bag's name is the one the run takes. */
static void check_file_names(void)
{
	static const struct req_limits lim = { .max_blocks = 16, .max_skipped = 16, .max_files = 4,
					       .max_file_bytes = 1024, .max_files_bytes = 4096 };
	static const struct {
		const char *name;
		const char *refused;	/* NULL: accepted; else a substring of the message */
	} cases[] = {
		{ "out", NULL },
		{ "out.txt", NULL },
		{ "output", NULL },
		{ "fleet_input.json", "bag" },
		{ ".out", "starts with a dot" },
		{ "out/x", "holds a '/'" },
	};
	struct registry reg;
	char err[64];

	reg_init(&reg);
	reg_allow(&reg, ALL, err, sizeof err);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jbuf b = {0};
		struct guarded g;
		struct chat_request r;
		struct req_error e;
		int rc;

		jbuf_puts(&b, "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":["
			      "{\"type\":\"text\",\"text\":\"```sh\\ncat out\\n```\"},"
			      "{\"type\":\"file\",\"file\":{\"filename\":\"");
		jbuf_puts(&b, cases[i].name);
		jbuf_puts(&b, "\",\"file_data\":\"data:text/plain;base64,aGkK\"}}]}]}");
		if (!jbuf_cstr(&b))
			abort();
		rc = req_parse(guard_copy(&g, b.p, b.len), b.len, &reg, &lim, &r, &e);
		if (!cases[i].refused) {
			if (!tap_ok(rc == 0 && r.nfiles == 1 && !strcmp(r.files[0].name, cases[i].name) &&
				    r.files[0].len == 3 && !memcmp(r.files[0].data, "hi\n", 3) &&
				    r.nblocks == 1, "a file named \"%s\" is accepted, its bytes kept",
				    cases[i].name))
				tap_diag("rc %d: %s", rc, rc ? e.message : "");
		} else if (!tap_ok(rc == -1 && e.status == 400 && streq(e.code, "invalid_file_name") &&
				   strstr(e.message, cases[i].refused),
				   "a file named \"%s\" → 400 invalid_file_name (%s)", cases[i].name,
				   cases[i].refused)) {
			tap_diag("rc %d: %s", rc, rc ? e.message : "");
		}
		req_free(&r);
		guard_free(&g);
		jbuf_free(&b);
	}
	reg_free(&reg);
}

/* A request struct is reusable: req_free leaves it zeroed. */
static void check_free_twice(void)
{
	struct registry reg;
	struct chat_request r;
	struct req_error e;
	char err[64];
	static const char body[] = "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\","
				   "\"content\":\"```sh\\nls\\n```\"}]}";

	reg_init(&reg);
	reg_allow(&reg, "bash", err, sizeof err);
	tap_ok(req_parse(body, sizeof body - 1, &reg, &lim16, &r, &e) == 0 && r.nblocks == 1,
	       "parse for the double-free check");
	req_free(&r);
	tap_ok(r.blocks == NULL && r.nblocks == 0 && r.model == NULL && r.code_text == NULL,
	       "req_free zeroes the request");
	req_free(&r);
	reg_free(&reg);
}

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		run_row(&rows[i]);
	check_prefixes();
	check_limits();
	check_values();
	check_file_names();
	check_free_twice();
	return tap_done();
}
