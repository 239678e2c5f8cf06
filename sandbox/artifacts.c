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
/* How deep under out/ the walk goes, and how many entries it looks at:
 * what a run can make the handler hold stays bounded. */
#define MAX_DEPTH 16
#define MAX_SEEN 100000

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

struct entry {
	char *path;		/* under out/ */
	struct stat st;		/* lstat from its directory's descriptor */
};

struct walk {
	struct entry *v;
	size_t n, cap;
	size_t seen;
	int oom;
};

static void add_entry(struct walk *w, const char *path, const struct stat *st)
{
	struct entry *v;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;

		if (!(v = realloc(w->v, cap * sizeof *v))) {
			w->oom = 1;
			return;
		}
		w->v = v;
		w->cap = cap;
	}
	if (!(w->v[w->n].path = strdup(path))) {
		w->oom = 1;
		return;
	}
	w->v[w->n++].st = *st;
}

/* Every entry under dirfd but directories, depth first; a directory is
 * entered only through open_beneath (its descriptor, never a path). */
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
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		w->seen++;
		if ((size_t)snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "",
				     e->d_name) >= sizeof path)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = depth < MAX_DEPTH ?
				  open_beneath(dirfd, e->d_name, O_RDONLY | O_DIRECTORY) : -1;

			if (sub >= 0) {
				walk_dir(w, sub, path, depth + 1);
				close(sub);
			}
			continue;
		}
		add_entry(w, path, &st);
	}
	closedir(d);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
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

int sbx_run_artifacts(const struct sbx_run *run, size_t max_count, size_t max_bytes,
		      struct sbx_artifacts *ret)
{
	struct walk w = {0};
	size_t room = max_bytes, listed;
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
	walk_dir(&w, outfd, "", 0);
	if (w.oom)
		goto oom;
	if (w.n)
		qsort(w.v, w.n, sizeof *w.v, by_path);
	listed = w.n < SBX_ARTIFACTS_LISTED ? w.n : SBX_ARTIFACTS_LISTED;
	if (listed && !(ret->v = calloc(listed, sizeof *ret->v)))
		goto oom;
	for (size_t i = 0; i < listed; i++) {
		struct sbx_artifact *a = &ret->v[i];

		if (!(a->name = malloc(strlen(w.v[i].path) + sizeof SBX_OUT_DIR + 1)))
			goto oom;
		sprintf(a->name, SBX_OUT_DIR "/%s", w.v[i].path);
		a->bytes = S_ISREG(w.v[i].st.st_mode) ? (uint64_t)w.v[i].st.st_size : 0;
		ret->n = i + 1;
		if (i >= max_count) {
			a->omitted = "over --max-artifacts";
			continue;
		}
		a->omitted = read_entry(outfd, &w.v[i], &room, &a->data, &a->len);
		if (a->data)
			a->bytes = a->len;
	}
	ret->truncated = w.n - listed + (w.seen >= MAX_SEEN);
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i].path);
	free(w.v);
	close(outfd);
	return 0;
oom:
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i].path);
	free(w.v);
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
