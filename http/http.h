/* HTTP/1.x request reading, picohttpparser style: fixed caller buffers,
 * parse functions that report "complete / need more / bad", no
 * allocation, no I/O. The handler owns sockets and deadlines. */
#ifndef CODELLM_HTTP_H
#define CODELLM_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_MAX_HEADERS 64

enum {
	HTTP_INCOMPLETE = -1,	/* need more bytes */
	HTTP_BAD = -2,		/* malformed: 400 */
	HTTP_TOO_MANY = -3,	/* more than HTTP_MAX_HEADERS headers: 431 */
};

struct http_header {
	const char *name;
	size_t name_len;
	const char *value;	/* surrounding spaces/tabs stripped */
	size_t value_len;
};

struct http_request {
	const char *method;
	size_t method_len;
	const char *target;	/* request-target as sent, e.g. "/v1/models?x=1" */
	size_t target_len;
	int minor_version;	/* 0 for HTTP/1.0, 1 for HTTP/1.1 */
	struct http_header headers[HTTP_MAX_HEADERS];
	size_t num_headers;
};

/* Parse a request line and headers from buf[0..len). Returns the number
 * of bytes the head occupies (through the blank line) when complete,
 * HTTP_INCOMPLETE, HTTP_BAD or HTTP_TOO_MANY. Pointers in *req point into
 * buf. */
int http_parse_head(const char *buf, size_t len, struct http_request *req);

/* Case-insensitive header lookup; returns the first match or NULL and
 * stores the number of headers with that name in *count when non-NULL. */
const struct http_header *http_find_header(const struct http_request *req,
					   const char *name, size_t *count);

/* How the body is framed, derived from the headers (RFC 9112 §6). */
struct http_framing {
	int chunked;		/* Transfer-Encoding: chunked */
	int has_length;		/* Content-Length present */
	uint64_t length;	/* its value */
	int expect_continue;	/* Expect: 100-continue */
};

enum {
	HTTP_FRAMING_OK = 0,
	HTTP_FRAMING_BAD = -1,		/* 400: bad/duplicate Content-Length, both CL and TE, unknown coding, bad Expect */
	HTTP_FRAMING_TE_UNSUPPORTED = -2,	/* a coding other than chunked: 501 */
};

int http_framing(const struct http_request *req, struct http_framing *ret);

/* Strict decimal parse of a Content-Length value: digits only, no sign,
 * no spaces, no overflow past UINT64_MAX. 0 on success, -1 otherwise. */
int http_parse_length(const char *s, size_t n, uint64_t *ret);

/* Incremental chunked decoder (RFC 9112 §7.1): decodes buf[0..*len) in
 * place, moving body bytes to the front; on return *len is the number of
 * decoded body bytes now at buf[0..*len). Returns the number of input
 * bytes left over after the final CRLF of the trailer section (>= 0)
 * once the body is complete, HTTP_INCOMPLETE when more input is needed,
 * HTTP_BAD on malformed input. Chunk extensions and trailers are accepted
 * and discarded, each line bounded by HTTP_CHUNK_LINE_MAX bytes. The
 * decoder state must be zeroed before the first call. */
#define HTTP_CHUNK_LINE_MAX 4096

struct http_chunked {
	int state;
	uint64_t remaining;	/* bytes left in the current chunk */
	size_t line_len;	/* bytes of the current size/trailer line seen */
	int hex_digits;
	int in_ext;
};

ssize_t http_chunked_decode(struct http_chunked *dec, char *buf, size_t *len);

/* The value of one hex digit, or -1. */
int http_hex_value(unsigned char c);

/* 1 when a[0..n) and b[0..n) are equal with ASCII letters folded (our
 * own folding: strncasecmp follows the locale). */
int http_case_eq(const char *a, const char *b, size_t n);

/* 1 when a Host header value names this machine's loopback: localhost,
 * *.localhost (RFC 6761), 127.x.y.z or [::1], each with an optional
 * :port. The debug routes want it (DNS rebinding sends another name). */
int http_host_is_loopback(const char *v, size_t n);

/* A web page's request (THREATS.md #16): HTTP_BROWSER_OK, or the rule
 * it breaks with the (first) offending header in *bad. Sec-Fetch-Site must be none or same-origin; an
 * Origin is refused unless allow_own_origin and it is "http://" + Host
 * (the debug page's own calls). */
enum { HTTP_BROWSER_OK, HTTP_BROWSER_CROSS_SITE, HTTP_BROWSER_CROSS_ORIGIN };
int http_browser_check(const struct http_request *req, int allow_own_origin,
		       const struct http_header **bad);

/* 1 when there is exactly one Content-Type and it is application/json,
 * parameters allowed; *got is the first Content-Type (or NULL), *count
 * how many there are. */
int http_body_is_json(const struct http_request *req, const struct http_header **got,
		      size_t *count);

/* 1 when exactly one Authorization field says "Bearer" and then key,
 * compared in constant time over the key's length. */
int http_bearer_matches(const struct http_request *req, const char *key);

#endif
