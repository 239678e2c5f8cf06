/* The run's directory and its removal. Cleanup never follows a link:
 * code can plant symlinks, hardlinks, FIFOs, chmod 000 directories or
 * nest directories thousands deep (THREATS.md #7), and the handler may
 * run as root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/internal.h"

/* Directories nested deeper than this are moved up to the top and
 * removed in a later pass, so neither the stack nor the fd table grows
 * with the attacker's nesting. */
#define RM_MAX_DEPTH 32

int sbx_rundir_create(struct sbx_rundir *d, const char *parent)
{
	int fd;

	memset(d, 0, sizeof *d);
	d->root_fd = -1;
	if ((size_t)snprintf(d->root, sizeof d->root, "%s/codellm.XXXXXX",
			     parent) >= sizeof d->root)
		return -ENAMETOOLONG;
	if (!mkdtemp(d->root))
		return -errno;
	fd = open(d->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	d->root_fd = fd;
	snprintf(d->work, sizeof d->work, "%s/work", d->root);
	snprintf(d->tmp, sizeof d->tmp, "%s/tmp", d->root);
	snprintf(d->code, sizeof d->code, "%s/code", d->root);
	snprintf(d->roots, sizeof d->roots, "%s/roots", d->root);
	snprintf(d->masks, sizeof d->masks, "%s/masks", d->root);
	if (mkdirat(fd, "work", 0700) < 0 || mkdirat(fd, "code", 0700) < 0 ||
	    mkdirat(fd, "roots", 0755) < 0 || mkdirat(fd, "masks", 0755) < 0 ||
	    mkdirat(fd, "tmp", 0700) < 0 || fchmodat(fd, "tmp", 01777, 0) < 0)
		goto fail;
	return 0;
fail:
	{
		int e = errno;

		sbx_rundir_remove(d);
		return -e;
	}
}

int sbx_write_file(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode)
{
	int rc, fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if ((rc = sbx_write_all(fd, data, len)) < 0) {
		close(fd);
		return rc;
	}
	if (fchmod(fd, mode) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* Opens a subdirectory for cleaning, making it readable first when the
 * code took its permissions away. The chmod goes through the O_PATH fd's
 * /proc link, so it reaches exactly the inode that was opened without
 * following links. */
static int open_subdir(int dirfd, const char *name)
{
	char proc[64];
	int fd, pfd;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 || errno != EACCES)
		return fd;
	pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
	if (chmod(proc, 0700) < 0) {
		close(pfd);
		return -1;
	}
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	return fd;
}

static int rm_at(int topfd, int dirfd, int depth, unsigned *hoisted,
		 int *again)
{
	DIR *dir;
	struct dirent *e;
	int fd = dup(dirfd), rc = 0;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	/* the dup shares its offset with dirfd: without the rewind, the
	 * next pass over the top directory (for what was hoisted) would
	 * start at the end of the previous one and see nothing */
	rewinddir(dir);
	/* a directory whose write bit was taken cannot lose its entries */
	fchmod(dirfd, 0700);
	while ((e = readdir(dir))) {
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(dirfd, e->d_name, 0) < 0 && errno != ENOENT)
				rc = -errno;
			continue;
		}
		if (depth >= RM_MAX_DEPTH) {
			char name[32];
			int r;

			do {
				snprintf(name, sizeof name, ".rm%u", (*hoisted)++);
				r = sbx_renameat2(dirfd, e->d_name, topfd, name,
						  RENAME_NOREPLACE);
			} while (r < 0 && errno == EEXIST);
			if (r < 0)
				rc = -errno;
			else
				*again = 1;
			continue;
		}
		sub = open_subdir(dirfd, e->d_name);
		if (sub < 0) {
			rc = -errno;
			continue;
		}
		int r = rm_at(topfd, sub, depth + 1, hoisted, again);

		close(sub);
		if (r < 0)
			rc = r;
		if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0 &&
		    errno != ENOENT && errno != ENOTEMPTY)
			rc = -errno;
	}
	closedir(dir);
	return rc;
}

int sbx_remove_tree_at(int dirfd)
{
	unsigned hoisted = 0;
	int rc, again;

	/* Each pass empties everything within RM_MAX_DEPTH and hoists what
	 * lies deeper to the top; the number of passes grows with depth /
	 * RM_MAX_DEPTH. Nothing is running any more, so the tree only
	 * shrinks. */
	do {
		again = 0;
		rc = rm_at(dirfd, dirfd, 0, &hoisted, &again);
	} while (again);
	return rc;
}

int sbx_rundir_remove(struct sbx_rundir *d)
{
	int rc = 0;

	if (!d->root[0])
		return 0;
	if (d->root_fd < 0)
		d->root_fd = open(d->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->root_fd >= 0) {
		rc = sbx_remove_tree_at(d->root_fd);
		close(d->root_fd);
		d->root_fd = -1;
	}
	if (rmdir(d->root) < 0 && errno != ENOENT && rc == 0)
		rc = -errno;
	/* on failure the caller still needs the path to say what is left */
	if (rc == 0)
		d->root[0] = '\0';
	return rc;
}

int sbx_rundir_unmount(struct sbx_rundir *d)
{
	int rc = 0;

	if (!d->tmpfs)
		return sbx_rundir_remove(d);
	if (d->root_fd >= 0) {
		close(d->root_fd);
		d->root_fd = -1;
	}
	if (umount2(d->data, MNT_DETACH) < 0)
		rc = -errno;
	if (umount2(d->root, MNT_DETACH) < 0 && !rc)
		rc = -errno;
	d->root[0] = '\0';
	d->tmpfs = 0;
	return rc;
}
