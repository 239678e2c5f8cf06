#include <stdlib.h>
#include <string.h>

#include "http/reader.h"

int http_read_head(struct conn *c, const struct http_limits *l, char **buf,
		   size_t *used, struct http_request *req, size_t *ret_len)
{
	size_t cap = l->max_header_bytes;

	*buf = malloc(cap + 1);
	if (!*buf)
		return HTTP_R_NOMEM;
	for (;;) {
		ssize_t r = conn_read(c, *buf + *used, cap - *used, l->header_deadline_ms);
		int n;

		if (r == CONN_TIMEOUT)
			return HTTP_R_TIMEOUT;
		if (r == CONN_SIGNAL || (r == CONN_EOF && *used == 0) || r == CONN_ERROR)
			return HTTP_R_GONE;
		if (r == CONN_EOF)
			return HTTP_R_EOF;
		*used += (size_t)r;
		n = http_parse_head(*buf, *used, req);
		if (n > 0) {
			*ret_len = (size_t)n;
			return 0;
		}
		if (n == HTTP_BAD)
			return HTTP_R_BAD;
		if (n == HTTP_TOO_MANY)
			return HTTP_R_TOO_MANY;
		if (*used >= cap)
			return HTTP_R_TOO_LARGE;
	}
}

int http_check_framing(const struct http_request *req, const struct http_limits *l,
		       int is_post, struct http_framing *ret)
{
	int rc = http_framing(req, ret);

	if (rc == HTTP_FRAMING_TE_UNSUPPORTED)
		return HTTP_R_TE_UNSUPPORTED;
	if (rc < 0)
		return HTTP_R_BAD;
	if (!ret->chunked && !ret->has_length && is_post)
		return HTTP_R_LENGTH_REQUIRED;
	if (ret->has_length && ret->length > l->max_body_bytes)
		return HTTP_R_TOO_LARGE;
	return 0;
}

/* Appends p[0..n) to the body, keeping it NUL-terminated; *cap is the
 * body's allocation, doubled from 64 KiB as it grows. */
static int body_append(struct http_body *b, const struct http_limits *l,
		       const char *p, size_t n, size_t *cap)
{
	if (b->len + n > l->max_body_bytes)
		return HTTP_R_TOO_LARGE;
	if (b->len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 65536;
		char *nb;

		while (nc < b->len + n + 1)
			nc *= 2;
		nb = realloc(b->p, nc);
		if (!nb)
			return HTTP_R_NOMEM;
		b->p = nb;
		*cap = nc;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Takes the pending bytes at buf; 1 when the body is complete. */
static int body_take(struct http_body *b, const struct http_limits *l,
		     const struct http_framing *fr, struct http_chunked *dec,
		     char *buf, size_t pending, size_t *cap)
{
	ssize_t left;
	int rc;

	if (fr->has_length) {
		size_t want = (size_t)fr->length - b->len;

		if (pending > want) {
			pending = want;	/* the rest belongs to a next request */
			b->unread = 1;
		}
		if ((rc = body_append(b, l, buf, pending, cap)))
			return rc;
		return b->len == fr->length;
	}
	left = http_chunked_decode(dec, buf, &pending);
	if (left == HTTP_BAD)
		return HTTP_R_BAD;
	if ((rc = body_append(b, l, buf, pending, cap)))
		return rc;
	if (left < 0)
		return 0;
	b->unread = left > 0;
	return 1;
}

int http_read_body(struct conn *c, const struct http_limits *l, int minor_version,
		   const struct http_framing *fr, char *early, size_t early_len,
		   struct http_body *b)
{
	struct http_chunked dec = {0};
	size_t cap = 0, pending = early_len;
	char *buf = early;
	char chunk[65536];
	long deadline;
	int rc;

	if (!fr->chunked && !fr->has_length) {
		/* bytes after the request (a pipelined request, a stray CRLF)
		 * are left unread: one request per connection, then close */
		b->unread = pending > 0;
		return 0;
	}
	if (fr->expect_continue && minor_version >= 1 &&
	    !(fr->has_length && fr->length == pending)) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

		conn_write(c, cont, sizeof cont - 1, conn_now_ms() + l->write_timeout_ms);
	}
	deadline = conn_now_ms() + l->body_timeout_ms;
	if ((rc = body_append(b, l, "", 0, &cap)))
		return rc;
	for (;;) {
		ssize_t r;

		if ((rc = body_take(b, l, fr, &dec, buf, pending, &cap)))
			return rc > 0 ? 0 : rc;
		r = conn_read(c, chunk, sizeof chunk, deadline);
		if (r == CONN_TIMEOUT)
			return HTTP_R_TIMEOUT;
		if (r == CONN_EOF)
			return HTTP_R_EOF;
		if (r < 0)
			return HTTP_R_GONE;
		buf = chunk;
		pending = (size_t)r;
	}
}
