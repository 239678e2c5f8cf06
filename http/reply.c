#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/reply.h"

void http_reply_head(struct conn *c, const struct http_reply *r, long deadline_ms)
{
	char h[1024], date[64];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	n = snprintf(h, sizeof h,
		     "HTTP/1.1 %d %s\r\n"
		     "Date: %s\r\n"
		     "Server: %s\r\n"
		     "Content-Type: %s\r\n"
		     "Connection: close\r\n"
		     "x-request-id: %s\r\n"
		     "%s%s",
		     r->status, http_reason(r->status), date, r->server,
		     r->content_type ? r->content_type : "application/json", r->request_id,
		     r->retry == HTTP_RETRY_YES ? "x-should-retry: true\r\n" :
		     r->retry ? "x-should-retry: false\r\n" : "",
		     r->extra ? r->extra : "");
	if (r->content_length >= 0)
		n += snprintf(h + n, sizeof h - (size_t)n,
			      "Content-Length: %ld\r\n", r->content_length);
	n += snprintf(h + n, sizeof h - (size_t)n, "\r\n");
	conn_write(c, h, (size_t)n, deadline_ms);
	c->head_sent = 1;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	}
	return "Unknown";
}

/* Copies into the out buffer, flushing it when full. */
static int sse_put(struct conn *c, char *out, size_t cap, size_t *used, const char *s,
		   size_t len, long deadline_ms)
{
	while (len) {
		size_t n = cap - *used < len ? cap - *used : len;

		memcpy(out + *used, s, n);
		*used += n;
		s += n;
		len -= n;
		if (*used == cap) {
			if (conn_write(c, out, *used, deadline_ms) < 0)
				return -1;
			*used = 0;
		}
	}
	return 0;
}

/* Each line of lines[0..len) as one event: "data: LINE", or with
 * typed, "event: TYPE" and "data: REST" from a line "TYPE REST". */
static int sse_lines(struct conn *c, const char *lines, size_t len, int typed,
		     long deadline_ms)
{
	char out[16384];
	size_t used = 0;

	while (len) {
		const char *nl = memchr(lines, '\n', len);
		size_t n = nl ? (size_t)(nl - lines) : len;
		const char *sp = typed ? memchr(lines, ' ', n) : NULL;
		size_t t = sp ? (size_t)(sp - lines) : typed ? n : 0;

		if ((typed &&
		     (sse_put(c, out, sizeof out, &used, "event: ", 7, deadline_ms) < 0 ||
		      sse_put(c, out, sizeof out, &used, lines, t, deadline_ms) < 0 ||
		      sse_put(c, out, sizeof out, &used, "\n", 1, deadline_ms) < 0)) ||
		    sse_put(c, out, sizeof out, &used, "data: ", 6, deadline_ms) < 0 ||
		    sse_put(c, out, sizeof out, &used, lines + t + (sp != NULL),
			    n - t - (sp != NULL), deadline_ms) < 0 ||
		    sse_put(c, out, sizeof out, &used, "\n\n", 2, deadline_ms) < 0)
			return -1;
		n += nl ? 1 : 0;
		lines += n;
		len -= n;
	}
	return used ? conn_write(c, out, used, deadline_ms) : 0;
}

int http_sse_send(struct conn *c, const char *lines, size_t len, long deadline_ms)
{
	return sse_lines(c, lines, len, 0, deadline_ms);
}

int http_sse_typed(struct conn *c, const char *lines, size_t len, long deadline_ms)
{
	return sse_lines(c, lines, len, 1, deadline_ms);
}

int http_sse_comment(struct conn *c, const char *text, long deadline_ms)
{
	char out[256];
	int n = snprintf(out, sizeof out, ": %s\n\n", text);

	if (n < 0 || (size_t)n >= sizeof out)
		return -1;
	return conn_write(c, out, (size_t)n, deadline_ms);
}
