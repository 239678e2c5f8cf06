/* Tests for json/registry.c: the built-in interpreters and their aliases
 * (looked up case-insensitively), --allowed-programs parsing, and merging
 * an operator's --interpreters file, including every rejection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json/registry.h"
#include "tests/guard.h"
#include "tests/tap.h"

static const struct interp *look(const struct registry *r, const char *label)
{
	struct guarded g;
	const struct interp *it;
	/* the label sits before a guard page: lookup must honour len */
	const char *l = guard_copy(&g, label, strlen(label));

	it = reg_lookup(r, l, strlen(label));
	guard_free(&g);
	return it;
}

static const char *name_of(const struct interp *it)
{
	return it ? it->name : "(null)";
}

struct lookup_row {
	const char *label;
	const char *want;	/* canonical name, NULL: unknown */
};

static const struct lookup_row builtin_rows[] = {
	{ "python", "python" }, { "py", "python" }, { "python3", "python" },
	{ "PY", "python" }, { "Python3", "python" },
	{ "bash", "bash" }, { "sh", "bash" }, { "shell", "bash" }, { "SHELL", "bash" },
	{ "node", "node" }, { "js", "node" }, { "javascript", "node" },
	{ "JavaScript", "node" },
	{ "ruby", "ruby" }, { "rb", "ruby" },
	{ "php", "php" }, { "PHP", "php" },
	{ "perl", "perl" }, { "pl", "perl" },
	{ "json", NULL }, { "text", NULL }, { "pyt", NULL }, { "pythonx", NULL },
	{ "p", NULL }, { "", NULL }, { "python ", NULL }, { "zsh", NULL },
};

/* Writes `text` to a fresh temporary file; the caller unlinks it. */
static void tmpfile_with(char *path, size_t plen, const char *text)
{
	int fd;

	snprintf(path, plen, "/tmp/test_registry.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
}

static int load_text(struct registry *r, const char *text, char *err, size_t errlen)
{
	char path[64];
	int rc;

	tmpfile_with(path, sizeof path, text);
	err[0] = '\0';
	rc = reg_load_file(r, path, err, errlen);
	unlink(path);
	return rc;
}

struct reject_row {
	const char *name;
	const char *text;
	const char *err_sub;	/* must appear in the error message */
};

static const struct reject_row reject_rows[] = {
	{ "argv without {file}", "{\"lua\":{\"argv\":[\"lua\",\"x.lua\"]}}",
	  "must contain \"{file}\"" },
	{ "empty argv", "{\"lua\":{\"argv\":[]}}", "\"argv\" must be an array" },
	{ "argv missing", "{\"lua\":{\"ext\":\".lua\"}}", "\"argv\" must be an array" },
	{ "argv not an array", "{\"lua\":{\"argv\":\"lua {file}\"}}",
	  "\"argv\" must be an array" },
	{ "argv non-string entry", "{\"lua\":{\"argv\":[\"lua\",7,\"{file}\"]}}",
	  "argv entries must be non-empty strings" },
	{ "argv empty-string entry", "{\"lua\":{\"argv\":[\"\",\"{file}\"]}}",
	  "argv entries must be non-empty strings" },
	{ "relative argv[0] with a slash", "{\"lua\":{\"argv\":[\"bin/lua\",\"{file}\"]}}",
	  "argv[0] must be a bare name or an absolute path" },
	{ "dot-slash argv[0]", "{\"lua\":{\"argv\":[\"./lua\",\"{file}\"]}}",
	  "argv[0] must be a bare name or an absolute path" },
	{ "argv of 33 entries",
	  "{\"lua\":{\"argv\":[\"lua\",\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\","
	  "\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\",\"18\",\"19\",\"20\","
	  "\"21\",\"22\",\"23\",\"24\",\"25\",\"26\",\"27\",\"28\",\"29\",\"30\",\"31\","
	  "\"{file}\"]}}", "\"argv\" must be an array of 1 to 32" },
	{ "label with a space", "{\"my lang\":{\"argv\":[\"x\",\"{file}\"]}}",
	  "is not a valid label" },
	{ "empty label", "{\"\":{\"argv\":[\"x\",\"{file}\"]}}", "is not a valid label" },
	{ "label with a comma", "{\"a,b\":{\"argv\":[\"x\",\"{file}\"]}}",
	  "is not a valid label" },
	{ "non-ASCII label", "{\"\xC3\xA9t\xC3\xA9\":{\"argv\":[\"x\",\"{file}\"]}}",
	  "is not a valid label" },
	{ "entry not an object", "{\"lua\":\"lua {file}\"}", "\"argv\" must be an array" },
	{ "top level an array", "[{\"lua\":{\"argv\":[\"lua\",\"{file}\"]}}]",
	  "not a JSON object" },
	{ "not JSON", "lua = lua {file}\n", "not a JSON object" },
	{ "trailing garbage", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"]}} x",
	  "not a JSON object" },
	{ "empty file", "", "not a JSON object" },
	{ "aliases not an array", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"aliases\":\"l\"}}",
	  "\"aliases\" must be an array" },
	{ "alias with a space", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"aliases\":[\"l 5\"]}}",
	  "aliases must be single words" },
	{ "alias not a string", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"aliases\":[5]}}",
	  "aliases must be single words" },
	{ "17 aliases",
	  "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"aliases\":[\"a\",\"b\",\"c\",\"d\",\"e\","
	  "\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}}",
	  "at most 16 labels" },
	{ "ext with a slash", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"ext\":\"/x.lua\"}}",
	  "\"ext\" must be a short suffix" },
	{ "ext not a string", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"ext\":1}}",
	  "\"ext\" must be a short suffix" },
	{ "prepend not a string", "{\"lua\":{\"argv\":[\"lua\",\"{file}\"],\"prepend\":[]}}",
	  "\"prepend\" must be a string" },
};

static void test_builtins(void)
{
	struct registry r;
	const struct interp *py, *php;
	int ok = 1;

	tap_ok(reg_init(&r) == 0 && r.n == 6, "reg_init: six built-ins");
	for (size_t i = 0; i < sizeof builtin_rows / sizeof builtin_rows[0]; i++) {
		const struct lookup_row *x = &builtin_rows[i];
		const struct interp *it = look(&r, x->label);

		if (x->want ? !it || strcmp(it->name, x->want) : it != NULL) {
			tap_diag("lookup \"%s\": got %s, want %s", x->label, name_of(it),
				 x->want ? x->want : "(null)");
			ok = 0;
		}
	}
	tap_ok(ok, "built-in names and aliases, any case; unknown labels are NULL");
	tap_ok(name_of(reg_lookup(&r, "pythonista", 6)) == r.v[0].name,
	       "lookup honours len: \"pythonista\",6 is python");
	tap_ok(reg_lookup(&r, "pyX", 2) && !strcmp(reg_lookup(&r, "pyX", 2)->name, "python"),
	       "lookup honours len: \"pyX\",2 is py");
	py = look(&r, "python");
	tap_ok(py && !strcmp(py->argv[0], "python3") && !strcmp(py->argv[1], "{file}") &&
	       !py->argv[2] && !strcmp(py->ext, ".py") && !py->prepend,
	       "python: argv {python3, {file}}, ext .py, no prepend");
	php = look(&r, "php");
	tap_ok(php && php->prepend && !strcmp(php->prepend, "<?php\n") &&
	       !strcmp(php->ext, ".php") && !php->aliases[0],
	       "php: prepend \"<?php\\n\", ext .php, no alias");
	ok = !r.any_allowed;
	for (size_t i = 0; i < r.n; i++)
		ok = ok && !r.v[i].allowed;
	tap_ok(ok, "nothing is allowed before reg_allow");
	reg_free(&r);
	tap_ok(r.n == 0, "reg_free empties the registry");
}

static void test_allow(void)
{
	struct registry r;
	char err[256];

	reg_init(&r);
	err[0] = '\0';
	tap_ok(reg_allow(&r, "python, sh", err, sizeof err) == 0 && r.any_allowed &&
	       look(&r, "python")->allowed && look(&r, "bash")->allowed &&
	       !look(&r, "node")->allowed && !look(&r, "perl")->allowed,
	       "reg_allow \"python, sh\": python and bash (by alias) only");
	tap_ok(reg_allow(&r, "JS", err, sizeof err) == 0 && look(&r, "node")->allowed,
	       "reg_allow is case-insensitive (JS → node)");
	err[0] = '\0';
	tap_ok(reg_allow(&r, "ruby,cobol,perl", err, sizeof err) == -1 &&
	       strstr(err, "unknown interpreter \"cobol\""),
	       "reg_allow rejects an unknown name: %s", err);
	reg_free(&r);

	reg_init(&r);
	tap_ok(reg_allow(&r, "", err, sizeof err) == 0 && !r.any_allowed,
	       "an empty allowlist allows nothing");
	tap_ok(reg_allow(&r, " ,, \t,", err, sizeof err) == 0 && !r.any_allowed,
	       "separators alone allow nothing");
	tap_ok(reg_allow(&r, "pl,", err, sizeof err) == 0 && r.any_allowed &&
	       look(&r, "perl")->allowed && !look(&r, "python")->allowed,
	       "a trailing comma is fine");
	reg_free(&r);
}

static void test_load(void)
{
	struct registry r;
	char err[512], path[64];
	const struct interp *it;
	size_t n;

	reg_init(&r);
	tap_ok(load_text(&r,
		"{\"python\":{\"argv\":[\"/usr/bin/python3.11\",\"-I\",\"{file}\"],\"ext\":\".py\"},\n"
		" \"lua\":{\"argv\":[\"lua\",\"--\",\"{file}\"],\"aliases\":[\"Lua5\",\"luajit\"],"
		"\"ext\":\".lua\",\"prepend\":\"-- codellm\\n\"},\n"
		" \"deno\":{\"argv\":[\"/usr/bin/deno\",\"run\",\"--file={file}\"]}}\n",
		err, sizeof err) == 0, "reg_load_file merges a valid file: %s", err);
	tap_ok(r.n == 8, "two new interpreters added (8 in all, got %zu)", r.n);
	it = look(&r, "python");
	tap_ok(it && !strcmp(it->argv[0], "/usr/bin/python3.11") &&
	       !strcmp(it->argv[1], "-I") && !strcmp(it->argv[2], "{file}") && !it->argv[3],
	       "python replaced: argv from the file");
	tap_ok(look(&r, "py") == NULL && look(&r, "python3") == NULL,
	       "a replaced built-in keeps only the file's aliases (none)");
	it = look(&r, "LUAJIT");
	tap_ok(it && !strcmp(it->name, "lua") && look(&r, "lua5") == it &&
	       !strcmp(it->ext, ".lua") && it->prepend && !strcmp(it->prepend, "-- codellm\n") &&
	       !strcmp(it->argv[1], "--"), "lua added with aliases, ext and prepend");
	it = look(&r, "deno");
	tap_ok(it && !strcmp(it->ext, "") && !it->prepend && !it->aliases[0] &&
	       !strcmp(it->argv[2], "--file={file}"),
	       "deno: {file} inside an argument counts, ext defaults to \"\"");
	tap_ok(look(&r, "bash") && look(&r, "sh") == look(&r, "bash"),
	       "untouched built-ins keep their aliases");
	tap_ok(reg_allow(&r, "luajit,deno", err, sizeof err) == 0 &&
	       look(&r, "lua")->allowed && look(&r, "deno")->allowed &&
	       !look(&r, "python")->allowed, "loaded interpreters can be allowed");
	reg_free(&r);

	/* a name differing only in case replaces the built-in */
	reg_init(&r);
	n = r.n;
	tap_ok(load_text(&r, "{\"RUBY\":{\"argv\":[\"ruby\",\"-W0\",\"{file}\"],\"aliases\":[\"rb\"]}}",
			 err, sizeof err) == 0 && r.n == n &&
	       look(&r, "rb") && !strcmp(look(&r, "rb")->argv[1], "-W0"),
	       "a case-insensitive name match replaces, not adds");
	reg_free(&r);

	/* an entry named like a built-in's alias takes that label over;
	 * the built-in keeps its name and other aliases */
	reg_init(&r);
	tap_ok(load_text(&r, "{\"sh\":{\"argv\":[\"/bin/dash\",\"{file}\"]}}",
			 err, sizeof err) == 0 && r.n == 7, "an entry named sh is added");
	it = look(&r, "SH");
	tap_ok(it && !strcmp(it->name, "sh") && !strcmp(it->argv[0], "/bin/dash"),
	       "label sh now runs the new entry (%s)", name_of(it));
	tap_ok(look(&r, "shell") && !strcmp(look(&r, "shell")->name, "bash") &&
	       !strcmp(name_of(look(&r, "bash")), "bash"), "bash keeps bash and shell");
	tap_ok(reg_allow(&r, "sh", err, sizeof err) == 0 && look(&r, "sh")->allowed &&
	       !look(&r, "bash")->allowed, "reg_allow sh allows the new entry, not bash");
	reg_free(&r);

	/* an empty object changes nothing */
	reg_init(&r);
	tap_ok(load_text(&r, " {} \n", err, sizeof err) == 0 && r.n == 6,
	       "an empty object is accepted and changes nothing");
	reg_free(&r);

	for (size_t i = 0; i < sizeof reject_rows / sizeof reject_rows[0]; i++) {
		const struct reject_row *x = &reject_rows[i];
		int rc;

		reg_init(&r);
		rc = load_text(&r, x->text, err, sizeof err);
		if (!tap_ok(rc == -1 && strstr(err, x->err_sub) && r.n == 6,
			    "reg_load_file rejects: %s", x->name))
			tap_diag("rc %d, n %zu, err \"%s\", want \"%s\"", rc, r.n, err, x->err_sub);
		/* the registry is still usable after a rejected file */
		if (!look(&r, "bash"))
			tap_ok(0, "bash still known after rejecting %s", x->name);
		reg_free(&r);
	}

	reg_init(&r);
	snprintf(path, sizeof path, "/tmp/test_registry.missing.%ld", (long)getpid());
	err[0] = '\0';
	tap_ok(reg_load_file(&r, path, err, sizeof err) == -1 && strstr(err, path) &&
	       strstr(err, "No such file"), "a missing file is an error naming it: %s", err);
	reg_free(&r);
}

int main(void)
{
	test_builtins();
	test_allow();
	test_load();
	return tap_done();
}
