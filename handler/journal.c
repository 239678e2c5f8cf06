/* The journal's native protocol (systemd.io/JOURNAL_NATIVE_PROTOCOL),
 * spoken directly: one datagram to /run/systemd/journal/socket holding
 * the fields, or, when it is too large for a datagram, a sealed memfd
 * passed over the socket. libsystemd is not loaded for it: mapping it
 * and its chain (libgcrypt, liblzma, libzstd, liblz4, libcap) cost
 * every connection milliseconds (codellm-handler(8), JOURNAL). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "handler/journal.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* The fields in the protocol's form: NAME=value\n, or for a value that
 * holds a newline NAME\n, its length (64-bit little endian), value, \n. */
static char *serialize(const struct iovec *iov, int n, size_t *ret_len)
{
	size_t len = 0, at = 0;
	char *buf;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len + 9;
	buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	for (int i = 0; i < n; i++) {
		const char *f = iov[i].iov_base, *eq = memchr(f, '=', iov[i].iov_len);
		size_t name, vlen;

		if (!eq)
			continue;	/* not a field */
		name = (size_t)(eq - f);
		vlen = iov[i].iov_len - name - 1;
		if (!memchr(eq + 1, '\n', vlen)) {
			memcpy(buf + at, f, iov[i].iov_len);
			at += iov[i].iov_len;
		} else {
			uint64_t le = htole64((uint64_t)vlen);

			memcpy(buf + at, f, name);
			at += name;
			buf[at++] = '\n';
			memcpy(buf + at, &le, sizeof le);
			at += sizeof le;
			memcpy(buf + at, eq + 1, vlen);
			at += vlen;
		}
		buf[at++] = '\n';
	}
	*ret_len = at;
	return buf;
}

/* Too large for one datagram: the record in a sealed memfd, passed as
 * the message's only content. */
static int send_memfd(int sock, struct sockaddr_un *sa, const char *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = {
		.msg_name = sa, .msg_namelen = sizeof *sa,
		.msg_control = &ctl, .msg_controllen = sizeof ctl,
	};
	struct cmsghdr *c;
	int fd = memfd_create("journal-record", MFD_ALLOW_SEALING | MFD_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	for (size_t at = 0; at < len && !rc;) {
		ssize_t w = write(fd, buf + at, len - at);

		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			at += (size_t)w;
	}
	if (!rc && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
			 F_SEAL_SEAL) < 0)
		rc = -errno;
	if (!rc) {
		memset(&ctl, 0, sizeof ctl);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
		if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

int journal_send_to(const char *path, const struct iovec *iov, int n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0;
	char *buf;
	int sock, rc = 0;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	buf = serialize(iov, n, &len);
	if (!buf)
		return -ENOMEM;
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		rc = -errno;
	} else if (sendto(sock, buf, len, MSG_NOSIGNAL, (const struct sockaddr *)&sa,
			  sizeof sa) < 0) {
		rc = -errno;
		if (rc == -EMSGSIZE || rc == -ENOBUFS)
			rc = send_memfd(sock, &sa, buf, len);
	}
	if (sock >= 0)
		close(sock);
	free(buf);
	return rc;
}

int journal_send(const struct iovec *iov, int n)
{
	return journal_send_to(JOURNAL_SOCKET, iov, n);
}

int journal_line(int fd, const char *line, size_t n)
{
	while (n) {
		ssize_t w = write(fd, line, n);

		if (w < 0 && errno != EINTR)
			return -errno;
		if (w > 0) {
			line += w;
			n -= (size_t)w;
		}
	}
	return 0;
}
