#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/slots.h"

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
		/* O_NOFOLLOW: nobody may point a slot name elsewhere */
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			rc = -errno;
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
