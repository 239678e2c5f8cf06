/* Environments: read-only system trees a block may get instead of the
 * host's (SPEC §0, "environments"). One is a directory ENVS/NAME holding
 * manifest.json and root/, root/ holding usr, the lib and bin entries
 * and etc as a Debian root has them. What this file does with one:
 *
 * - sbx_env_open: the cheap checks every request makes. The directory,
 *   every directory above it, root/, each of its top-level entries and
 *   the manifest belong to root and nobody else may write them, and the
 *   directories are searchable by all (the blocks' users reach them) (a
 *   sticky directory, as /tmp, may be above: nobody but root can rename
 *   what root owns there); and the identity of all of these (device,
 *   inode, change time), which changes when any of them is replaced,
 *   moved or has its owner or mode changed: the key a verification is
 *   kept under.
 * - sbx_env_walk: the full check, every entry of the trees a block is
 *   given (the top-level entries of sbx_sys_dirs and etc), in name
 *   order, each fed to a sink as a record of its type, mode, owner,
 *   path and content (a file's bytes, a link's target): the caller
 *   hashes the stream into the tree's digest. An entry that is not
 *   root's, that others may write, or that is no directory, regular
 *   file or symbolic link ends the walk.
 * - sbx_env_has_program: whether a program name resolves in the tree
 *   the way a block's PATH would resolve it, links followed inside the
 *   tree only.
 *
 * Library code: -errno, and a reason in `why`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/internal.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* The top-level entries a block is given, in the digest's order. */
static const char *const top_entries[] = {
	"bin", "etc", "lib", "lib32", "lib64", "libx32", "sbin", "usr", NULL
};

/* How deep a tree may nest: far beyond Debian's deepest (about 20). */
#define WALK_MAX_DEPTH 64

__attribute__((format(printf, 3, 4)))
static int why_fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -EPERM;
}

int sbx_env_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > SBX_ENV_NAME_MAX ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* Only root may change it: root's, and nobody else may write it (a
 * sticky directory may be writable by all: only the owner of an entry
 * may rename or remove it there). A directory must also be searchable
 * by others: the blocks reach the tree as users of their own. */
static int root_only(const struct stat *st, int sticky_ok)
{
	if (st->st_uid != 0 || (S_ISDIR(st->st_mode) && !(st->st_mode & S_IXOTH)))
		return 0;
	if (!(st->st_mode & 022))
		return 1;
	return sticky_ok && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
}

static void key_add(struct sbx_env *e, const char *tag, const struct stat *st)
{
	size_t n = strlen(e->key);

	snprintf(e->key + n, sizeof e->key - n, "%s:%llx:%llx:%lld.%09ld:%llx:%o;", tag,
		 (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
		 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
		 (unsigned long long)st->st_size, (unsigned)st->st_mode);
}

/* Every directory above the real path `real` is root's alone (a
 * writable one could swap the tree). */
static int check_above(const char *path, char *why, size_t whylen)
{
	char real[PATH_MAX], *slash;
	struct stat st;

	snprintf(real, sizeof real, "%s", path);
	for (slash = real + strlen(real); slash > real; ) {
		while (slash > real && *--slash != '/')
			;
		*slash = '\0';
		if (stat(*real ? real : "/", &st) < 0)
			return why_fail(why, whylen, "%s: %s", *real ? real : "/", strerror(errno));
		if (!root_only(&st, 1))
			return why_fail(why, whylen, "%s, above the environment, is not root's alone "
					"and searchable by all (owner %u, mode %o)", *real ? real : "/",
					(unsigned)st.st_uid, (unsigned)st.st_mode & 07777);
		if (slash == real)
			break;
		*slash = '/';
	}
	return 0;
}

int sbx_env_open(const char *envs, const char *name, struct sbx_env *ret, char *why,
		 size_t whylen)
{
	char dir[PATH_MAX + 128], real[PATH_MAX];
	struct stat st;
	int rc;

	memset(ret, 0, sizeof *ret);
	if (!sbx_env_name_ok(name))
		return why_fail(why, whylen, "\"%s\" is no environment name", name);
	if ((size_t)snprintf(dir, sizeof dir, "%s/%s", envs, name) >= sizeof dir)
		return why_fail(why, whylen, "%s/%s: the path is too long", envs, name);
	if (!realpath(dir, real)) {
		int err = errno;

		why_fail(why, whylen, "%s: %s", dir, strerror(err));
		return -err;
	}
	if ((rc = check_above(real, why, whylen)) < 0)
		return rc;
	snprintf(ret->dir, sizeof ret->dir, "%s", real);
	snprintf(ret->root, sizeof ret->root, "%s/root", real);
	snprintf(ret->manifest, sizeof ret->manifest, "%s/manifest.json", real);
	if (lstat(ret->dir, &st) < 0 || !S_ISDIR(st.st_mode) || !root_only(&st, 0))
		return why_fail(why, whylen, "%s is not a directory of root's alone, searchable "
				"by all", ret->dir);
	if (lstat(ret->manifest, &st) < 0) {
		int err = errno;

		why_fail(why, whylen, "%s: %s", ret->manifest, strerror(err));
		return -err;
	}
	if (!S_ISREG(st.st_mode) || !root_only(&st, 0))
		return why_fail(why, whylen, "%s is not a file of root's alone (owner %u, mode %o)",
				ret->manifest, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777);
	key_add(ret, "manifest", &st);
	if (lstat(ret->root, &st) < 0 || !S_ISDIR(st.st_mode) || !root_only(&st, 0))
		return why_fail(why, whylen, "%s is not a directory of root's alone, searchable "
				"by all", ret->root);
	key_add(ret, "root", &st);
	for (const char *const *t = top_entries; *t; t++) {
		char p[PATH_MAX + 160];

		snprintf(p, sizeof p, "%s/%s", ret->root, *t);
		if (lstat(p, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return why_fail(why, whylen, "%s: %s", p, strerror(errno));
		}
		if (!S_ISLNK(st.st_mode) && (!S_ISDIR(st.st_mode) || !root_only(&st, 0)))
			return why_fail(why, whylen, "%s is not a directory (or link) of root's "
					"alone (owner %u, mode %o)", p, (unsigned)st.st_uid,
					(unsigned)st.st_mode & 07777);
		key_add(ret, *t, &st);
	}
	return 0;
}

/* ---- the full walk -------------------------------------------------------- */

struct walk {
	sbx_env_sink sink;
	void *ctx;
	char *why;
	size_t whylen;
	char path[PATH_MAX];
	char buf[65536];
};

static void put(struct walk *w, const void *p, size_t n)
{
	w->sink(w->ctx, p, n);
}

/* type, mode, owner, group and path, each ended by a NUL: a path holds
 * no NUL, so the stream reads back one way only */
static void put_head(struct walk *w, char type, const struct stat *st)
{
	char h[64];
	int n = snprintf(h, sizeof h, "%c%o%c%u%c%u%c", type, (unsigned)st->st_mode & 07777, 0,
			 (unsigned)st->st_uid, 0, (unsigned)st->st_gid, 0);

	put(w, h, (size_t)n);
	put(w, w->path, strlen(w->path) + 1);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dirfd but . and .., sorted bytewise (malloc'd, NULL-ended). */
static char **dir_names(int dirfd, size_t *ret_n)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	char **v = NULL;
	size_t n = 0, cap = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n + 1 >= cap) {
			char **nv = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof *v);

			if (!nv)
				goto oom;
			v = nv;
		}
		if (!(v[n] = strdup(e->d_name)))
			goto oom;
		n++;
	}
	closedir(d);
	if (!v && !(v = calloc(1, sizeof *v)))
		return NULL;
	v[n] = NULL;
	qsort(v, n, sizeof *v, by_name);
	*ret_n = n;
	return v;
oom:
	closedir(d);
	while (n)
		free(v[--n]);
	free(v);
	return NULL;
}

static int walk_file(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
	char sz[32];
	unsigned long long left = (unsigned long long)st->st_size;
	struct stat now;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return why_fail(w->why, w->whylen, "%s: %s", w->path, strerror(errno));
	if (fstat(fd, &now) < 0 || now.st_ino != st->st_ino || now.st_dev != st->st_dev) {
		close(fd);
		return why_fail(w->why, w->whylen, "%s changed while it was read", w->path);
	}
	put_head(w, 'f', st);
	put(w, sz, (size_t)snprintf(sz, sizeof sz, "%llu", left) + 1);
	while (left) {
		ssize_t r = read(fd, w->buf, left < sizeof w->buf ? (size_t)left : sizeof w->buf);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			close(fd);
			return why_fail(w->why, w->whylen, "%s: %s", w->path,
					r < 0 ? strerror(errno) : "shorter than its size");
		}
		put(w, w->buf, (size_t)r);
		left -= (unsigned long long)r;
	}
	close(fd);
	return 0;
}

static int walk_dir(struct walk *w, int dirfd, int depth);

/* One entry, name in dirfd, whose path is w->path. */
static int walk_entry(struct walk *w, int dirfd, const char *name, int depth)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return why_fail(w->why, w->whylen, "%s: %s", w->path, strerror(errno));
	if (st.st_uid != 0)
		return why_fail(w->why, w->whylen, "%s is not root's (owner %u)", w->path,
				(unsigned)st.st_uid);
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dirfd, name, target, sizeof target - 1);
		if (n < 0)
			return why_fail(w->why, w->whylen, "%s: %s", w->path, strerror(errno));
		put_head(w, 'l', &st);
		put(w, target, (size_t)n);
		put(w, "", 1);
		return 0;
	}
	if (st.st_mode & 022)
		return why_fail(w->why, w->whylen, "%s may be written by others than root "
				"(mode %o)", w->path, (unsigned)st.st_mode & 07777);
	/* the blocks read the tree as users of their own, and so does a
	 * handler that is not root: nothing in it is secret */
	if (!(st.st_mode & S_IROTH) || (S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)))
		return why_fail(w->why, w->whylen, "%s is not readable by all (mode %o)", w->path,
				(unsigned)st.st_mode & 07777);
	if (S_ISREG(st.st_mode))
		return walk_file(w, dirfd, name, &st);
	if (!S_ISDIR(st.st_mode))
		return why_fail(w->why, w->whylen, "%s is no directory, regular file or link",
				w->path);
	if (depth >= WALK_MAX_DEPTH)
		return why_fail(w->why, w->whylen, "%s nests deeper than %d", w->path,
				WALK_MAX_DEPTH);
	put_head(w, 'd', &st);
	{
		int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int rc;

		if (sub < 0)
			return why_fail(w->why, w->whylen, "%s: %s", w->path, strerror(errno));
		rc = walk_dir(w, sub, depth + 1);
		close(sub);
		return rc;
	}
}

static int walk_dir(struct walk *w, int dirfd, int depth)
{
	size_t len = strlen(w->path), n = 0;
	char **names = dir_names(dirfd, &n);
	int rc = 0;

	if (!names)
		return why_fail(w->why, w->whylen, "%s: cannot be listed", w->path), -ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((size_t)snprintf(w->path + len, sizeof w->path - len, "/%s", names[i]) >=
		    sizeof w->path - len)
			rc = why_fail(w->why, w->whylen, "a path under %.*s is too long",
				      (int)len, w->path);
		else
			rc = walk_entry(w, dirfd, names[i], depth);
		w->path[len] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int sbx_env_walk(const char *root, sbx_env_sink sink, void *ctx, char *why, size_t whylen)
{
	struct walk *w = calloc(1, sizeof *w);
	int fd, rc = 0;

	if (!w)
		return -ENOMEM;
	w->sink = sink;
	w->ctx = ctx;
	w->why = why;
	w->whylen = whylen;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = why_fail(why, whylen, "%s: %s", root, strerror(errno));
		free(w);
		return rc;
	}
	for (const char *const *t = top_entries; *t && rc == 0; t++) {
		if (faccessat(fd, *t, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(w->path, sizeof w->path, "%s", *t);
		rc = walk_entry(w, fd, *t, 0);
	}
	close(fd);
	free(w);
	return rc;
}

/* ---- programs ------------------------------------------------------------- */

int sbx_env_has_program(const char *root, const char *name)
{
	static const char *const path[] = { "usr/local/bin", "usr/bin", "bin", NULL };
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT |
				RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	int rfd, found = 0;

	if (!*name || strchr(name, '/'))
		return 0;
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	for (const char *const *d = path; *d && !found; d++) {
		char p[PATH_MAX];
		struct stat st;
		long fd;

		snprintf(p, sizeof p, "%s/%s", *d, name);
		fd = syscall(SYS_openat2, rfd, p, &how, sizeof how);
		if (fd < 0)
			continue;
		found = fstat((int)fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
		close((int)fd);
	}
	close(rfd);
	return found;
}
