#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

/* flock works on a read-only descriptor, so anyone who can open a slot
 * file can hold it: a slot file is created 0600 (whatever the umask)
 * and must belong to the service user, or any local user could lock
 * every slot and hold every request at 429. A slot left 0644 by an
 * older version is made private; one owned by another user is refused
 * (-EPERM: the directory is unusable). O_NOFOLLOW: nobody may point a
 * slot name elsewhere. */
static int slot_open(int dfd, const char *name)
{
	for (int tries = 0; tries < 4; tries++) {
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;

		if (fd >= 0) {
			if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
			    st.st_uid != geteuid() ||
			    ((st.st_mode & 077) && fchmod(fd, 0600) < 0)) {
				close(fd);
				return -EPERM;
			}
			return fd;
		}
		if (errno != ENOENT)
			return -errno;
		fd = openat(dfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			fchmod(fd, 0600);
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

int sbx_slot_take(const char *dir, unsigned n, unsigned *ret_index)
{
	int dfd, rc = -EBUSY;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof name, "slot.%u", i);
		fd = slot_open(dfd, name);
		if (fd < 0) {
			rc = fd;
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*ret_index = i;
			close(dfd);
			return fd;
		}
		if (errno != EWOULDBLOCK) {
			rc = -errno;
			close(fd);
			break;
		}
		close(fd);
	}
	close(dfd);
	return rc;
}

/* A directory of the caller's own, private: opened without following a
 * final link, owned by the euid, no permission for group or others. */
static int own_private_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (st.st_uid != geteuid() || (st.st_mode & 077))
		rc = -EPERM;
	close(fd);
	return rc;
}

int sbx_slot_dir(const char *configured, char *dir, size_t len)
{
	const char *rd = getenv("RUNTIME_DIRECTORY");
	struct stat st;
	size_t n;

	if (configured)
		n = (size_t)snprintf(dir, len, "%s", configured);
	else if (rd && *rd == '/')
		/* systemd passes one path per RuntimeDirectory=, ':'-separated */
		n = (size_t)snprintf(dir, len, "%.*s", (int)strcspn(rd, ":"), rd);
	else
		n = (size_t)snprintf(dir, len, "/run/codellm");
	if (n >= len)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (stat(dir, &st) < 0)
		return -errno;
	if (st.st_uid == geteuid())
		return 0;
	/* Not ours: a directory made for whoever runs here (a container
	 * runtime's tmpfs over the image's directory, root's, with the
	 * image's entries copied up; a Kubernetes emptyDir). The slots live
	 * in a subdirectory of this user's own: one the image holds, or one
	 * made here where this user may make entries. It must be private
	 * and its own: one that somebody else made first, or made a link,
	 * makes the directory unusable, never shared. */
	if (n + sizeof "/codellm-4294967295" > len)
		return -ENAMETOOLONG;
	snprintf(dir + n, len - n, "/codellm-%u", (unsigned)geteuid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return own_private_dir(dir);
}

long sbx_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A shared file is rewritten in place under flock: readers take a
 * shared lock, the writer an exclusive one, neither waits. Anything odd
 * about it (not ours, writable by others, not a regular file, too old,
 * from the future, malformed, locked) reads as absent. */
int sbx_shared_open(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -1;
	}
	return fd;
}

ssize_t sbx_shared_read(int fd, long max_age_ms, char *buf, size_t len, long *at)
{
	ssize_t n;
	long age;
	char *end;

	if (len < 2 || flock(fd, LOCK_SH | LOCK_NB) < 0)
		return -1;
	n = pread(fd, buf, len - 1, 0);
	flock(fd, LOCK_UN);
	if (n < 2)
		return -1;
	buf[n] = '\0';
	errno = 0;
	*at = strtol(buf, &end, 10);
	age = sbx_wall_ms() - *at;
	if (errno || end == buf || *end != '\n' || age < 0 || age >= max_age_ms)
		return -1;
	n -= end + 1 - buf;
	memmove(buf, end + 1, (size_t)n + 1);
	return n;
}

void sbx_shared_write(int fd, long at, const char *data, size_t len)
{
	char head[32];
	int n = snprintf(head, sizeof head, "%ld\n", at);

	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return;
	if (ftruncate(fd, 0) == 0 && pwrite(fd, head, (size_t)n, 0) == n)
		(void)!pwrite(fd, data, len, n);
	flock(fd, LOCK_UN);
}
