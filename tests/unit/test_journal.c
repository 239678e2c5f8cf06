/* Unit tests for handler/journal.c: the journal's native protocol,
 * received on a datagram socket of the test's own. A small record is
 * one datagram; a value with a newline takes the length-prefixed form;
 * a record too large for a datagram arrives as a sealed memfd. */
#include "handler/journal.h"
#include "tests/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[] = "/tmp/codellm-journal-XXXXXX";
static char path[128];

/* One message from the socket: its bytes, or those of the memfd it
 * carries (*sealed says whether the memfd could no longer change). */
static char *receive(int sock, size_t *len, int *memfd, int *sealed)
{
	static char buf[1 << 16];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
			     .msg_controllen = sizeof ctl };
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	char *out;

	*memfd = *sealed = 0;
	if (n < 0)
		return NULL;
	if (c && c->cmsg_type == SCM_RIGHTS) {
		int fd, seals;
		off_t size;

		memcpy(&fd, CMSG_DATA(c), sizeof fd);
		*memfd = 1;
		seals = fcntl(fd, F_GET_SEALS);
		*sealed = seals >= 0 && (seals & F_SEAL_WRITE) && (seals & F_SEAL_SEAL);
		size = lseek(fd, 0, SEEK_END);
		out = malloc((size_t)size + 1);
		if (!out || pread(fd, out, (size_t)size, 0) != size)
			abort();
		close(fd);
		*len = (size_t)size;
		return out;
	}
	out = malloc((size_t)n + 1);
	if (!out)
		abort();
	memcpy(out, buf, (size_t)n);
	*len = (size_t)n;
	return out;
}

#define F(s) { (char[]){ s }, sizeof(s) - 1 }

int main(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock, memfd, sealed, rc;
	size_t len;
	char *got;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof path, "%s/socket", dir);
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof sa) < 0)
		abort();

	{
		struct iovec f[] = { F("MESSAGE=hello"), F("SYSLOG_IDENTIFIER=codellm"),
				     F("CODELLM_X=a=b") };

		rc = journal_send_to(path, f, 3);
		got = receive(sock, &len, &memfd, &sealed);
		tap_ok(rc == 0 && got && !memfd && len == 54 &&
		       !memcmp(got, "MESSAGE=hello\nSYSLOG_IDENTIFIER=codellm\nCODELLM_X=a=b\n", 54),
		       "plain fields: NAME=value lines in one datagram");
		free(got);
	}
	{
		struct iovec f[] = { F("CODELLM_WRITE_PATHS=a.md\nb c.md") };
		static const char want[] = "CODELLM_WRITE_PATHS\n\x0b\0\0\0\0\0\0\0a.md\nb c.md\n";

		rc = journal_send_to(path, f, 1);
		got = receive(sock, &len, &memfd, &sealed);
		tap_ok(rc == 0 && got && len == sizeof want - 1 && !memcmp(got, want, len),
		       "a value with a newline: NAME, newline, 64-bit LE length, value");
		free(got);
	}
	{
		size_t big = 4 << 20;
		char *v = malloc(big + 8);
		struct iovec f[1];

		if (!v)
			abort();
		memcpy(v, "MESSAGE=", 8);
		memset(v + 8, 'x', big);
		f[0].iov_base = v;
		f[0].iov_len = big + 8;
		rc = journal_send_to(path, f, 1);
		got = receive(sock, &len, &memfd, &sealed);
		tap_ok(rc == 0 && got && memfd && sealed && len == big + 9 &&
		       !memcmp(got, v, big + 8) && got[big + 8] == '\n',
		       "a 4 MiB record: passed as a sealed memfd (rc %d, memfd %d, sealed %d)",
		       rc, memfd, sealed);
		free(got);
		free(v);
	}
	{
		struct iovec f[] = { F("MESSAGE=x") };

		rc = journal_send_to("/nonexistent/codellm/socket", f, 1);
		tap_ok(rc == -ENOENT, "no journal listening: -ENOENT (%d)", rc);
	}
	close(sock);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
