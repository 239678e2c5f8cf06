/* The blocks' /etc kept per slot (sandbox/etc.c): what it copies, binds
 * and leaves out, when a kept copy is used again and when it is made
 * again. A source /etc of the test's own in a temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

static char src[256], keep[256];

static void put(const char *name, const char *text, mode_t mode)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", src, name);
	unlink(p);
	f = fopen(p, "w");
	if (!f || fputs(text, f) == EOF || fclose(f) == EOF)
		exit(99);
	chmod(p, mode);
}

static int read_kept(const struct sbx_etc *e, const char *name, char *buf, size_t len)
{
	char p[PATH_MAX + 300];
	ssize_t n;
	int fd;

	snprintf(p, sizeof p, "%s/%s", e->kept, name);
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return 0;
}

static int kept_has(const struct sbx_etc *e, const char *name)
{
	char p[PATH_MAX + 300];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", e->kept, name);
	return lstat(p, &st) == 0;
}

static int binds(const struct sbx_etc *e, const char *want)
{
	char got[512] = "";

	for (const char *b = e->binds; *b; b += strlen(b) + 1) {
		strcat(got, b);
		strcat(got, " ");
	}
	if (strcmp(got, want))
		tap_diag("binds: got \"%s\", want \"%s\"", got, want);
	return !strcmp(got, want);
}

static int keep_once(struct sbx_etc *e, int resolv)
{
	int rc = sbx_etc_keep(e, keep, "etc.0.host", src, resolv);

	sbx_etc_release(e);
	return rc;
}

static ino_t ino_of(const struct sbx_etc *e, const char *name)
{
	char p[PATH_MAX + 300];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", e->kept, name);
	return lstat(p, &st) == 0 ? st.st_ino : 0;
}

int main(void)
{
	static struct sbx_etc e;
	char buf[256], p[PATH_MAX + 300], tmpl[] = "/tmp/codellm-etc-XXXXXX";
	struct stat st;
	ino_t before;

	if (!mkdtemp(tmpl))
		return 99;
	snprintf(src, sizeof src, "%s/etc", tmpl);
	snprintf(keep, sizeof keep, "%s/keep", tmpl);
	if (mkdir(src, 0755) < 0 || mkdir(keep, 0700) < 0)
		return 99;
	put("os-release", "NAME=test\n", 0644);
	put("shells", "/bin/sh\n", 0644);
	put("login.defs", "secret\n", 0600);	/* allowlisted, not world-readable */
	put("machine-id", "0123\n", 0444);	/* not allowlisted */
	put("shadow", "root:x\n", 0644);	/* not allowlisted */
	snprintf(p, sizeof p, "%s/ssl", src);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/localtime", src);
	if (symlink("/usr/share/zoneinfo/Etc/UTC", p) < 0)
		return 99;

	/* 1: made, its sources just written: no index yet */
	tap_ok(keep_once(&e, 0) == 0 && !e.reused, "a slot's first run makes its /etc");
	tap_ok(read_kept(&e, "os-release", buf, sizeof buf) == 0 && !strcmp(buf, "NAME=test\n"),
	       "a world-readable allowlisted file is copied");
	snprintf(p, sizeof p, "%s/os-release", e.kept);
	tap_ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0444, "copies are read-only (0444)");
	tap_ok(read_kept(&e, "passwd", buf, sizeof buf) == 0 && strstr(buf, "nobody:x:65534"),
	       "passwd is written, not the host's");
	tap_ok(read_kept(&e, "hostname", buf, sizeof buf) == 0 && !strcmp(buf, "codellm\n"),
	       "hostname is written");
	tap_ok(lstat(p, &st) == 0 && readlink((snprintf(p, sizeof p, "%s/localtime", e.kept), p),
					       buf, sizeof buf) > 0 &&
	       !strncmp(buf, "/usr/share/zoneinfo/Etc/UTC", 27), "a symlink is copied as a symlink");
	tap_ok(!kept_has(&e, "machine-id") && !kept_has(&e, "shadow"),
	       "entries outside the allowlist stay out");
	tap_ok(binds(&e, "flogin.defs dssl ") || binds(&e, "dssl flogin.defs "),
	       "a directory and a file it may not read are bound, over empty points");
	tap_ok(read_kept(&e, "login.defs", buf, sizeof buf) == 0 && buf[0] == '\0',
	       "the point of a bound file is empty");
	snprintf(p, sizeof p, "%s/etc.0.host.index", keep);
	tap_ok(access(p, F_OK) < 0, "no index while a source changed under 2 s ago");

	/* 2: settled: the next run makes it with an index, the one after
	 * uses it as it is */
	sleep(3);
	tap_ok(keep_once(&e, 0) == 0 && !e.reused && access(p, F_OK) == 0,
	       "settled sources: made again, with an index");
	before = ino_of(&e, "os-release");
	tap_ok(keep_once(&e, 0) == 0 && e.reused && ino_of(&e, "os-release") == before,
	       "nothing changed: the kept /etc is used as it is");
	tap_ok(binds(&e, "flogin.defs dssl ") || binds(&e, "dssl flogin.defs "),
	       "its binds come from the index");

	/* 3: a source written in place */
	snprintf(p, sizeof p, "%s/shells", src);
	{
		FILE *f = fopen(p, "r+");

		if (!f || fputs("/bin/ba", f) == EOF || fclose(f) == EOF)
			return 99;
	}
	tap_ok(keep_once(&e, 0) == 0 && !e.reused &&
	       read_kept(&e, "shells", buf, sizeof buf) == 0 && !strcmp(buf, "/bin/ba\n"),
	       "a source changed in place: made again, with the new content");

	/* 4: an entry added to the source */
	sleep(3);
	put("services", "http 80/tcp\n", 0644);
	tap_ok(keep_once(&e, 0) == 0 && !e.reused && kept_has(&e, "services"),
	       "an entry added to the source: made again, with it");

	/* 5: a copy changed (nothing may write there) */
	sleep(3);
	tap_ok(keep_once(&e, 0) == 0 && !e.reused, "settled again: made with an index");
	tap_ok(keep_once(&e, 0) == 0 && e.reused, "and used again");
	snprintf(p, sizeof p, "%s/os-release", e.kept);
	chmod(p, 0644);
	tap_ok(keep_once(&e, 0) == 0 && !e.reused &&
	       stat(p, &st) == 0 && (st.st_mode & 07777) == 0444,
	       "a copy changed: made again from the source");
	tap_ok(keep_once(&e, 0) == 0 && e.reused, "unchanged since: used again");

	/* 6: the other network variant is not this one */
	tap_ok(keep_once(&e, 1) == 0 && !e.reused, "an index of the other network setting is not used");

	/* 7: a kept copy gone or broken */
	snprintf(p, sizeof p, "%s/etc.0.host.index", keep);
	{
		FILE *f = fopen(p, "w");

		if (!f || fputs("codellm-etc 1 1\nc garbage\n", f) == EOF || fclose(f) == EOF)
			return 99;
	}
	tap_ok(keep_once(&e, 1) == 0 && !e.reused && kept_has(&e, "os-release"),
	       "a malformed index: made again");

	/* 8: made for one run only, no index */
	snprintf(p, sizeof p, "%s/run-etc", tmpl);
	tap_ok(sbx_etc_make(&e, p, src, 0) == 0 && !strcmp(e.dir, p) && !e.kept[0],
	       "a run without a slot makes its own");
	snprintf(p, sizeof p, "%s/run-etc/os-release", tmpl);
	tap_ok(access(p, R_OK) == 0, "with the same copies");

	snprintf(p, sizeof p, "rm -rf '%s'", tmpl);
	if (system(p) != 0)
		tap_diag("could not remove %s", tmpl);
	return tap_done();
}
