#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
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

int slot_take(const char *dir, unsigned n, unsigned *ret_index)
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
