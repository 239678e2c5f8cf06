/* Unit tests for http/reader.c over a socketpair: each row writes its
 * bytes (then closes, or not) and reads a head, its framing and a body
 * against small limits. Results are HTTP_R_ values, never statuses. */
#include "http/reader.h"
#include "tests/tap.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define S(x) x, sizeof(x) - 1

struct row {
	const char *in;
	size_t len;
	int close_after;	/* the client closes after sending */
	int head, framing, body;	/* the step's result (later steps not run after one fails) */
	const char *want_body;
	int unread;
	const char *why;
};

static const struct row rows[] = {
	{ S("GET / HTTP/1.1\r\n\r\n"), 1, 0, 0, 0, NULL, 0, "GET, no body" },
	{ S("GET / HTTP/1.1\r\n\r\nGET"), 1, 0, 0, 0, NULL, 1, "pipelined bytes left unread" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), 1, 0, 0, 0, "abc", 0, "Content-Length" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabc"), 1, 0, 0, 0, "ab", 1, "extra byte unread" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 1, 0, 0, 0, "", 0, "empty body" },
	{ S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
	  1, 0, 0, 0, "abc", 0, "chunked" },
	{ S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n"),
	  1, 0, 0, HTTP_R_BAD, NULL, 0, "malformed chunk" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"), 1, 0, 0, HTTP_R_EOF, NULL, 0,
	  "body cut by the close" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"), 0, 0, 0, HTTP_R_TIMEOUT, NULL, 0,
	  "body too slow" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n"), 1, 0, HTTP_R_TOO_LARGE, 0, NULL, 0,
	  "Content-Length over the limit" },
	{ S("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 1, 0, 0,
	  HTTP_R_TOO_LARGE, NULL, 0, "chunked body over the limit" },
	{ S("POST / HTTP/1.1\r\n\r\n"), 1, 0, HTTP_R_LENGTH_REQUIRED, 0, NULL, 0, "POST, no length" },
	{ S("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 1, 0, HTTP_R_TE_UNSUPPORTED, 0,
	  NULL, 0, "gzip" },
	{ S("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 1, 0,
	  HTTP_R_BAD, 0, NULL, 0, "two lengths" },
	{ S("GET / HTTP/1.1\r\nHost"), 1, HTTP_R_EOF, 0, 0, NULL, 0, "head cut by the close" },
	{ S(""), 1, HTTP_R_GONE, 0, 0, NULL, 0, "no byte at all" },
	{ S("GET / HTTP/1.1\r\n"), 0, HTTP_R_TIMEOUT, 0, 0, NULL, 0, "head too slow" },
	{ S("GET /\x01 HTTP/1.1\r\n\r\n"), 1, HTTP_R_BAD, 0, 0, NULL, 0, "malformed head" },
	{ S("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n"),
	  1, HTTP_R_TOO_LARGE, 0, 0, NULL, 0, "head over the limit" },
};

static void run_row(const struct row *r)
{
	struct http_limits l = {
		.max_header_bytes = 128, .max_body_bytes = 64,
		.header_deadline_ms = conn_now_ms() + 200,
		.body_timeout_ms = 200, .write_timeout_ms = 200,
	};
	struct conn c = { .sig_fd = -1 };
	struct http_request req;
	struct http_framing fr;
	struct http_body b = {0};
	char *buf = NULL;
	size_t used = 0, len = 0;
	int sv[2], rc, ok;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	c.in = c.out = sv[0];
	if (r->len && write(sv[1], r->in, r->len) != (ssize_t)r->len)
		abort();
	if (r->close_after)
		shutdown(sv[1], SHUT_WR);
	rc = http_read_head(&c, &l, &buf, &used, &req, &len);
	ok = rc == r->head;
	if (rc == 0 && ok) {
		rc = http_check_framing(&req, &l, req.method_len == 4, &fr);
		ok = rc == r->framing;
	}
	if (rc == 0 && ok) {
		rc = http_read_body(&c, &l, req.minor_version, &fr, buf + len, used - len, &b);
		ok = rc == r->body && b.unread == r->unread &&
		     (!r->want_body ? rc != 0 || !b.p :
		      b.p && b.len == strlen(r->want_body) && !strcmp(b.p, r->want_body));
	}
	tap_ok(ok, "%s (%d)", r->why, rc);
	free(buf);
	free(b.p);
	close(sv[0]);
	close(sv[1]);
}

/* Expect: 100-continue gets its interim answer before the body is read. */
static void test_continue(void)
{
	struct http_limits l = { .max_body_bytes = 64, .body_timeout_ms = 200,
				 .write_timeout_ms = 200 };
	struct http_framing fr = { .has_length = 1, .length = 2, .expect_continue = 1 };
	struct http_body b = {0};
	struct conn c = { .sig_fd = -1 };
	char got[64] = "";
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	c.in = c.out = sv[0];
	if (write(sv[1], "hi", 2) != 2)
		abort();
	rc = http_read_body(&c, &l, 1, &fr, NULL, 0, &b);
	if (read(sv[1], got, sizeof got - 1) < 0)
		got[0] = '\0';
	tap_ok(rc == 0 && b.len == 2 && !strcmp(got, "HTTP/1.1 100 Continue\r\n\r\n"),
	       "100 Continue sent, then the body read");
	free(b.p);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		run_row(&rows[i]);
	test_continue();
	return tap_done();
}
