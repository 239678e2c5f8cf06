/* Environments: the manifest as json/env.c reads it and the answers'
 * JSON of one; the tree's walk (sandbox/env.c) as its digest sees it:
 * the same tree gives the same digest whatever order it was made in,
 * and every change a block could notice (bytes, mode, owner, a link's
 * target, an entry added) gives another; what is not root's alone, or
 * not a directory, file or link, ends the walk. The walk's cases need
 * root (files of root's, chown); without it they are skipped. */
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/env.h"
#include "json/sha256.h"
#include "sandbox/sandbox.h"
#include "tests/guard.h"
#include "tests/tap.h"

static const char GOOD[] =
	"{\"name\":\"data\",\"digest\":\"sha256:"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
	"\"built\":\"2026-12-04T00:00:00Z\",\"suite\":\"bookworm\",\"requested\":[\"python3\"],"
	"\"packages\":[{\"name\":\"python3\",\"version\":\"3.11.2-1+b1\"},"
	"{\"name\":\"python3-numpy\",\"version\":\"1:1.24.2-1\"}]}";

static const struct {
	const char *text;
	const char *why;	/* a part of the reason */
	const char *desc;
} bad[] = {
	{ "[]", "not a JSON object", "an array" },
	{ "{\"name\":\"x\"}", "no string \"name\" and \"digest\"", "no digest" },
	{ "{\"name\":1,\"digest\":\"sha256:00\"}", "no string", "a name that is a number" },
	{ "{\"name\":\"x\",\"digest\":\"sha256:00\",\"packages\":[]}", "64 lowercase hex",
	  "a short digest" },
	{ "{\"name\":\"x\",\"digest\":\"sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef"
	  "0123456789abcdef\",\"packages\":[]}", "64 lowercase hex", "an upper-case digest" },
	{ "{\"name\":\"x\",\"digest\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef\"}", "no \"packages\" array", "no packages" },
	{ "{\"name\":\"x\",\"digest\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef\",\"packages\":[{\"name\":\"a\"}]}", "not {\"name\", \"version\"}",
	  "a package without a version" },
	{ "{\"name\":\"x\",\"digest\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef\",\"packages\":[],\"built\":3}", "\"built\" or \"suite\"",
	  "a built that is no string" },
	{ "{\"name\":\"x\"", "is not JSON", "cut short" },
};

static void manifests(void)
{
	struct env_manifest m;
	struct guarded g;
	char why[256];
	const char *in = guard_copy(&g, GOOD, sizeof GOOD - 1);
	int rc = env_manifest_parse(in, sizeof GOOD - 1, &m, why, sizeof why);

	tap_ok(rc == 0 && !strcmp(m.name, "data") && env_digest_ok(m.digest) &&
	       !strcmp(m.suite, "bookworm") && m.npkgs == 2 &&
	       !strcmp(m.pkgs[1].name, "python3-numpy") && !strcmp(m.pkgs[1].version, "1:1.24.2-1"),
	       "a manifest: name, digest, suite and the packages with their versions");
	if (rc == 0) {
		const char *langs[] = { "python", "bash" };
		struct jbuf b = {0};
		cJSON *j;

		resp_env_model(&b, &m, langs, 2, 1700000000);
		j = jbuf_cstr(&b) ? cJSON_Parse(b.p) : NULL;
		tap_ok(j && !strcmp(cJSON_GetObjectItem(j, "id")->valuestring, "data") &&
		       cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "codellm"),
							  "environment")) &&
		       cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "codellm"),
							     "packages")) == 2 &&
		       !strcmp(cJSON_GetObjectItem(j, "object")->valuestring, "model"),
		       "its model object: an OpenAI model with a codellm member (environment, "
		       "languages, packages)");
		cJSON_Delete(j);
		jbuf_free(&b);
		resp_env_health(&b, "data", m.digest, "a reason \"quoted\"");
		j = jbuf_cstr(&b) ? cJSON_Parse(b.p) : NULL;
		tap_ok(j && cJSON_IsFalse(cJSON_GetObjectItem(j, "ok")) &&
		       !strcmp(cJSON_GetObjectItem(j, "error")->valuestring, "a reason \"quoted\""),
		       "its /healthz entry when it failed: ok false and why");
		cJSON_Delete(j);
		jbuf_free(&b);
		env_manifest_free(&m);
	}
	guard_free(&g);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		in = guard_copy(&g, bad[i].text, strlen(bad[i].text));
		why[0] = '\0';
		rc = env_manifest_parse(in, strlen(bad[i].text), &m, why, sizeof why);
		tap_ok(rc < 0 && strstr(why, bad[i].why) && !m.name && !m.pkgs,
		       "refused: %s (\"%s\")", bad[i].desc, why);
		guard_free(&g);
	}
	tap_ok(sbx_env_name_ok("data") && sbx_env_name_ok("py3.11_x-1") && !sbx_env_name_ok("") &&
	       !sbx_env_name_ok("Data") && !sbx_env_name_ok(".hidden") && !sbx_env_name_ok("a/b") &&
	       !sbx_env_name_ok("-x") && !sbx_env_name_ok(
		       "a123456789012345678901234567890123456789012345678901234567890123"),
	       "environment names: [a-z0-9][a-z0-9._-]*, at most 63 bytes");
}

/* ---- the walk ---- */

static char base[64];

static void sink(void *ctx, const void *data, size_t len)
{
	sha256_update(ctx, data, len);
}

/* The digest of base/root, or "" with why set. */
static const char *digest(char *why, size_t n)
{
	static char hex[65];
	char root[128];
	struct sha256 c;

	snprintf(root, sizeof root, "%s/root", base);
	sha256_init(&c);
	if (sbx_env_walk(root, sink, &c, why, n) < 0)
		return "";
	sha256_final_hex(&c, hex);
	return hex;
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char p[256];
	int fd;

	snprintf(p, sizeof p, "%s/root/%s", base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		perror(p);
	close(fd);
	chmod(p, mode);
}

static void dir(const char *rel)
{
	char p[256];

	snprintf(p, sizeof p, "%s/root/%s", base, rel);
	mkdir(p, 0755);
	chmod(p, 0755);
}

/* a step of the scratch tree that must work */
static void must(int rc, const char *what)
{
	if (rc < 0)
		tap_diag("%s: %s", what, strerror(errno));
}

static void path(char *p, size_t n, const char *rel)
{
	snprintf(p, n, "%s/root/%s", base, rel);
}

/* A small tree, made in the given order (0: usr first, 1: etc first). */
static void make_tree(int order)
{
	char p[256];

	snprintf(p, sizeof p, "%s/root", base);
	mkdir(p, 0755);
	if (order == 0) {
		dir("usr");
		dir("usr/bin");
		put("usr/bin/tool", "#!/bin/sh\necho tool\n", 0755);
		put("usr/bin/a", "a\n", 0644);
		dir("etc");
		put("etc/os-release", "ID=debian\n", 0644);
	} else {
		dir("etc");
		put("etc/os-release", "ID=debian\n", 0644);
		dir("usr");
		dir("usr/bin");
		put("usr/bin/a", "a\n", 0644);
		put("usr/bin/tool", "#!/bin/sh\necho tool\n", 0755);
	}
	path(p, sizeof p, "bin");
	must(symlink("usr/bin", p), "symlink");
	/* outside the trees a block gets: never walked */
	dir("var");
	put("var/log", "anything\n", 0666);
}

static void remove_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf %s/root", base);
	if (system(cmd) != 0)
		perror(cmd);
}

static void walks(void)
{
	char why[512], first[65], p[256], p2[256];
	const char *d;

	snprintf(base, sizeof base, "/tmp/codellm-envwalk-XXXXXX");
	if (!mkdtemp(base)) {
		tap_ok(0, "a scratch directory for the walk");
		return;
	}
	make_tree(0);
	d = digest(why, sizeof why);
	snprintf(first, sizeof first, "%s", d);
	tap_ok(strlen(first) == 64, "a tree of root's alone has a digest (%s)", *d ? d : why);
	tap_ok(!strcmp(digest(why, sizeof why), first), "walked again: the same digest");
	remove_tree();
	make_tree(1);
	tap_ok(!strcmp(digest(why, sizeof why), first),
	       "the same tree made in another order: the same digest");
	put("var/log", "changed\n", 0666);
	tap_ok(!strcmp(digest(why, sizeof why), first),
	       "what is outside bin, etc, lib*, sbin and usr is not walked");

	put("usr/bin/a", "b\n", 0644);
	tap_ok(strcmp(digest(why, sizeof why), first), "a file's bytes changed: another digest");
	put("usr/bin/a", "a\n", 0644);
	tap_ok(!strcmp(digest(why, sizeof why), first), "… and back: the first digest");
	path(p, sizeof p, "usr/bin/a");
	chmod(p, 0600);
	tap_ok(strcmp(digest(why, sizeof why), first), "a mode changed: another digest");
	chmod(p, 0644);
	must(chown(p, 0, 5), "chown");
	tap_ok(strcmp(digest(why, sizeof why), first), "a group changed: another digest");
	must(chown(p, 0, 0), "chown");
	path(p2, sizeof p2, "bin");
	unlink(p2);
	must(symlink("usr/sbin", p2), "symlink");
	tap_ok(strcmp(digest(why, sizeof why), first), "a link's target changed: another digest");
	unlink(p2);
	must(symlink("usr/bin", p2), "symlink");
	put("usr/bin/new", "", 0644);
	tap_ok(strcmp(digest(why, sizeof why), first), "an empty file added: another digest");
	path(p, sizeof p, "usr/bin/new");
	unlink(p);
	tap_ok(!strcmp(digest(why, sizeof why), first), "… removed: the first digest");

	path(p, sizeof p, "usr/bin/a");
	chmod(p, 0664);
	tap_ok(!*digest(why, sizeof why) && strstr(why, "usr/bin/a may be written by others"),
	       "a file its group may write ends the walk (%s)", why);
	chmod(p, 0644);
	must(chown(p, 65534, 0), "chown");
	tap_ok(!*digest(why, sizeof why) && strstr(why, "usr/bin/a is not root's"),
	       "a file that is not root's ends the walk (%s)", why);
	must(chown(p, 0, 0), "chown");
	chmod(p, 0640);
	tap_ok(!*digest(why, sizeof why) && strstr(why, "usr/bin/a is not readable by all"),
	       "a file not all may read ends the walk (%s)", why);
	chmod(p, 0644);
	path(p, sizeof p, "usr/bin");
	chmod(p, 0754);
	tap_ok(!*digest(why, sizeof why) && strstr(why, "usr/bin is not readable by all"),
	       "a directory not all may search ends the walk (%s)", why);
	chmod(p, 0755);
	path(p, sizeof p, "usr/bin/fifo");
	mkfifo(p, 0644);
	tap_ok(!*digest(why, sizeof why) && strstr(why, "no directory, regular file or link"),
	       "a FIFO ends the walk (%s)", why);
	unlink(p);
	path(p, sizeof p, "etc");
	chmod(p, 0757);
	tap_ok(!*digest(why, sizeof why) && strstr(why, "etc may be written by others"),
	       "a top directory others may write ends the walk (%s)", why);
	chmod(p, 0755);
	tap_ok(!strcmp(digest(why, sizeof why), first), "all put back: the first digest");

	snprintf(p2, sizeof p2, "%s/root", base);
	tap_ok(sbx_env_has_program(p2, "tool") && !sbx_env_has_program(p2, "a") &&
	       !sbx_env_has_program(p2, "missing") && !sbx_env_has_program(p2, "../root/usr/bin/tool"),
	       "a program is found in the tree's PATH when executable, only by a bare name");
	path(p, sizeof p, "usr/bin/tool");
	unlink(p);
	must(symlink("/usr/bin/a-host-path-that-the-tree-lacks", p), "symlink");
	tap_ok(!sbx_env_has_program(p2, "tool"),
	       "a link out of the tree is followed inside it only (absent there: not found)");
	remove_tree();
	rmdir(base);
}

int main(void)
{
	manifests();
	if (geteuid() == 0)
		walks();
	else
		printf("ok %d - the tree's walk # SKIP needs root (files of root's, chown)\n",
		       ++tap_n);
	return tap_done();
}
