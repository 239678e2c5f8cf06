/* The request-target (RFC 9112 §3.2): the path that routes and the
 * query parameters the debug routes read. Pure functions over the bytes
 * the head parser left in place; one percent-decoder serves both. */
#ifndef CODELLM_TARGET_H
#define CODELLM_TARGET_H

#include <stddef.h>

/* The byte a "%XX" at s (s[0] == '%', end the end of the input) stands
 * for, 0..255, or -1 when two hex digits do not follow. */
int http_pct_byte(const char *s, const char *end);

/* The path of t[0..n), percent-decoded into out (NUL-terminated): an
 * absolute-form target ("http://host/p") loses its scheme and
 * authority, the query and fragment are cut, and a '%' without two hex
 * digits stays as it is. Returns 0, or -1 when a decoded byte is NUL or
 * '/' (an encoded separator could dodge the route table) or when the
 * path does not fit in outlen. */
int http_target_path(const char *t, size_t n, char *out, size_t outlen);

enum {
	HTTP_QUERY_ABSENT = -1,
	HTTP_QUERY_BAD = -2,	/* a '%' without two hex digits */
	HTTP_QUERY_NOMEM = -3,
};

/* The value of query parameter `name` in a request-target (the part
 * after '?', up to '#'), form-decoded ('+' is a space, %XX a byte).
 * Returns 0 with a malloc'd, NUL-terminated *ret (its length in
 * *ret_len), or one of the HTTP_QUERY_ values with *ret NULL. The first
 * occurrence wins. */
int http_query_param(const char *target, size_t n, const char *name,
		     char **ret, size_t *ret_len);

#endif
