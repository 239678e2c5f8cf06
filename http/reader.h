/* Reading one request from the client against limits and deadlines:
 * the head first, its framing checked before routing, the body only
 * once the request may be served. Each step returns 0 or an HTTP_R_
 * value; nothing is answered here: the caller maps a result to its
 * status and message. */
#ifndef CODELLM_READER_H
#define CODELLM_READER_H

#include <stddef.h>
#include <stdint.h>

#include "http/conn.h"
#include "http/http.h"

struct http_limits {
	size_t max_header_bytes;	/* request line and headers */
	uint64_t max_body_bytes;	/* the body, decoded */
	long header_deadline_ms;	/* CLOCK_MONOTONIC: the head is in by then */
	long body_timeout_ms;		/* the body's time, from the start of its read */
	long write_timeout_ms;		/* for the 100 Continue line */
};

enum {
	HTTP_R_OK = 0,
	HTTP_R_GONE = -1,		/* nobody to answer: no byte came, read error, SIGTERM */
	HTTP_R_NOMEM = -2,
	HTTP_R_TIMEOUT = -3,		/* the deadline passed */
	HTTP_R_EOF = -4,		/* the connection ended inside the head or body */
	HTTP_R_BAD = -5,		/* malformed head, framing or chunked body */
	HTTP_R_TOO_MANY = -6,		/* more than HTTP_MAX_HEADERS header fields */
	HTTP_R_TOO_LARGE = -7,		/* head or body over its limit */
	HTTP_R_LENGTH_REQUIRED = -8,	/* a POST without Content-Length or chunked */
	HTTP_R_TE_UNSUPPORTED = -9,	/* a transfer coding other than chunked */
};

/* Reads the request line and headers into a buffer of max_header_bytes
 * + 1 that it allocates as *buf (the caller frees it, on failure too),
 * *used bytes of it filled, until l->header_deadline_ms. On success,
 * *req points into *buf and *ret_len is the head's length: bytes after
 * it are the body's start. */
int http_read_head(struct conn *c, const struct http_limits *l, char **buf,
		   size_t *used, struct http_request *req, size_t *ret_len);

/* How the body is framed, from the head alone (RFC 9112 §6), against
 * the body limit: HTTP_R_TE_UNSUPPORTED, HTTP_R_BAD, a POST without a
 * length HTTP_R_LENGTH_REQUIRED, a Content-Length over the limit
 * HTTP_R_TOO_LARGE (ret->length says how large). */
int http_check_framing(const struct http_request *req, const struct http_limits *l,
		       int is_post, struct http_framing *ret);

struct http_body {
	char *p;	/* NUL-terminated once a framed body is read; the caller frees it */
	size_t len;
	int unread;	/* bytes after the request were left unread */
};

/* Reads the body framed by *fr, starting with early[0..early_len) (the
 * bytes read with the head; a chunked body is decoded there in place).
 * Sends 100 Continue first when the client waits for it. An unframed
 * body is empty (p stays NULL). minor_version is the request's. */
int http_read_body(struct conn *c, const struct http_limits *l, int minor_version,
		   const struct http_framing *fr, char *early, size_t early_len,
		   struct http_body *b);

#endif
