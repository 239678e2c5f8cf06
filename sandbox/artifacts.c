/* A run's files in and out of its workdir. In: the request's files,
 * written before any block starts (nothing of the run exists yet to
 * race with). Out: the regular files the blocks left under /work/out,
 * a directory they make themselves when they want artifacts, read by
 * the handler after every block has ended, from outside the
 * sandbox, where code had the last word on what is there (THREATS.md,
 * the supervisor reading sandbox-written files). So every name is
 * resolved with openat2 under the out directory (RESOLVE_BENEATH,
 * RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV: no
 * symlink of any component, no /proc link, no other mount), only an
 * entry that lstat says is a regular file is opened at all (a FIFO or
 * device never is), it is opened O_NONBLOCK|O_NOCTTY, and what fstat
 * then says must be the same regular file with one link (a hard link
 * could name a file the run did not create) whose size did not change
 * while it was read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/run.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define SAFE_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | \
		      RESOLVE_NO_XDEV)
static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = SAFE_RESOLVE,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);

	return fd < 0 ? -errno : (int)fd;
}

/* The open file fd to the ids the blocks run as. A handler that is
 * those ids already (its blocks map its own) may lack the right to
 * chown, and needs none. */
static int give_to_blocks(const struct sbx_run *run, int fd)
{
	if (fchown(fd, run->pol.map_uid, run->pol.map_gid) == 0 ||
	    (run->pol.map_uid == geteuid() && run->pol.map_gid == getegid()))
		return 0;
	return -errno;
}

int sbx_run_add_input(struct sbx_run *run, const char *name, const void *data,
		      size_t len)
{
	int wd, fd, rc;

	wd = open(run->dir.work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return -errno;
	fd = openat(wd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(wd);
	if (fd < 0)
		return -errno;
	/* the blocks' own file: theirs to change or remove */
	rc = sbx_write_all(fd, data, len);
	if (rc == 0)
		rc = give_to_blocks(run, fd);
	if (rc == 0 && fchmod(fd, 0644) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* ---- artifacts ---- */

/* How deep under out/ the walk goes, and how many entries it looks at:
 * what a run can make the handler hold stays bounded. A directory
 * deeper is listed itself, with DEPTH_WHY. */
#define MAX_DEPTH 16
#define DEPTH_WHY "deeper than 16 directories"
#define MAX_SEEN 100000
/* A path under out/ the walk can meet: MAX_DEPTH directories and the
 * entry in the deepest, each at most NAME_MAX bytes and a '/'. One
 * longer than PATH_MAX cannot be opened by its path: it is listed,
 * with LONG_WHY. */
#define PATH_ROOM ((MAX_DEPTH + 1) * (NAME_MAX + 1))
#define LONG_WHY "path longer than PATH_MAX"

struct entry {
	char *path;		/* under out/ */
	struct stat st;		/* lstat from its directory's descriptor */
	const char *why;	/* NULL, or why it has no data, known at the walk */
};

/* The entries to list: of those found, the SBX_ARTIFACTS_LISTED first in
 * name order, kept as a max-heap by name (v[0] the largest) while the
 * walk goes, so the walk holds that many paths whatever out/ holds. */
struct walk {
	struct entry *v;	/* SBX_ARTIFACTS_LISTED */
	size_t n;		/* held in v */
	size_t found;		/* entries found, held or not */
	size_t seen;		/* directory entries looked at */
	int oom;
};

/* Exchanges two entries of the heap. */
static void swap_entries(struct entry *a, struct entry *b)
{
	struct entry t = *a;

	*a = *b;
	*b = t;
}

/* Restores the heap below v[i] after v[i] got a smaller name. */
static void sift_down(struct entry *v, size_t n, size_t i)
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, r = l + 1;

		if (l < n && strcmp(v[l].path, v[big].path) > 0)
			big = l;
		if (r < n && strcmp(v[r].path, v[big].path) > 0)
			big = r;
		if (big == i)
			return;
		swap_entries(&v[i], &v[big]);
		i = big;
	}
}

/* Restores the heap above v[i], a new leaf. */
static void sift_up(struct entry *v, size_t i)
{
	while (i && strcmp(v[(i - 1) / 2].path, v[i].path) < 0) {
		swap_entries(&v[(i - 1) / 2], &v[i]);
		i = (i - 1) / 2;
	}
}

/* One entry found: held while there is room, else in place of the
 * largest name held when its own is smaller, else only counted. */
static void add_entry(struct walk *w, const char *path, const struct stat *st,
		      const char *why)
{
	char *p;

	w->found++;
	if (w->n == SBX_ARTIFACTS_LISTED && strcmp(path, w->v[0].path) > 0)
		return;
	if (!(p = strdup(path))) {
		w->oom = 1;
		return;
	}
	if (w->n < SBX_ARTIFACTS_LISTED) {
		w->v[w->n] = (struct entry){ p, *st, why };
		sift_up(w->v, w->n++);
		return;
	}
	free(w->v[0].path);
	w->v[0] = (struct entry){ p, *st, why };
	sift_down(w->v, w->n, 0);
}

/* Whether the directory fd holds nothing (an error counts as something). */
static int dir_empty(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	int empty = 1;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	errno = 0;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	if (errno)
		empty = 0;
	closedir(d);
	return empty;
}

static void walk_dir(struct walk *w, int dirfd, const char *prefix, int depth);

/* The directory name under dirfd, found at path: walked when it is at
 * most MAX_DEPTH deep; else listed itself (DEPTH_WHY) unless it is
 * empty, and listed as unreadable when it cannot be opened, so what it
 * holds does not vanish without a word. */
static void enter_dir(struct walk *w, int dirfd, const char *name, const char *path,
		      const struct stat *st, int depth)
{
	int sub = open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY);

	if (sub < 0) {
		add_entry(w, path, st, "unreadable");
		return;
	}
	if (depth < MAX_DEPTH)
		walk_dir(w, sub, path, depth + 1);
	else if (!dir_empty(sub))
		add_entry(w, path, st, DEPTH_WHY);
	close(sub);
}

/* Every entry under dirfd but the directories it enters, depth first; a
 * directory is entered only through open_beneath (its descriptor, never
 * a path), so a path longer than PATH_MAX is still found. */
static void walk_dir(struct walk *w, int dirfd, const char *prefix, int depth)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) && w->seen < MAX_SEEN && !w->oom) {
		char path[PATH_ROOM];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		w->seen++;
		/* never cut: prefix is at most MAX_DEPTH names */
		if ((size_t)snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "",
				     e->d_name) >= sizeof path)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			memset(&st, 0, sizeof st);
			add_entry(w, path, &st, "unreadable");
		} else if (S_ISDIR(st.st_mode)) {
			enter_dir(w, dirfd, e->d_name, path, &st, depth);
		} else {
			add_entry(w, path, &st, strlen(path) >= PATH_MAX ? LONG_WHY : NULL);
		}
	}
	closedir(d);
}

/* The content of the regular file e, when it is one and fits in *room;
 * else why not (a constant string). */
static const char *read_entry(int outfd, const struct entry *e, size_t *room,
			      char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf;
	size_t size, got = 0;
	int fd;

	*ret = NULL;
	if (S_ISLNK(e->st.st_mode))
		return "a symbolic link";
	if (!S_ISREG(e->st.st_mode))
		return "not a regular file";
	if (e->st.st_nlink != 1)
		return "a hard link (the file has more than one name)";
	if ((unsigned long long)e->st.st_size > *room)
		return "over --max-artifact-bytes";
	if ((fd = open_beneath(outfd, e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY)) < 0)
		return "unreadable";
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != e->st.st_ino ||
	    st.st_dev != e->st.st_dev || st.st_nlink != 1 || st.st_size != e->st.st_size) {
		close(fd);
		return "changed while it was read";
	}
	size = (size_t)st.st_size;
	if (!(buf = malloc(size + 1))) {
		close(fd);
		return "out of memory";
	}
	/* one byte more than fstat says: a file still growing is refused */
	while (got <= size) {
		ssize_t r = read(fd, buf + got, size + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != size) {
		free(buf);
		return "changed while it was read";
	}
	buf[size] = '\0';
	*room -= size;
	*ret = buf;
	*ret_len = size;
	return NULL;
}

/* 1 when s is well-formed UTF-8 (RFC 3629: no overlong form, no
 * surrogate, nothing past U+10FFFF): a name JSON carries as it is. */
static int utf8_name(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		unsigned char c = *u, lo = 0x80, hi = 0xBF;
		int len;

		if (c < 0x80) {
			u++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			len = 2;
		else if (c >= 0xE0 && c <= 0xEF)
			len = 3;
		else if (c >= 0xF0 && c <= 0xF4)
			len = 4;
		else
			return 0;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
		else if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
		for (int i = 1; i < len; i++, lo = 0x80, hi = 0xBF)
			if (u[i] < lo || u[i] > hi)	/* the NUL too */
				return 0;
		u += len;
	}
	return 1;
}

/* qsort's order: bytewise by path, as the answer lists them. */
static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

/* The i-th entry in name order, as the answer lists it: "out/" and its
 * path, and its data when it can carry it; else why not. A reason the
 * walk found comes first, then a name JSON cannot carry exactly (no
 * client is to write the file under a name it cannot have), then
 * --max-artifacts, then what reading it says. 0, or -ENOMEM. */
static int list_entry(int outfd, const struct entry *e, size_t i, size_t max_count,
		      size_t *room, struct sbx_artifact *a)
{
	if (!(a->name = malloc(strlen(e->path) + sizeof SBX_OUT_DIR + 1)))
		return -ENOMEM;
	sprintf(a->name, SBX_OUT_DIR "/%s", e->path);
	a->bytes = S_ISREG(e->st.st_mode) ? (uint64_t)e->st.st_size : 0;
	if (e->why)
		a->omitted = e->why;
	else if (!utf8_name(e->path))
		a->omitted = "name is not valid UTF-8";
	else if (i >= max_count)
		a->omitted = "over --max-artifacts";
	else
		a->omitted = read_entry(outfd, e, room, &a->data, &a->len);
	if (a->data)
		a->bytes = a->len;
	return 0;
}

/* Frees the held paths and the heap. */
static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].path);
	free(w->v);
}

int sbx_run_artifacts(const struct sbx_run *run, size_t max_count, size_t max_bytes,
		      struct sbx_artifacts *ret)
{
	struct walk w = {0};
	size_t room = max_bytes;
	int wd, outfd;

	memset(ret, 0, sizeof *ret);
	wd = open(run->dir.work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return -errno;
	outfd = open_beneath(wd, SBX_OUT_DIR, O_RDONLY | O_DIRECTORY);
	close(wd);
	if (outfd < 0)
		return outfd == -ENOENT || outfd == -ELOOP || outfd == -ENOTDIR ||
		       outfd == -EXDEV ? 0 : outfd;
	if (!(w.v = malloc(SBX_ARTIFACTS_LISTED * sizeof *w.v)))
		goto oom;
	walk_dir(&w, outfd, "", 0);
	if (w.oom)
		goto oom;
	if (w.n)
		qsort(w.v, w.n, sizeof *w.v, by_path);
	if (w.n && !(ret->v = calloc(w.n, sizeof *ret->v)))
		goto oom;
	for (size_t i = 0; i < w.n; i++) {
		ret->n = i + 1;
		if (list_entry(outfd, &w.v[i], i, max_count, &room, &ret->v[i]) < 0)
			goto oom;
	}
	ret->truncated = w.found - w.n + (w.seen >= MAX_SEEN);
	walk_free(&w);
	close(outfd);
	return 0;
oom:
	walk_free(&w);
	close(outfd);
	sbx_artifacts_free(ret);
	return -ENOMEM;
}

void sbx_artifacts_free(struct sbx_artifacts *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].name);
		free(a->v[i].data);
	}
	free(a->v);
	memset(a, 0, sizeof *a);
}
