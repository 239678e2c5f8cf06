#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/slots.h"

/* flock works on a read-only descriptor, so a slot file only needs to be
 * readable: created 0644 (whatever the umask), it serves handlers of any
 * user, also after one running as root made it. O_NOFOLLOW: nobody may
 * point a slot name elsewhere. */
static int slot_open(int dfd, const char *name)
{
	for (int tries = 0; tries < 4; tries++) {
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0 || errno != ENOENT)
			return fd >= 0 ? fd : -errno;
		fd = openat(dfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			fchmod(fd, 0644);
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
