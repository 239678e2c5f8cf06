/* Table-driven tests for json/rolecheck.c, the --check dry run over fleet
 * role notes: frontmatter keys (scalars, inline and block lists, comments,
 * quotes, CRLF, duplicates), the block listing against the registry and
 * --allowed-programs, and every kind of problem. Each note sits right
 * before a PROT_NONE page, so reading past its end faults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/registry.h"
#include "json/rolecheck.h"
#include "tests/guard.h"
#include "tests/tap.h"

#define MAXL 8

struct row {
	const char *name;
	const char *in;
	size_t len;		/* 0: strlen(in), for notes holding NUL */
	const char *allow;	/* --allowed-programs, NULL: empty */
	size_t max_blocks;	/* 0: no limit */
	int want;		/* problems */
	/* lines the report must hold; a trailing '*' matches a prefix. The
	 * file name "n.md: " is put in front of each. */
	const char *has[MAXL];
	const char *hasnt[MAXL];	/* lines (or prefixes) it must not hold */
};

#define BIN(s) .in = (s), .len = sizeof(s) - 1
#define GOOD_FM "---\nwrite_patterns: [a.md]\n---\n"

static const struct row rows[] = {
	/* the everyday good note: line numbers count the frontmatter */
	{ "good note", GOOD_FM "# T\n\n```python\nprint(1)\n```\n", 0, "python", 0, 0,
	  { "frontmatter: line 1-3",
	    "role: tools=default writes=yes write_patterns=1",
	    "block 0 label=python lang=python line 6-8: runs", "ok" },
	  { "problem:*" } },
	/* nothing at all: a writing role without scope and without code */
	{ "empty note", "", 0, "python", 0, 2,
	  { "frontmatter: none", "role: tools=default writes=yes write_patterns=none",
	    "problem: write_patterns: missing*",
	    "problem: no runnable block: the note has no fenced block*",
	    "2 problem(s)" }, { "ok" } },
	/* labels are looked up case-insensitively, aliases included */
	{ "aliases", GOOD_FM "```PY\n```\n~~~JavaScript\n~~~\n```sh -e\n```\n",
	  0, "python,node,bash", 0, 0,
	  { "block 0 label=PY lang=python line 4-5: runs",
	    "block 1 label=JavaScript lang=node line 6-7: runs",
	    "block 2 label=sh lang=bash line 8-9: runs", "ok" }, { 0 } },
	/* unknown labels are prose: listed, skipped, not a problem */
	{ "prose beside code", GOOD_FM "```json\n{}\n```\n```python\n```\n```mermaid\ngraph\n```\n",
	  0, "python", 0, 0,
	  { "block 0 label=json lang=unknown line 4-6: prose, skipped",
	    "block 1 label=python lang=python line 7-8: runs",
	    "block 2 label=mermaid lang=unknown line 9-11: prose, skipped", "ok" },
	  { "problem:*" } },
	/* an unlabeled fence runs only when the model names a language:
	 * --check knows no model, so it is prose */
	{ "unlabeled fence", GOOD_FM "```\nls\n```\n```bash\n```\n", 0, "bash", 0, 0,
	  { "block 0 label=(none) lang=unknown line 4-6: prose, skipped (no label)",
	    "block 1 label=bash lang=bash line 7-8: runs", "ok" }, { 0 } },
	/* only prose blocks: the request would be a 400 */
	{ "prose only", GOOD_FM "```json\n{}\n```\n```text\nx\n```\n", 0, "python", 0, 1,
	  { "problem: no runnable block: none of the 2 fenced block(s)*",
	    "1 problem(s)" }, { 0 } },
	/* a known language outside --allowed-programs is a problem per block */
	{ "not allowed", GOOD_FM "```python\n```\n```ruby\nputs 1\n```\n```rb\n```\n",
	  0, "python", 0, 2,
	  { "block 0 label=python lang=python line 4-5: runs",
	    "block 1 label=ruby lang=ruby line 6-8: not run: ruby is not in --allowed-programs",
	    "problem: block 1 (line 6-8): ruby is not in --allowed-programs*",
	    "problem: block 2 (line 9-10): ruby is not in --allowed-programs*",
	    "2 problem(s)" }, { "problem: no runnable block*" } },
	/* allowed by alias, found by another alias */
	{ "allowed by alias", GOOD_FM "```python3\n```\n", 0, "py", 0, 0,
	  { "block 0 label=python3 lang=python line 4-5: runs", "ok" }, { 0 } },
	/* an empty allowlist disables execution: one problem, not one per block */
	{ "execution disabled", GOOD_FM "```python\n```\n```bash\n```\n", 0, NULL, 0, 1,
	  { "block 0 label=python lang=python line 4-5: not run: execution disabled",
	    "block 1 label=bash lang=bash line 6-7: not run: execution disabled",
	    "problem: --allowed-programs is empty: code execution is disabled, "
	    "none of the 2 code block(s) would run", "1 problem(s)" },
	  { "problem: block*", "problem: no runnable*" } },
	/* empty allowlist and no code: the missing code is the problem */
	{ "disabled, prose only", GOOD_FM "```json\n```\n", 0, NULL, 0, 1,
	  { "problem: no runnable block*" }, { "problem: --allowed-programs*" } },
	/* env_passthrough as a block list: the role cannot migrate */
	{ "env_passthrough", "---\nenv_passthrough:\n  - GITHUB_TOKEN\n  - HOME\n"
	  "write_patterns: [a]\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "problem: env_passthrough (line 2): [GITHUB_TOKEN, HOME]: no environment*",
	    "1 problem(s)" }, { 0 } },
	/* env_prefix as a quoted scalar with a comment */
	{ "env_prefix", "---\nenv_prefix: \"SEARCH_\"  # url and key\ntools: [finish]\n---\n"
	  "```sh\n```\n", 0, "bash", 0, 1,
	  { "problem: env_prefix (line 2): [SEARCH_]: no environment*",
	    "role: tools=[finish] writes=no write_patterns=none" }, { 0 } },
	/* present but empty still names the capability: flagged, as the
	 * pre-cutover grep would */
	{ "env_passthrough empty", "---\nenv_passthrough: []\ntools: [finish]\n---\n```sh\n```\n",
	  0, "bash", 0, 1, { "problem: env_passthrough (line 2): []*" }, { 0 } },
	/* both, and more: every problem is its own line */
	{ "many problems", "---\nenv_passthrough: [K]\nenv_prefix: P_\ntools:\n  - write_note\n---\n"
	  "```javascript\n```\n", 0, "python", 0, 5,
	  { "problem: env_passthrough (line 2)*", "problem: env_prefix (line 3)*",
	    "problem: tools (line 4): lacks finish*", "problem: write_patterns: missing*",
	    "problem: block 0 (line 7-8): node is not in --allowed-programs*",
	    "5 problem(s)" }, { 0 } },
	/* a tool list without finish */
	{ "tools without finish", "---\ntools: [write_note, patch_note]\nwrite_patterns: [a]\n---\n"
	  "```python\n```\n", 0, "python", 0, 1,
	  { "role: tools=[write_note, patch_note] writes=yes write_patterns=1",
	    "problem: tools (line 2): lacks finish*" }, { 0 } },
	/* a scalar tools value is one tool */
	{ "tools scalar", "---\ntools: write_note\nwrite_patterns: [a]\n---\n```python\n```\n",
	  0, "python", 0, 1, { "role: tools=[write_note] writes=yes write_patterns=1",
			       "problem: tools (line 2): lacks finish*" }, { 0 } },
	/* finish only: the role writes nothing, so needs no scope */
	{ "read-only role", "---\ntools:\n- finish\n---\n```python\n```\n", 0, "python", 0, 0,
	  { "role: tools=[finish] writes=no write_patterns=none", "ok" }, { 0 } },
	/* an empty tools list means fleet's default set: it writes */
	{ "tools empty", "---\ntools: []\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "role: tools=[] (default) writes=yes write_patterns=none",
	    "problem: write_patterns: missing*" }, { "problem: tools*" } },
	/* "tools:" with nothing under it is empty too */
	{ "tools bare key", "---\ntools:\nwrite_patterns: [a]\n---\n```python\n```\n",
	  0, "python", 0, 0, { "role: tools=[] (default) writes=yes write_patterns=1", "ok" }, { 0 } },
	/* patch_note alone makes a writer */
	{ "patch_note writes", "---\ntools: [patch_note, finish]\n---\n```python\n```\n",
	  0, "python", 0, 1, { "problem: write_patterns: missing*" }, { 0 } },
	/* an empty write_patterns, three spellings */
	{ "write_patterns []", "---\nwrite_patterns: []\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "role: tools=default writes=yes write_patterns=0",
	    "problem: write_patterns (line 2): empty for a role that writes*" }, { 0 } },
	{ "write_patterns ~", "---\nwrite_patterns: ~\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "problem: write_patterns (line 2): empty*" }, { 0 } },
	{ "write_patterns \"\"", "---\nwrite_patterns: \"\"\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "problem: write_patterns (line 2): empty*" }, { 0 } },
	/* a compact block list (dashes at column 0) and comments everywhere */
	{ "block list, comments", "---\n# scope\nwrite_patterns: # two\n- a/*.md  # first\n\n"
	  "- 'b.md'\ntools: [write_note, finish] # x\n---\n```python\n```\n", 0, "python", 0, 0,
	  { "role: tools=[write_note, finish] writes=yes write_patterns=2", "ok" }, { 0 } },
	/* a flow list over two lines */
	{ "multi-line flow list", "---\ntools: [write_note,\n  finish]\nwrite_patterns: [a]\n---\n"
	  "```python\n```\n", 0, "python", 0, 0,
	  { "role: tools=[write_note, finish] writes=yes write_patterns=1", "ok" }, { 0 } },
	/* quoted keys and quoted items; a comma inside quotes stays */
	{ "quotes", "---\n\"tools\": ['patch_note', \"finish\"]\n'write_patterns': [\"a,b.md\"]\n---\n"
	  "```python\n```\n", 0, "python", 0, 0,
	  { "role: tools=[patch_note, finish] writes=yes write_patterns=1", "ok" }, { 0 } },
	/* nested keys are not top-level keys */
	{ "nested keys", "---\nmeta:\n  env_passthrough: [X]\n  tools: [finish]\nwrite_patterns: [a]\n---\n"
	  "```python\n```\n", 0, "python", 0, 0,
	  { "role: tools=default writes=yes write_patterns=1", "ok" }, { "problem:*" } },
	/* keys are matched whole and case-sensitively, as YAML does */
	{ "near-miss keys", "---\nenv_passthrough_doc: x\nEnv_Prefix: Y\nurl: http://x\n"
	  "write_patterns:[a]\nwrite_patterns: [a]\n---\n```python\n```\n", 0, "python", 0, 0,
	  { "ok" }, { "problem:*" } },
	/* a repeated key: reported, and the last one is checked */
	{ "duplicate key", "---\nwrite_patterns: [a]\nx: 1\nwrite_patterns: []\n---\n```python\n```\n",
	  0, "python", 0, 2,
	  { "problem: write_patterns (line 2): defined again on line 4*",
	    "problem: write_patterns (line 4): empty*", "2 problem(s)" }, { 0 } },
	/* CRLF line endings: same keys, same line numbers */
	{ "CRLF", "---\r\nwrite_patterns:\r\n  - a.md\r\n---\r\n```python\r\nx\r\n```\r\n", 0,
	  "python", 0, 0, { "frontmatter: line 1-4", "role: tools=default writes=yes write_patterns=1",
			    "block 0 label=python lang=python line 5-7: runs", "ok" }, { 0 } },
	/* a UTF-8 byte order mark before the opening dashes */
	{ "BOM", "\xef\xbb\xbf" GOOD_FM "```python\n```\n", 0, "python", 0, 0,
	  { "frontmatter: line 1-3", "ok" }, { 0 } },
	/* trailing blanks on the dashes */
	{ "dashes with blanks", "--- \nwrite_patterns: [a]\n---\t\n```python\n```\n", 0, "python", 0, 0,
	  { "frontmatter: line 1-3", "ok" }, { 0 } },
	/* the frontmatter starts on line 1 or not at all */
	{ "late dashes", "\n---\nenv_passthrough: [X]\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "frontmatter: none", "block 0 label=python lang=python line 5-6: runs",
	    "problem: write_patterns: missing*" }, { "problem: env_passthrough*" } },
	/* never closed: flagged, nothing read from it, the file is the body */
	{ "unclosed frontmatter", "---\nenv_passthrough: [X]\n```python\n```\n", 0, "python", 0, 1,
	  { "frontmatter: unclosed", "block 0 label=python lang=python line 3-4: runs",
	    "problem: frontmatter (line 1): opened by --- but no --- line closes it*" },
	  { "role:*", "problem: env_passthrough*" } },
	{ "dashes alone", "---", 0, "python", 0, 2,
	  { "frontmatter: unclosed", "problem: no runnable block*" }, { 0 } },
	/* frontmatter only */
	{ "frontmatter only", "---\n---\n", 0, "python", 0, 2,
	  { "frontmatter: line 1-2", "problem: write_patterns: missing*",
	    "problem: no runnable block: the note has no fenced block*" }, { 0 } },
	/* a fence in the frontmatter is YAML, not a block */
	{ "fence in frontmatter", "---\nx: |\n  ```python\n  y\n  ```\nwrite_patterns: [a]\n---\n"
	  "```bash\n```\n", 0, "bash", 0, 0,
	  { "block 0 label=bash lang=bash line 8-9: runs", "ok" }, { "block 1*" } },
	/* an unclosed fence runs to the end of the note: said, not flagged */
	{ "unclosed fence", GOOD_FM "```python\nprint(1)\n", 0, "python", 0, 0,
	  { "block 0 label=python lang=python line 4-5 (unclosed): runs", "ok" }, { 0 } },
	/* --max-blocks counts the code blocks, as the server does */
	{ "too many blocks", GOOD_FM "```python\n```\n```json\n```\n```sh\n```\n```perl\n```\n",
	  0, "python,bash,perl", 2, 1,
	  { "problem: 3 code blocks, more than --max-blocks 2*" }, { 0 } },
	{ "at max blocks", GOOD_FM "```python\n```\n```json\n```\n```sh\n```\n", 0, "python,bash", 2, 0,
	  { "ok" }, { 0 } },
	/* control bytes in a label are shown escaped, long labels cut */
	{ "control label", GOOD_FM "```py\x1b[2Jthon\n```\n```python\n```\n", 0, "python", 0, 0,
	  { "block 0 label=py\\x1b[2Jthon lang=unknown line 4-5: prose, skipped" }, { 0 } },
	{ "long label", GOOD_FM "```aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n```\n"
	  "```python\n```\n", 0, "python", 0, 0,
	  { "block 0 label=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... "
	    "lang=unknown line 4-5: prose, skipped" }, { 0 } },
	/* NUL bytes are ordinary bytes: in code and in the frontmatter */
	{ "NUL bytes", BIN("---\nwrite_patterns: [a\0b]\nx\0: y\n---\n```python\nx\0y\n```\n"),
	  "python", 0, 0, { "role: tools=default writes=yes write_patterns=1",
			    "block 0 label=python lang=python line 5-7: runs", "ok" }, { 0 } },
	/* YAML junk never crashes and never invents keys */
	{ "junk frontmatter", "---\n:\n- stray\n\t- tab\n\"unterminated: x\n[a, b]: c\n"
	  "tools: [write_note, finish\n---\n```python\n```\n", 0, "python", 0, 1,
	  { "role: tools=[write_note, finish] writes=yes write_patterns=none",
	    "problem: write_patterns: missing*" }, { "problem: tools*" } },
	/* items in a list under an untracked key are not the next key's */
	{ "list under other key", "---\non_change:\n  - write_note\ntools: [finish]\n---\n```python\n```\n",
	  0, "python", 0, 0, { "role: tools=[finish] writes=no write_patterns=none", "ok" }, { 0 } },
};

static int has_line(const char *out, const char *want)
{
	size_t wl = strlen(want);
	int prefix = wl && want[wl - 1] == '*';
	const char *p = out;

	if (prefix)
		wl--;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);

		if ((prefix ? ll >= wl : ll == wl) && !memcmp(p, want, wl))
			return 1;
		p += ll + (nl ? 1 : 0);
	}
	return 0;
}

/* Every line is "NAME: ...": the report stays greppable per file. */
static int all_prefixed(const char *out, const char *name)
{
	size_t nl = strlen(name);
	const char *p = out;

	while (*p) {
		const char *e = strchr(p, '\n');

		if (!e || strncmp(p, name, nl) || strncmp(p + nl, ": ", 2))
			return 0;
		p = e + 1;
	}
	return 1;
}

static char *run(const char *name, const char *in, size_t len, const char *allow,
		 size_t max_blocks, int *ret)
{
	struct registry reg;
	struct guarded g;
	struct jbuf b = {0};
	char err[256];
	const char *text;
	char *out;

	if (reg_init(&reg) < 0 || (allow && reg_allow(&reg, allow, err, sizeof err) < 0))
		abort();
	text = guard_copy(&g, in, len);
	*ret = rc_check_note(name, text, len, &reg, max_blocks, &b);
	guard_free(&g);
	reg_free(&reg);
	out = strdup(jbuf_cstr(&b) ? b.p : "");
	jbuf_free(&b);
	if (!out)
		abort();
	return out;
}

static void run_rows(void)
{
	char line[512];

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		size_t len = r->len ? r->len : strlen(r->in);
		int ret, ok;
		char *out = run("n.md", r->in, len, r->allow, r->max_blocks, &ret);

		ok = tap_ok(ret == r->want, "%s: %d problem(s)", r->name, r->want);
		ok &= tap_ok(all_prefixed(out, "n.md"), "%s: every line names the file", r->name);
		for (int k = 0; k < MAXL && r->has[k]; k++) {
			snprintf(line, sizeof line, "n.md: %s", r->has[k]);
			ok &= tap_ok(has_line(out, line), "%s: has \"%s\"", r->name, r->has[k]);
		}
		for (int k = 0; k < MAXL && r->hasnt[k]; k++) {
			snprintf(line, sizeof line, "n.md: %s", r->hasnt[k]);
			ok &= tap_ok(!has_line(out, line), "%s: lacks \"%s\"", r->name, r->hasnt[k]);
		}
		if (!ok)
			tap_diag("report was:\n%s", out);
		free(out);
	}
}

/* The count line is the last, problems come after the blocks. */
static void order(void)
{
	static const char note[] = "---\nenv_prefix: X\nwrite_patterns: [a]\n---\n```python\n```\n```ruby\n```\n";
	int ret;
	char *out = run("o.md", note, sizeof note - 1, "python", 0, &ret);
	const char *blk = strstr(out, "o.md: block 1 ");
	const char *pb = strstr(out, "o.md: problem: ");
	size_t n = strlen(out);
	const char *last = n > 1 ? memrchr(out, '\n', n - 1) : NULL;

	tap_ok(ret == 2 && blk && pb && blk < pb, "order: problems after the block lines");
	tap_ok(last && !strcmp(last + 1, "o.md: 2 problem(s)\n"), "order: the count line is last");
	free(out);
}

/* A name with control bytes cannot forge report lines. */
static void hostile_name(void)
{
	int ret;
	char *out = run("a\nb.md", "", 0, "python", 0, &ret);

	tap_ok(ret == 2 && all_prefixed(out, "a\\x0ab.md"), "name: control bytes escaped");
	free(out);
}

/* NULL text with length 0 is an empty note. */
static void null_text(void)
{
	struct registry reg;
	struct jbuf b = {0};

	reg_init(&reg);
	tap_ok(rc_check_note("x", NULL, 0, &reg, 0, &b) == 2 &&
	       has_line(jbuf_cstr(&b), "x: 2 problem(s)"), "NULL text: an empty note");
	jbuf_free(&b);
	reg_free(&reg);
}

static void unreadable(void)
{
	struct jbuf b = {0};

	tap_ok(rc_unreadable("gone.md", "No such file or directory", &b) == 1 &&
	       !strcmp(jbuf_cstr(&b), "gone.md: problem: cannot read: No such file or directory\n"
		       "gone.md: 1 problem(s)\n"), "unreadable: one problem, then the count");
	jbuf_free(&b);
}

/* Every prefix of a note that exercises each path ends at the guard
 * page: no cut may read past the end, and each gives a whole report. */
static void every_prefix(void)
{
	static const char note[] =
		"\xef\xbb\xbf---\r\n\"tools\": [write_note, 'fin\n  ish']\nwrite_patterns:\n- a # c\n"
		"env_passthrough:\n  - K\nenv_prefix: \"P\nurl: x:y\n---\n"
		"~~~python x\nprint(1)\n~~~\n```json\n{}\n```\n```ruby";
	size_t bad = 0;
	int ret;

	for (size_t len = 0; len <= sizeof note - 1; len++) {
		char *out = run("p.md", note, len, "python", 1, &ret);
		size_t n = strlen(out);

		if (ret < 0 || !all_prefixed(out, "p.md") || n < 6 ||
		    !(strstr(out, ret ? " problem(s)\n" : ": ok\n")))
			bad++;
		free(out);
	}
	tap_ok(bad == 0, "every prefix of a note: whole reports, no over-read (%zu bad)", bad);
}

int main(void)
{
	run_rows();
	order();
	hostile_name();
	null_text();
	unreadable();
	every_prefix();
	return tap_done();
}
