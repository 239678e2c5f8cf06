/* Answering the client: the status line and the response head. Every
 * answer closes the connection after it (one request per connection). */
#ifndef CODELLM_REPLY_H
#define CODELLM_REPLY_H

#include "http/conn.h"

enum http_retry {
	HTTP_RETRY_UNSAID = 0,	/* no x-should-retry header */
	HTTP_RETRY_NO = 1,	/* x-should-retry: false (code ran, or retrying cannot help) */
	HTTP_RETRY_YES = 2,	/* x-should-retry: true (the server was short of memory) */
};

struct http_reply {
	int status;
	const char *server;		/* the Server header's value */
	const char *content_type;	/* NULL: application/json */
	const char *request_id;		/* x-request-id */
	int retry;			/* an http_retry */
	const char *extra;		/* more header lines, each ending in CRLF, or NULL */
	long content_length;		/* -1: the body runs to the close */
};

/* Writes the head (status line, Date, Server, Content-Type, Connection:
 * close, x-request-id, x-should-retry, the extra lines, Content-Length
 * when known, the blank line) before the deadline and marks c->head_sent;
 * a failed write sets c->gone (see conn_write). */
void http_reply_head(struct conn *c, const struct http_reply *r, long deadline_ms);

/* t (seconds since the epoch) as an HTTP date, "Sun, 06 Nov 1994
 * 08:49:37 GMT", without loading the time zone. */
void http_date(char *buf, size_t len, long long t);

/* Server-sent events: each line of lines (a JSON text, which never
 * holds a raw newline, or [DONE]) goes out as one event, "data: LINE"
 * and a blank line, the whole batch in as few writes as fit 16 KiB.
 * 0, or -1 as conn_write. */
int http_sse_send(struct conn *c, const char *lines, size_t len, long deadline_ms);

/* Typed server-sent events (the Responses API's): each line of lines
 * is an event's type, one space and its data (a JSON text, never a raw
 * newline), and goes out as "event: TYPE", "data: DATA" and a blank
 * line, batched as http_sse_send batches. 0, or -1 as conn_write. */
int http_sse_typed(struct conn *c, const char *lines, size_t len, long deadline_ms);

/* An SSE comment (": TEXT"), which every client ignores: a keep-alive. */
int http_sse_comment(struct conn *c, const char *text, long deadline_ms);

/* The reason phrase of a status we send, or "Unknown". */
const char *http_reason(int status);

#endif
