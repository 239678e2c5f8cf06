#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/reply.h"

/* RFC 9110's IMF-fixdate, in English whatever the locale, computed
 * here: glibc's gmtime_r and strftime load the time zone on first use
 * (/etc/localtime, seven system calls a request) that a GMT date never
 * needs. The civil date from the day count is the usual era algorithm
 * (proleptic Gregorian calendar, 400-year eras). */
void http_date(char *buf, size_t len, long long t)
{
	static const char days[7][4] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	long long day = t >= 0 ? t / 86400 : -((-t + 86399) / 86400), sec = t - day * 86400;
	long long z = day + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	long long doe = z - era * 146097;				/* [0, 146096] */
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;	/* [0, 399] */
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);		/* [0, 365] */
	long long mp = (5 * doy + 2) / 153;				/* [0, 11], March first */
	int mday = (int)(doy - (153 * mp + 2) / 5 + 1), mon = (int)(mp < 10 ? mp + 2 : mp - 10);
	long long year = yoe + era * 400 + (mon <= 1);
	int wday = (int)(((day % 7) + 7) % 7);			/* 1970-01-01: a Thursday */

	snprintf(buf, len, "%s, %02d %s %04lld %02d:%02d:%02d GMT", days[wday], mday, months[mon],
		 year, (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60));
}

void http_reply_head(struct conn *c, const struct http_reply *r, long deadline_ms)
{
	char h[1024], date[64];
	int n;

	http_date(date, sizeof date, time(NULL));
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
