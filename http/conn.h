/* The client connection: opening it (socket activation or inetd), timed
 * reads and writes (every read runs against a deadline), the lingering
 * close. Response heads are written by http/reply.c. */
#ifndef CODELLM_CONN_H
#define CODELLM_CONN_H

#include <stddef.h>
#include <sys/types.h>

struct conn {
	int in;			/* read side (the socket, or stdin under inetd) */
	int out;		/* write side (the same socket, or stdout) */
	int sig_fd;		/* signalfd: SIGTERM while reading ends the request */
	char peer[64];		/* "127.0.0.1:5555", "[::1]:5555", or "unknown" */
	int loopback;		/* the peer is a loopback address */
	int head_sent;		/* response headers are out */
	int gone;		/* a write failed: the client left */
	int ended;		/* the write side is shut (conn_end_answer) */
};

enum {
	CONN_EOF = 0,
	CONN_TIMEOUT = -1,
	CONN_ERROR = -2,
	CONN_SIGNAL = -3,
};

long conn_now_ms(void);

/* Reads up to n bytes before the absolute CLOCK_MONOTONIC deadline (ms).
 * Returns bytes read (> 0) or one of the CONN_ values. */
ssize_t conn_read(struct conn *c, void *buf, size_t n, long deadline_ms);

/* Writes everything before the deadline; -1 on failure or timeout (and
 * c->gone is set). */
int conn_write(struct conn *c, const void *data, size_t len, long deadline_ms);

/* Writes what fits right now without blocking; -1 when the client left. */
int conn_write_nb(struct conn *c, const void *data, size_t len);

/* Fills peer/loopback from getpeername (or REMOTE_ADDR/REMOTE_PORT). */
void conn_identify(struct conn *c);

/* Takes the connection systemd passed: fd 3 (LISTEN_FDS=1, Accept=yes)
 * or, inetd style, the socket on stdin (a pipe pair: stdin and stdout);
 * moves it above 2, points 0 and 1 (and a closed 2) at /dev/null and
 * identifies the peer. -1 when there is no connection. */
int conn_open(struct conn *c);

/* The answer's last byte is written: the client sees its end (FIN)
 * now, before the run's cleanup and the journal record, which the
 * client has no reason to wait for. Nothing may be written after it. */
void conn_end_answer(struct conn *c);

/* Ends the answer (shutdown for writing) and, when request bytes may
 * still be in flight (in_flight: the request was not read whole, or
 * bytes after it were left unread), reads and drops them for up to 2 s
 * once an answer went out, so the close resets nothing the client has
 * yet to read. The descriptors stay open for the process's exit. */
void conn_close_lingering(struct conn *c, int in_flight);

#endif
