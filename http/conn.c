#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "http/conn.h"

long conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int terminated(struct conn *c)
{
	struct signalfd_siginfo si;

	while (c->sig_fd >= 0 && read(c->sig_fd, &si, sizeof si) == sizeof si)
		if (si.ssi_signo != SIGCHLD)
			return 1;
	return 0;
}

ssize_t conn_read(struct conn *c, void *buf, size_t n, long deadline_ms)
{
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = c->in, .events = POLLIN },
			{ .fd = c->sig_fd, .events = POLLIN },
		};
		long left = deadline_ms - conn_now_ms();
		ssize_t r;
		int pr;

		if (left <= 0)
			return CONN_TIMEOUT;
		pr = poll(pfd, 2, left > 60000 ? 60000 : (int)left);
		if (pr < 0 && errno != EINTR)
			return CONN_ERROR;
		if (pr <= 0)
			continue;
		if (pfd[1].revents && terminated(c))
			return CONN_SIGNAL;
		if (!pfd[0].revents)
			continue;
		r = read(c->in, buf, n);
		if (r > 0)
			return r;
		if (r == 0)
			return CONN_EOF;
		if (errno != EINTR && errno != EAGAIN)
			return CONN_ERROR;
	}
}

int conn_write(struct conn *c, const void *data, size_t len, long deadline_ms)
{
	const char *p = data;

	while (len > 0 && !c->gone) {
		struct pollfd pfd = { .fd = c->out, .events = POLLOUT };
		long left = deadline_ms - conn_now_ms();
		ssize_t w;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		w = send(c->out, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == ENOTSOCK)
			w = write(c->out, p, len);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w < 0)
			break;
		p += w;
		len -= (size_t)w;
	}
	if (len > 0)
		c->gone = 1;
	return len > 0 ? -1 : 0;
}

int conn_write_nb(struct conn *c, const void *data, size_t len)
{
	ssize_t w;

	if (c->gone)
		return -1;
	w = send(c->out, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && errno == ENOTSOCK)
		w = write(c->out, data, len);
	if (w < 0 && errno != EAGAIN && errno != EINTR) {
		c->gone = 1;
		return -1;
	}
	return 0;
}

void conn_identify(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[INET6_ADDRSTRLEN] = "";
	int port = 0;

	snprintf(c->peer, sizeof c->peer, "unknown");
	c->loopback = 0;
	if (getpeername(c->in, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
			port = ntohs(s4->sin_port);
			c->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
			snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			static const unsigned char v4mapped_lo[13] =
				{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127 };

			inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
			port = ntohs(s6->sin6_port);
			c->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
				      !memcmp(&s6->sin6_addr, v4mapped_lo, 13);
			snprintf(c->peer, sizeof c->peer, "[%s]:%d", host, port);
		} else if (ss.ss_family == AF_UNIX) {
			snprintf(c->peer, sizeof c->peer, "unix");
			c->loopback = 1;
		}
	}
}

/* Socket activation's protocol (sd_listen_fds(3)): LISTEN_PID names
 * this process and LISTEN_FDS counts the descriptors from 3. The
 * variables go, so no block inherits them. The count, 0 when the
 * descriptors are not this process's, -1 when malformed. */
static int listen_fds(void)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	long pid, n = 0;
	char *end;

	if (pid_s && fds) {
		errno = 0;
		pid = strtol(pid_s, &end, 10);
		if (errno || end == pid_s || *end || pid <= 0) {
			n = -1;
		} else if (pid == (long)getpid()) {
			n = strtol(fds, &end, 10);
			if (errno || end == fds || *end || n < 0 || n > 1024)
				n = -1;
		}
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return (int)n;
}

int conn_open(struct conn *c)
{
	int n = listen_fds(), devnull;

	if (n < 0 || n > 1)
		return -1;
	if (n == 1) {
		c->in = c->out = fcntl(3, F_DUPFD_CLOEXEC, 3);
		close(3);
	} else {
		struct stat st;

		/* inetd style: systemd's StandardInput=socket puts the socket
		 * on 0 and 1, systemd-socket-activate --inetd only on 0. A
		 * socket answers on itself; a pipe pair uses 0 and 1. */
		c->in = fcntl(0, F_DUPFD_CLOEXEC, 3);
		if (c->in >= 0 && fstat(c->in, &st) == 0 && S_ISSOCK(st.st_mode))
			c->out = c->in;
		else
			c->out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	}
	if (c->in < 0 || c->out < 0)
		return -1;
	/* fds 0 and 1 now point nowhere: nothing stray reaches the client,
	 * and new descriptors never land on 0-2 */
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
		return -1;
	if (fcntl(2, F_GETFD) < 0 && dup2(devnull, 2) < 0)
		return -1;
	if (devnull > 2)
		close(devnull);
	conn_identify(c);
	return 0;
}

void conn_end_answer(struct conn *c)
{
	if (c->out >= 0 && !c->ended)
		shutdown(c->out, SHUT_WR);
	c->ended = 1;
}

void conn_close_lingering(struct conn *c, int in_flight)
{
	/* the client reads the whole answer before the close */
	conn_end_answer(c);
	/* RFC 9112 §9.6: closing while request bytes are still arriving (a
	 * refused body, or a request answered before it was read) makes
	 * the kernel reset the connection, and the reset can destroy the
	 * answer before the client reads it. So read and drop until the
	 * client closes, for a short while only. */
	if (in_flight && c->head_sent && !c->gone && c->in >= 0) {
		char junk[16384];
		long until = conn_now_ms() + 2000;

		while (conn_read(c, junk, sizeof junk, until) > 0)
			;
	}
}
