/* The blocks' /etc (SPEC §7): a directory holding the files codellm
 * writes (passwd, group, hosts, hostname, nsswitch.conf, mtab), a copy
 * of each world-readable regular file and symlink of the host's /etc
 * that programs read (the allowlist below), and an empty point for
 * each directory (and each file it may not copy) that blocks bind from
 * the host's /etc over it.
 *
 * Made once per run slot and kept in the runtime directory, with an
 * index of what each copy was made from: a run checks the index (one
 * lstat of the source and one of the copy per entry, some 50 calls) and
 * uses the kept directory when nothing changed. A block then makes one
 * bind for its /etc and one per directory, where it made some 40 binds
 * and as many mount points before (0.2 ms of every request, issue 34).
 *
 * What makes a kept copy stale: the source /etc itself changed (an entry
 * added, removed or renamed: its mtime and ctime), a copied entry's
 * inode, size or times changed, or a copy's inode or ctime changed
 * (nothing may write there; a root handler's copies belong to the
 * host's root, which no block's user namespace maps). Timestamps are
 * coarse (a clock tick): a source changed less than two seconds before
 * its copy was made could change again with the same times, so such a
 * copy gets no index and the next run makes it again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif

/* What of the host's /etc programs read; anything else of /etc stays
 * out (machine-id, fstab, shadow, ssh keys...). passwd, group, hosts,
 * hostname and nsswitch.conf are written fresh instead. */
static const char *const etc_keep[] = {
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"localtime", "timezone", "perl", "php", "python3", "python3.*",
	"ruby*", "ssl", "ca-certificates", "ca-certificates.conf",
	"mime.types", "protocols", "services", "rpc", "networks", "ethertypes",
	"gai.conf", "host.conf", "magic", "magic.mime", "inputrc", "os-release",
	"debian_version", "lsb-release", "issue", "issue.net", "shells",
	"profile", "profile.d", "bash.bashrc", "environment", "login.defs",
	"terminfo", "fonts", "xml", "sgml", "mailcap", "papersize",
	"matplotlibrc", "locale.alias", "locale.gen", "default", "nanorc",
	"vim", "subversion", NULL
};

static const char *const written[][2] = {
	{ "passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		    "nobody:x:65534:65534:nobody:" SBX_IN_WORK ":/usr/sbin/nologin\n" },
	{ "group", "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n" },
	{ "hosts", "127.0.0.1\tlocalhost codellm\n::1\tlocalhost ip6-localhost\n" },
	{ "hostname", "codellm\n" },
	{ "nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n" },
};

/* a copy larger than this is bound instead */
#define COPY_MAX (4u << 20)
/* a source changed this recently may change again unseen (see above) */
#define SETTLE_NS (2LL * 1000000000LL)
#define INDEX_MAGIC "codellm-etc 1"

static long long ns_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int keep_name(const char *name)
{
	for (const char *const *k = etc_keep; *k; k++)
		/* no pattern starts with a wildcard: the first letter
		 * spares most of the fnmatch calls */
		if (**k == name[0] && !fnmatch(*k, name, 0))
			return 1;
	return 0;
}

static int add_bind(struct sbx_etc *e, char kind, const char *name)
{
	size_t len = strlen(name);

	if (e->binds_len + len + 3 > sizeof e->binds)
		return -E2BIG;
	e->binds[e->binds_len++] = kind;
	memcpy(e->binds + e->binds_len, name, len + 1);
	e->binds_len += len + 1;
	e->binds[e->binds_len] = '\0';
	return 0;
}

/* One line of the index; idx may be NULL (no index is kept). */
static void note(FILE *idx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(FILE *idx, const char *fmt, ...)
{
	va_list ap;

	if (!idx)
		return;
	va_start(ap, fmt);
	vfprintf(idx, fmt, ap);
	va_end(ap);
}

/* A file of the directory, read-only; with times (a copy), the
 * source's times, which ls -l and make show. */
static int write_at(int dfd, const char *name, const void *data, size_t len,
		    const struct stat *times, struct stat *st)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	int rc;

	if (fd < 0)
		return -errno;
	rc = sbx_write_all(fd, data, len);
	if (!rc && times &&
	    futimens(fd, (const struct timespec[2]){ times->st_atim, times->st_mtim }) < 0)
		rc = -errno;
	if (!rc && fstat(fd, st) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* A copy of the regular file src/name; 1 when it is not one to copy
 * (not world-readable, too large), 0, or -errno. */
static int copy_file(int sfd, int dfd, const char *name, const struct stat *hs,
		     struct stat *cs)
{
	char *buf;
	ssize_t n;
	int fd, rc;

	if (!(hs->st_mode & S_IROTH) || hs->st_size > COPY_MAX)
		return 1;
	fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES ? 1 : -errno;
	buf = malloc((size_t)hs->st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* a file that changes size while read is stale at once: the next
	 * run sees other times than the index says */
	n = pread(fd, buf, (size_t)hs->st_size + 1, 0);
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (!rc)
		rc = write_at(dfd, name, buf, (size_t)(n > hs->st_size ? hs->st_size : n), hs, cs);
	free(buf);
	return rc;
}

static int point_at(int dfd, const char *name, int is_dir)
{
	if (is_dir)
		return mkdirat(dfd, name, 0755) < 0 ? -errno : 0;
	return mknodat(dfd, name, S_IFREG | 0444, 0) < 0 ? -errno : 0;
}

/* One entry of the source: copied (a symlink as a symlink), or a point
 * to bind it over. host is 'h' when the entry is the host's own /etc
 * (resolv.conf), else 's' (the source). */
static int take_entry(struct sbx_etc *e, int sfd, int dfd, const char *name, char host,
		      FILE *idx, long long *newest)
{
	struct stat hs, cs;
	char target[PATH_MAX];
	ssize_t n;
	int rc;

	if (fstatat(sfd, name, &hs, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (ns_of(&hs.st_ctim) > *newest)
		*newest = ns_of(&hs.st_ctim);
	if (ns_of(&hs.st_mtim) > *newest)
		*newest = ns_of(&hs.st_mtim);
	if (S_ISLNK(hs.st_mode)) {
		n = readlinkat(sfd, name, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, dfd, name) < 0 || fstatat(dfd, name, &cs, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	} else if (S_ISREG(hs.st_mode) && host == 's') {
		rc = copy_file(sfd, dfd, name, &hs, &cs);
		if (rc < 0)
			return rc;
		if (rc == 1)
			goto bind;
	} else if (S_ISREG(hs.st_mode) || S_ISDIR(hs.st_mode)) {
		goto bind;
	} else {
		return 0;	/* a device, fifo or socket: not for blocks */
	}
	note(idx, "c %c %llu %lld %lld %lld %llu %lld %s\n", host,
	     (unsigned long long)hs.st_ino, (long long)hs.st_size, ns_of(&hs.st_mtim),
	     ns_of(&hs.st_ctim), (unsigned long long)cs.st_ino, ns_of(&cs.st_ctim), name);
	return 0;
bind:
	if ((rc = point_at(dfd, name, S_ISDIR(hs.st_mode))) < 0)
		return rc;
	note(idx, "b %c %c %s\n", host, S_ISDIR(hs.st_mode) ? 'd' : 'f', name);
	return add_bind(e, S_ISDIR(hs.st_mode) ? (host == 'h' ? 'D' : 'd') :
			(host == 'h' ? 'F' : 'f'), name);
}

static int fill(struct sbx_etc *e, int dfd, const char *src, int resolv, FILE *idx,
		long long *newest)
{
	struct stat st;
	struct dirent *d;
	DIR *dir;
	int sfd, hfd, rc = 0;

	for (size_t i = 0; i < sizeof written / sizeof *written; i++) {
		if ((rc = write_at(dfd, written[i][0], written[i][1], strlen(written[i][1]), NULL,
				   &st)) < 0)
			return rc;
		note(idx, "w %llu %lld %s\n", (unsigned long long)st.st_ino, ns_of(&st.st_ctim),
		     written[i][0]);
	}
	/* the mount table as programs expect to find it (df, mount) */
	if (symlinkat("../proc/self/mounts", dfd, "mtab") < 0 ||
	    fstatat(dfd, "mtab", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	note(idx, "w %llu %lld mtab\n", (unsigned long long)st.st_ino, ns_of(&st.st_ctim));
	if (resolv) {
		if ((hfd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
		rc = take_entry(e, hfd, dfd, "resolv.conf", 'h', idx, newest);
		close(hfd);
		if (rc < 0)
			return rc;
	}
	if ((sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(sfd, &st) < 0 || !(dir = fdopendir(sfd))) {
		rc = -errno;
		close(sfd);
		return rc;
	}
	note(idx, "s %llu %lld %lld\n", (unsigned long long)st.st_ino, ns_of(&st.st_mtim),
	     ns_of(&st.st_ctim));
	if (ns_of(&st.st_mtim) > *newest)
		*newest = ns_of(&st.st_mtim);
	while (!rc && (d = readdir(dir)))
		if (strcmp(d->d_name, "resolv.conf") && !strchr(d->d_name, '\n') &&
		    keep_name(d->d_name))
			rc = take_entry(e, sfd, dfd, d->d_name, 's', idx, newest);
	closedir(dir);
	return rc;
}

/* Removes dir and what it holds (files, links, empty directories: what
 * fill makes). */
static void remove_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *d;
	DIR *dir;

	if (fd < 0)
		return;
	if (!(dir = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((d = readdir(dir)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
		    unlinkat(fd, d->d_name, 0) < 0 && errno == EISDIR)
			unlinkat(fd, d->d_name, AT_REMOVEDIR);
	closedir(dir);
	rmdir(path);
}

static int same(const struct stat *st, unsigned long long ino, long long size,
		long long mtime, long long ctime)
{
	return st->st_ino == ino && (size < 0 || st->st_size == size) &&
	       (mtime < 0 || ns_of(&st->st_mtim) == mtime) && ns_of(&st->st_ctim) == ctime;
}

/* The index's lines: a letter, numbers, a name last (see note()). */
static int field(char **p, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(*p, &end, 10);
	if (end == *p || *end != ' ' || errno)
		return 0;
	*p = end + 1;
	return 1;
}

static int fields(char **p, long long *v, int n)
{
	for (int i = 0; i < n; i++)
		if (!field(p, &v[i]))
			return 0;
	return 1;
}

static int lstat_same(int dfd, const char *name, long long ino, long long size, long long mt,
		      long long ct)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       same(&st, (unsigned long long)ino, size, mt, ct);
}

/* One line of the index holds for what is there now (a 'b' line adds
 * its bind to e). */
static int line_holds(struct sbx_etc *e, char *l, int kfd, int sfd, int hfd)
{
	long long v[7];
	struct stat st;
	char kind = l[0], host, *p = l + 2;

	if (l[0] == '\0' || l[1] != ' ')
		return 0;
	if (kind == 's')
		return field(&p, &v[0]) && field(&p, &v[1]) && *p && fstat(sfd, &st) == 0 &&
		       same(&st, (unsigned long long)v[0], -1, v[1], strtoll(p, NULL, 10));
	if (kind == 'w')
		return fields(&p, v, 2) && lstat_same(kfd, p, v[0], -1, -1, v[1]);
	host = p[0];
	if ((host != 'h' && host != 's') || p[1] != ' ')
		return 0;
	p += 2;
	if (kind == 'c')
		return fields(&p, v, 6) &&
		       lstat_same(host == 'h' ? hfd : sfd, p, v[0], v[1], v[2], v[3]) &&
		       lstat_same(kfd, p, v[4], -1, -1, v[5]);
	if (kind == 'b' && (p[0] == 'd' || p[0] == 'f') && p[1] == ' ')
		return add_bind(e, p[0] == 'd' ? (host == 'h' ? 'D' : 'd') :
				(host == 'h' ? 'F' : 'f'), p + 2) == 0;
	return 0;
}

/* 1 when the kept directory still is what its index says (and e holds
 * its binds), 0 when it is not, or there is none. */
static int still_fresh(struct sbx_etc *e, const char *kept, const char *index,
		       const char *src, int resolv)
{
	char buf[16384], want[32], *l, *nl;
	int fd, kfd = -1, sfd = -1, hfd = -1, ok = 0;
	ssize_t n;

	if ((fd = open(index, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	snprintf(want, sizeof want, INDEX_MAGIC " %d\n", resolv);
	/* the whole index, as written: its magic first, "end" last */
	if (n <= 0 || n == (ssize_t)sizeof buf - 1)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, want, strlen(want)) || n < 4 || strcmp(buf + n - 4, "end\n"))
		return 0;
	kfd = open(kept, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	sfd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	hfd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	e->binds_len = 0;
	e->binds[0] = '\0';
	if (kfd >= 0 && sfd >= 0 && hfd >= 0) {
		ok = 1;
		for (l = buf + strlen(want); ok && (nl = strchr(l, '\n')); l = nl + 1) {
			*nl = '\0';
			if (!strcmp(l, "end"))
				break;
			ok = line_holds(e, l, kfd, sfd, hfd);
		}
	}
	if (kfd >= 0)
		close(kfd);
	if (sfd >= 0)
		close(sfd);
	if (hfd >= 0)
		close(hfd);
	return ok;
}

/* Makes the directory at path (gone first if there) and, with index,
 * its index. */
static int make(struct sbx_etc *e, const char *path, const char *index, const char *src,
		int resolv)
{
	char tmp[PATH_MAX + 8];
	struct timespec now;
	long long newest = 0;
	FILE *idx = NULL;
	int dfd, rc;

	e->binds_len = 0;
	e->binds[0] = '\0';
	if (index) {
		snprintf(tmp, sizeof tmp, "%s.new", index);
		unlink(index);
		if (!(idx = fopen(tmp, "we")))
			return -errno;
		fprintf(idx, INDEX_MAGIC " %d\n", resolv);
	}
	remove_dir(path);
	if (mkdir(path, 0755) < 0 || chmod(path, 0755) < 0) {
		rc = -errno;
		goto out;
	}
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		rc = -errno;
		goto out;
	}
	rc = fill(e, dfd, src, resolv, idx, &newest);
	close(dfd);
	clock_gettime(CLOCK_REALTIME, &now);
	if (!idx)
		return rc;
	fputs("end\n", idx);
	if (fclose(idx) == EOF && !rc)
		rc = -EIO;
	idx = NULL;
	/* settled sources only: see the top of this file */
	if (!rc && newest < ns_of(&now) - SETTLE_NS && rename(tmp, index) < 0)
		rc = -errno;
	unlink(tmp);
out:
	if (idx) {
		fclose(idx);
		unlink(tmp);
	}
	return rc;
}

int sbx_etc_keep(struct sbx_etc *e, const char *dir, const char *name, const char *src,
		 int resolv)
{
	char index[PATH_MAX + 16];
	int rc;

	e->tree = -1;
	e->dir[0] = '\0';
	e->binds_len = 0;
	e->binds[0] = '\0';
	e->reused = 0;
	if (snprintf(e->kept, sizeof e->kept, "%s/%s", dir, name) >= (int)sizeof e->kept)
		return -ENAMETOOLONG;
	snprintf(index, sizeof index, "%s.index", e->kept);
	if (still_fresh(e, e->kept, index, src, resolv))
		e->reused = 1;
	else if ((rc = make(e, e->kept, index, src, resolv)) < 0)
		goto fail;
	/* a root handler is about to become its slot's uid, which may not
	 * reach the runtime directory: the tree is cloned now and attached
	 * in the run's namespace (sbx_etc_attach) */
	if (geteuid() == 0) {
		e->tree = (int)syscall(__NR_open_tree, AT_FDCWD, e->kept,
				       OPEN_TREE_CLONE | O_CLOEXEC);
		if (e->tree < 0) {
			rc = -errno;
			goto fail;
		}
	}
	return 0;
fail:
	e->kept[0] = '\0';
	return rc;
}

int sbx_etc_attach(struct sbx_etc *e, const char *at)
{
	int rc = 0;

	if (e->tree < 0 && !e->kept[0])
		return -ENOENT;
	if (mkdir(at, 0755) < 0)
		return -errno;
	if (e->tree >= 0) {
		if (syscall(__NR_move_mount, e->tree, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			rc = -errno;
		close(e->tree);
		e->tree = -1;
	} else if (mount(e->kept, at, NULL, MS_BIND, NULL) < 0) {
		rc = -errno;
	}
	if (!rc)
		snprintf(e->dir, sizeof e->dir, "%s", at);
	return rc;
}

int sbx_etc_make(struct sbx_etc *e, const char *at, const char *src, int resolv)
{
	int rc;

	e->tree = -1;
	e->kept[0] = '\0';
	e->reused = 0;
	if ((rc = make(e, at, NULL, src, resolv)) < 0)
		return rc;
	snprintf(e->dir, sizeof e->dir, "%s", at);
	return 0;
}

void sbx_etc_release(struct sbx_etc *e)
{
	if (e->tree >= 0)
		close(e->tree);
	e->tree = -1;
}
