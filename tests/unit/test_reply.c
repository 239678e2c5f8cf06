/* Unit tests for http/reply.c over a socketpair: the response head and
 * server-sent event framing (one event per line, any line length). */
#include "http/reply.h"
#include "tests/tap.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct conn pair(int sv[2])
{
	struct conn c = { .sig_fd = -1 };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	c.in = c.out = sv[0];
	return c;
}

/* What the peer received, once the writer's end is shut. */
static char *received(int sv[2], size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;

	if (!buf)
		abort();
	shutdown(sv[0], SHUT_WR);
	while (n < cap && (r = read(sv[1], buf + n, cap - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	*len = n;
	close(sv[0]);
	close(sv[1]);
	return buf;
}

static void test_sse(const char *why, const char *lines, size_t len, const char *want,
		     size_t want_len)
{
	int sv[2];
	struct conn c = pair(sv);
	int rc = http_sse_send(&c, lines, len, conn_now_ms() + 1000);
	size_t got_len;
	char *got = received(sv, &got_len);

	tap_ok(rc == 0 && got_len == want_len && !memcmp(got, want, want_len), "%s", why);
	free(got);
}

/* A line longer than the 16 KiB batch still goes out as one event. */
static void test_long_line(void)
{
	size_t n = 40000;
	char *line = malloc(n + 1), *want = malloc(n + 8);

	if (!line || !want)
		abort();
	memset(line, 'x', n);
	line[n] = '\n';
	memcpy(want, "data: ", 6);
	memset(want + 6, 'x', n);
	memcpy(want + 6 + n, "\n\n", 2);
	test_sse("a 40000-byte line is one event", line, n + 1, want, n + 8);
	free(line);
	free(want);
}

static void test_head(void)
{
	int sv[2];
	struct conn c = pair(sv);
	const struct http_reply r = {
		.status = 415, .server = "codellm/t", .request_id = "chatcmpl-x",
		.retry = HTTP_RETRY_NO, .extra = "Allow: GET\r\n", .content_length = 7,
	};
	size_t len;
	char *got;

	http_reply_head(&c, &r, conn_now_ms() + 1000);
	got = received(sv, &len);
	tap_ok(!strncmp(got, "HTTP/1.1 415 Unsupported Media Type\r\n", 37) &&
	       strstr(got, "\r\nContent-Type: application/json\r\n") &&
	       strstr(got, "\r\nx-request-id: chatcmpl-x\r\n") &&
	       strstr(got, "\r\nx-should-retry: false\r\n") &&
	       strstr(got, "\r\nAllow: GET\r\n") &&
	       len > 23 && !strcmp(got + len - 23, "\r\nContent-Length: 7\r\n\r\n"),
	       "the head: %.60s", got);
	free(got);
}

int main(void)
{
	int sv[2];
	struct conn c;
	size_t len;
	char *got;

	test_sse("two lines, two events", "{\"a\":1}\n[DONE]\n", 15,
		 "data: {\"a\":1}\n\ndata: [DONE]\n\n", 29);
	test_sse("a last line without its newline is an event too", "{}", 2, "data: {}\n\n", 10);
	test_sse("nothing to send writes nothing", "", 0, "", 0);
	test_long_line();
	c = pair(sv);
	tap_ok(http_sse_comment(&c, "ping", conn_now_ms() + 1000) == 0, "a comment is written");
	got = received(sv, &len);
	tap_ok(len == 8 && !strcmp(got, ": ping\n\n"), "a comment is \": ping\" and a blank line");
	free(got);
	test_head();
	return tap_done();
}
