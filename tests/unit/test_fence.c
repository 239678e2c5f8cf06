/* Table-driven tests for the CommonMark fence scanner. Every input is
 * placed right before a PROT_NONE page and every fence_content output
 * buffer is exactly body_end - body_off bytes, also right before one, so
 * an over-read or over-write faults instead of passing silently. */
#include <stdio.h>
#include <stdlib.h>	/* tests/guard.h calls abort() without it */
#include <string.h>

#include "json/fence.h"
#include "tests/guard.h"
#include "tests/tap.h"

#define MAXB 3

struct want {
	unsigned start_line, end_line;
	int closed;
	const char *label;	/* NULL: the fence has no info string */
	const char *content;	/* fence_content output */
	size_t content_len;	/* 0: strlen(content), for contents holding NUL */
	unsigned indent;
	int raw;		/* 1: also compare body_off/body_end below */
	size_t body_off, body_end;
};

struct row {
	const char *name;
	const char *in;
	size_t len;		/* 0: strlen(in), for inputs holding NUL */
	size_t count;
	struct want w[MAXB];
};

/* sizeof keeps embedded NUL bytes that strlen would stop at */
#define BIN(s) .in = (s), .len = sizeof(s) - 1

static const struct row rows[] = {
	/* nothing to find in an empty document */
	{ "empty input", "", 0, 0, { { 0 } } },
	/* prose alone yields no block */
	{ "prose only", "hello\nworld\n", 0, 0, { { 0 } } },
	/* blank lines only */
	{ "blank lines", "\n\n\n", 0, 0, { { 0 } } },
	/* the everyday case, with exact raw offsets */
	{ "basic python", "```python\nprint(1)\n```\n", 0, 1, {
		{ 1, 3, 1, "python", "print(1)\n", 0, 0, 1, 10, 19 } } },
	/* tildes work like backticks */
	{ "tilde fence", "~~~\nx = 1\n~~~\n", 0, 1, {
		{ 1, 3, 1, NULL, "x = 1\n", 0, 0, 0, 0, 0 } } },
	/* a ``` fence inside a ```` fence is content, not a nested block */
	{ "4-backtick holds ```", "````md\n```python\nx\n```\n````\n", 0, 1, {
		{ 1, 5, 1, "md", "```python\nx\n```\n", 0, 0, 0, 0, 0 } } },
	/* a 5-tilde line closes a 4-tilde fence; the 3-tilde line is content */
	{ "tilde nesting", "~~~~\n~~~\n~~~~~\n", 0, 1, {
		{ 1, 3, 1, NULL, "~~~\n", 0, 0, 0, 0, 0 } } },
	/* indent 1 is removed from content lines, missing indent is fine */
	{ "indent 1", " ```sh\n ls\nls\n ```\n", 0, 1, {
		{ 1, 4, 1, "sh", "ls\nls\n", 0, 1, 0, 0, 0 } } },
	/* indent 3: at most 3 spaces go, deeper lines keep the rest */
	{ "indent 3", "   ```\n     a\n  b\nc\n   ```\n", 0, 1, {
		{ 1, 5, 1, NULL, "  a\nb\nc\n", 0, 3, 0, 0, 0 } } },
	/* only spaces are removed, a leading tab is kept */
	{ "indent keeps tabs", "  ```\n\tx\n  y\n```\n", 0, 1, {
		{ 1, 4, 1, NULL, "\tx\ny\n", 0, 2, 0, 0, 0 } } },
	/* an indented blank line and a short-indented line */
	{ "indent 2 short lines", "  ~~~\n x\n\n~~~\n", 0, 1, {
		{ 1, 4, 1, NULL, "x\n\n", 0, 2, 0, 0, 0 } } },
	/* 4 spaces make an indented code line, never a fence */
	{ "4-space indent", "    ```\ncode\n    ```\n", 0, 0, { { 0 } } },
	/* a tab reaches column 4: indented code, not a fence */
	{ "tab indent", "\t```\nx\n\t```\n", 0, 0, { { 0 } } },
	/* space then tab is still column 4 */
	{ "space tab indent", " \t~~~\nx\n", 0, 0, { { 0 } } },
	/* a backtick in a backtick fence's info string: not a fence */
	{ "backtick in info", "```a`b\nx\n", 0, 0, { { 0 } } },
	/* ... so the later bare ``` opens an (unclosed, empty) block */
	{ "backtick info then fence", "``` a`b\nx\n```\n", 0, 1, {
		{ 3, 3, 0, NULL, "", 0, 0, 1, 14, 14 } } },
	/* tilde fences accept backticks in the info string */
	{ "tilde info with backticks", "~~~ a`b`\nx\n~~~\n", 0, 1, {
		{ 1, 3, 1, "a`b`", "x\n", 0, 0, 0, 0, 0 } } },
	/* a shorter closing run is content */
	{ "close shorter", "````\na\n```\nb\n````\n", 0, 1, {
		{ 1, 5, 1, NULL, "a\n```\nb\n", 0, 0, 0, 0, 0 } } },
	/* a longer closing run closes */
	{ "close longer", "```\na\n`````\nafter\n", 0, 1, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 0, 0, 0 } } },
	/* trailing spaces and tabs after the closing run are allowed */
	{ "close trailing blanks", "```\na\n```  \t \nz\n", 0, 1, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 0, 0, 0 } } },
	/* trailing text after the closing run makes it content */
	{ "close trailing text", "```\na\n``` x\nb\n```\n", 0, 1, {
		{ 1, 5, 1, NULL, "a\n``` x\nb\n", 0, 0, 0, 0, 0 } } },
	/* a stray backtick after a blank is trailing text too */
	{ "close trailing backtick", "```\n``` `\n```\n", 0, 1, {
		{ 1, 3, 1, NULL, "``` `\n", 0, 0, 0, 0, 0 } } },
	/* tildes do not close a backtick fence */
	{ "close other char ~", "```\na\n~~~\n```\n", 0, 1, {
		{ 1, 4, 1, NULL, "a\n~~~\n", 0, 0, 0, 0, 0 } } },
	/* backticks do not close a tilde fence */
	{ "close other char `", "~~~\n```\n~~~\n", 0, 1, {
		{ 1, 3, 1, NULL, "```\n", 0, 0, 0, 0, 0 } } },
	/* the closing fence may be indented 3 even if the opening was not */
	{ "close indent 3", "```\na\n   ```\n", 0, 1, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 0, 0, 0 } } },
	/* 4 spaces before the closing run: content */
	{ "close indent 4", "```\na\n    ```\n```\n", 0, 1, {
		{ 1, 4, 1, NULL, "a\n    ```\n", 0, 0, 0, 0, 0 } } },
	/* a tab before the closing run: content, block stays open */
	{ "close tab indent", "```\na\n\t```\n", 0, 1, {
		{ 1, 3, 0, NULL, "a\n\t```\n", 0, 0, 1, 4, 11 } } },
	/* unclosed: runs to the end, trailing newline ends the last line */
	{ "unclosed", "```js\nlet a;\nlet b;\n", 0, 1, {
		{ 1, 3, 0, "js", "let a;\nlet b;\n", 0, 0, 1, 6, 20 } } },
	/* unclosed with no final newline */
	{ "unclosed no newline", "```js\nlet a;\nlet b;", 0, 1, {
		{ 1, 3, 0, "js", "let a;\nlet b;", 0, 0, 1, 6, 19 } } },
	/* opening fence is the last line, no newline: empty body at len */
	{ "open at eof", "text\n```py", 0, 1, {
		{ 2, 2, 0, "py", "", 0, 0, 1, 10, 10 } } },
	/* opening fence is the last line, with newline */
	{ "open at eof newline", "```py\n", 0, 1, {
		{ 1, 1, 0, "py", "", 0, 0, 1, 6, 6 } } },
	/* closing right after opening: empty body */
	{ "empty block", "```\n```\n", 0, 1, {
		{ 1, 2, 1, NULL, "", 0, 0, 1, 4, 4 } } },
	/* closing fence without a final newline */
	{ "close at eof", "```\na\n```", 0, 1, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 1, 4, 6 } } },
	/* CRLF: no \r in the label, content keeps \r\n */
	{ "crlf", "```Python\r\nx = 1\r\ny\r\n```\r\n", 0, 1, {
		{ 1, 4, 1, "Python", "x = 1\r\ny\r\n", 0, 0, 1, 11, 21 } } },
	/* CRLF closing fence with trailing blanks before the \r */
	{ "crlf close blanks", "```\r\na\r\n```  \r\n", 0, 1, {
		{ 1, 3, 1, NULL, "a\r\n", 0, 0, 0, 0, 0 } } },
	/* CRLF unclosed */
	{ "crlf unclosed", "```\r\na\r\n", 0, 1, {
		{ 1, 2, 0, NULL, "a\r\n", 0, 0, 0, 0, 0 } } },
	/* CRLF with indent removal */
	{ "crlf indent", "  ```c\r\n  int x;\r\n  ```\r\n", 0, 1, {
		{ 1, 3, 1, "c", "int x;\r\n", 0, 2, 0, 0, 0 } } },
	/* a lone \r is text: part of the label, and not a line break */
	{ "lone cr", "```x\ry\nz\n```\n", 0, 1, {
		{ 1, 3, 1, "x\ry", "z\n", 0, 0, 0, 0, 0 } } },
	/* line numbers count \n only */
	{ "lone cr in prose", "a\rb\n```\nc\n```\n", 0, 1, {
		{ 2, 4, 1, NULL, "c\n", 0, 0, 0, 0, 0 } } },
	/* case is the caller's business */
	{ "label case", "```PYTHON\nx\n```\n", 0, 1, {
		{ 1, 3, 1, "PYTHON", "x\n", 0, 0, 0, 0, 0 } } },
	/* the label is the first word of the info string */
	{ "label first word", "```python  title=x\nx\n```\n", 0, 1, {
		{ 1, 3, 1, "python", "x\n", 0, 0, 0, 0, 0 } } },
	/* leading blanks of the info string are skipped, tab ends the word */
	{ "label leading blanks", "```   \tc++\t-O2\nx\n```\n", 0, 1, {
		{ 1, 3, 1, "c++", "x\n", 0, 0, 0, 0, 0 } } },
	/* an info string of blanks only means no label */
	{ "blank info", "```   \nx\n```\n", 0, 1, {
		{ 1, 3, 1, NULL, "x\n", 0, 0, 0, 0, 0 } } },
	/* attribute syntax is not special: the word is the label */
	{ "brace label", "```{python}\nx\n```\n", 0, 1, {
		{ 1, 3, 1, "{python}", "x\n", 0, 0, 0, 0, 0 } } },
	/* non-ASCII label bytes are passed through */
	{ "utf-8 label", "~~~\xe6\x97\xa5\xe6\x9c\xac x\ny\n~~~\n", 0, 1, {
		{ 1, 3, 1, "\xe6\x97\xa5\xe6\x9c\xac", "y\n", 0, 0, 0, 0, 0 } } },
	/* invalid UTF-8 and NUL bytes are just bytes */
	{ "nul bytes", BIN("```c\n\0a\xff\n```\n\0"), 1, {
		{ 1, 3, 1, "c", "\0a\xff\n", 4, 0, 0, 0, 0 } } },
	/* two blocks with prose between them, and their line numbers */
	{ "two blocks", "# Title\n\nSome prose.\n\n```python\na\n```\n\n"
	  "More prose.\n~~~bash\nb\nc\n~~~\ntail\n", 0, 2, {
		{ 5, 7, 1, "python", "a\n", 0, 0, 0, 0, 0 },
		{ 10, 13, 1, "bash", "b\nc\n", 0, 0, 0, 0, 0 } } },
	/* back-to-back blocks */
	{ "adjacent blocks", "```\na\n```\n```\nb\n```\n", 0, 2, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 1, 4, 6 },
		{ 4, 6, 1, NULL, "b\n", 0, 0, 1, 14, 16 } } },
	/* a closed block then an unclosed one */
	{ "closed then unclosed", "~~~\na\n~~~\n```sh\nb", 0, 2, {
		{ 1, 3, 1, NULL, "a\n", 0, 0, 0, 0, 0 },
		{ 4, 5, 0, "sh", "b", 0, 0, 0, 0, 0 } } },
	/* block quotes are not parsed: their fences do not count */
	{ "blockquote", "> ```python\n> x\n> ```\n", 0, 0, { { 0 } } },
	/* nor do list items */
	{ "list item", "- ```py\nx\n", 0, 0, { { 0 } } },
	/* two backticks are inline code, not a fence */
	{ "two backticks", "``\nx\n``\n", 0, 0, { { 0 } } },
	/* backticks mid-line are inline code */
	{ "inline triple", "use ```x``` inline\n", 0, 0, { { 0 } } },
	/* a bare run of backticks is an unclosed empty block */
	{ "only backticks", "```", 0, 1, {
		{ 1, 1, 0, NULL, "", 0, 0, 1, 3, 3 } } },
	/* a long run of tildes too */
	{ "only tildes", "~~~~~~~~", 0, 1, {
		{ 1, 1, 0, NULL, "", 0, 0, 1, 8, 8 } } },
};

static void check_row(const struct row *r)
{
	struct fence_block got[MAXB];
	struct guarded g;
	size_t len = r->len ? r->len : strlen(r->in), n;
	const char *text = guard_copy(&g, r->in, len);

	memset(got, 0, sizeof got);
	n = fence_extract(text, len, got, MAXB);
	if (!tap_ok(n == r->count, "%s: count", r->name))
		tap_diag("got %zu, want %zu", n, r->count);
	for (size_t i = 0; i < n && i < r->count && i < MAXB; i++) {
		const struct want *w = &r->w[i];
		const struct fence_block *b = &got[i];
		size_t wlab = w->label ? strlen(w->label) : 0;
		size_t wcon = w->content_len ? w->content_len : strlen(w->content);
		size_t blen = b->body_end - b->body_off, clen;
		struct guarded og;
		char *buf;

		if (!tap_ok(b->start_line == w->start_line &&
			    b->end_line == w->end_line && b->closed == w->closed &&
			    b->indent == w->indent,
			    "%s[%zu]: lines/closed/indent", r->name, i))
			tap_diag("got %u-%u closed=%d indent=%u, want %u-%u closed=%d indent=%u",
				 b->start_line, b->end_line, b->closed, b->indent,
				 w->start_line, w->end_line, w->closed, w->indent);
		if (!tap_ok(b->label_len == wlab &&
			    b->label_off + b->label_len <= len &&
			    memcmp(text + b->label_off, w->label ? w->label : "",
				   wlab) == 0,
			    "%s[%zu]: label", r->name, i))
			tap_diag("got len %zu at %zu", b->label_len, b->label_off);
		if (w->raw && !tap_ok(b->body_off == w->body_off &&
				      b->body_end == w->body_end,
				      "%s[%zu]: body offsets", r->name, i))
			tap_diag("got %zu..%zu, want %zu..%zu", b->body_off,
				 b->body_end, w->body_off, w->body_end);
		if (!tap_ok(b->body_off <= b->body_end && b->body_end <= len,
			    "%s[%zu]: body in bounds", r->name, i))
			continue;
		/* the output buffer is exactly as large as the raw body */
		buf = guard_copy(&og, text + b->body_off, blen);
		clen = fence_content(text, b, buf);
		if (!tap_ok(clen == wcon && memcmp(buf, w->content, wcon) == 0,
			    "%s[%zu]: content", r->name, i))
			tap_diag("got %zu bytes \"%.*s\"", clen, (int)clen, buf);
		guard_free(&og);
	}
	guard_free(&g);
}

static int same_block(const struct fence_block *x, const struct fence_block *y)
{
	return x->open_off == y->open_off && x->label_off == y->label_off &&
	       x->label_len == y->label_len && x->body_off == y->body_off &&
	       x->body_end == y->body_end && x->indent == y->indent &&
	       x->start_line == y->start_line && x->end_line == y->end_line &&
	       x->closed == y->closed;
}

/* Three blocks but room for only two: the count is still 3, the first two
 * entries match the full scan and nothing past out[max-1] is written. */
static void check_max(void)
{
	static const char in[] = "```a\n1\n```\n~~~b\n2\n~~~\n```c\n3\n";
	struct fence_block all[4], some[3], canary;
	struct guarded g;
	const char *text = guard_copy(&g, in, sizeof in - 1);
	size_t n_all, n_some, n_zero;

	memset(all, 0, sizeof all);
	memset(some, 0xa5, sizeof some);
	memset(&canary, 0xa5, sizeof canary);
	n_all = fence_extract(text, sizeof in - 1, all, 4);
	n_some = fence_extract(text, sizeof in - 1, some, 2);
	n_zero = fence_extract(text, sizeof in - 1, NULL, 0);
	tap_ok(n_all == 3, "max: full count is 3");
	tap_ok(n_some == 3, "max: count exceeds max=2");
	tap_ok(n_zero == 3, "max: max=0 with NULL out counts");
	tap_ok(same_block(&some[0], &all[0]) && same_block(&some[1], &all[1]),
	       "max: entries below max match the full scan");
	tap_ok(memcmp(&some[2], &canary, sizeof canary) == 0,
	       "max: out[max] untouched");
	tap_ok(all[2].start_line == 7 && all[2].end_line == 8 && !all[2].closed,
	       "max: third block lines 7-8 unclosed");
	guard_free(&g);
}

/* fence_next walks the blocks fence_extract finds, one at a time, in
 * constant memory: a copy of the scan taken midway goes on from there,
 * and at the end the scan stays at the end, every line counted. */
static void check_next(void)
{
	static const char in[] = "text\n```a\n1\n```\n~~~b\n2\n~~~\n```c\n3\n";
	struct fence_scan s = {0}, mid;
	struct fence_block all[3], b;
	struct guarded g;
	const char *text = guard_copy(&g, in, sizeof in - 1);
	size_t n = sizeof in - 1;
	int ok;

	tap_ok(fence_extract(text, n, all, 3) == 3, "next: three blocks in all");
	ok = fence_next(text, n, &s, &b) && same_block(&b, &all[0]);
	mid = s;
	ok = ok && fence_next(text, n, &s, &b) && same_block(&b, &all[1]) &&
	     fence_next(text, n, &s, &b) && same_block(&b, &all[2]);
	tap_ok(ok, "next: the same blocks, in order");
	tap_ok(!fence_next(text, n, &s, &b) && !fence_next(text, n, &s, &b) &&
	       s.off == n && s.nl == 9, "next: then 0, again 0, at the end after 9 lines");
	tap_ok(fence_next(text, n, &mid, &b) && same_block(&b, &all[1]),
	       "next: a copy of the scan goes on from where it was");
	s = (struct fence_scan){0};
	tap_ok(!fence_next(text, 5, &s, &b) && s.off == 5 && s.nl == 1,
	       "next: a text without a fence: 0 at once");
	guard_free(&g);
}

/* fence_extract with a NULL text is fine when len is 0. */
static void check_null(void)
{
	tap_ok(fence_extract(NULL, 0, NULL, 0) == 0, "null: empty NULL text");
}

/* A long document: the scan stays linear and counts every block. */
static void check_many(void)
{
	static char in[6 * 10000];
	struct fence_block last;
	struct guarded g;
	const char *text;
	size_t n;

	for (size_t i = 0; i < 10000; i++)
		memcpy(in + 6 * i, i % 2 ? "~~~\nx\n" : "```\nx\n", 6);
	text = guard_copy(&g, in, sizeof in);
	n = fence_extract(text, sizeof in, NULL, 0);
	/* the fences alternate characters, so each block takes the next
	 * fence line as content and closes on the one after: three fence
	 * lines per block, and the 10000th fence opens an unclosed one */
	tap_ok(n == 3334, "many: 3334 blocks (got %zu)", n);
	guard_free(&g);
	text = guard_copy(&g, in, 4 * 6);
	n = fence_extract(text, 4 * 6, &last, 1);
	tap_ok(n == 2 && last.start_line == 1 && last.end_line == 5 &&
	       last.closed, "many: first block spans lines 1-5");
	guard_free(&g);
}

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		check_row(&rows[i]);
	check_max();
	check_next();
	check_null();
	check_many();
	return tap_done();
}
