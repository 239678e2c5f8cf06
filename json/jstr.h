/* Byte buffers and a JSON string writer for output that may hold any
 * byte: cJSON cannot print a string with NUL and accepts invalid UTF-8,
 * so program output goes through jstr_escape instead. */
#ifndef CODELLM_JSTR_H
#define CODELLM_JSTR_H

#include <stddef.h>

struct jbuf {
	char *p;
	size_t len;
	size_t cap;
	int oom;	/* sticky: an append failed, the content is incomplete */
};

void jbuf_append(struct jbuf *b, const void *data, size_t n);
void jbuf_puts(struct jbuf *b, const char *s);
__attribute__((format(printf, 2, 3)))
void jbuf_printf(struct jbuf *b, const char *fmt, ...);
/* NUL-terminates (not counted in len) and returns b->p, or NULL after OOM. */
const char *jbuf_cstr(struct jbuf *b);
void jbuf_free(struct jbuf *b);

/* Append s[0..n) as a quoted JSON string. Invalid UTF-8 becomes U+FFFD,
 * one per maximal subpart (Unicode §3.9, as Python's errors="replace");
 * control characters, NUL included, are escaped; U+2028/U+2029 too, so
 * the result is also a valid JavaScript literal. Returns the number of
 * replacement characters inserted. */
size_t jstr_escape(struct jbuf *b, const char *s, size_t n);

/* Length of the longest valid UTF-8 prefix of s[0..n) that does not end
 * inside a multi-byte sequence: what can be flushed now when more bytes
 * may follow. Returns n when s ends on a character boundary. */
size_t jstr_utf8_prefix(const char *s, size_t n);

/* The character at s[0..n) (n >= 1): its length, 1 to 4, with its code
 * point in *cp; 0 when s does not start with a whole, valid UTF-8
 * sequence (*cp then 0). */
int jstr_utf8_decode(const char *s, size_t n, unsigned *cp);

/* 1 when s[0..n) is entirely valid UTF-8. */
int jstr_utf8_valid(const char *s, size_t n);

/* Length of the longest prefix of s[0..n) made of whole, valid UTF-8
 * sequences: the offset of the first ill-formed (or truncated) one, n
 * when there is none. */
size_t jstr_utf8_valid_len(const char *s, size_t n);

/* Base64 (RFC 4648, with padding) of data[0..n), appended to b. */
void jstr_base64(struct jbuf *b, const void *data, size_t n);
/* Strict base64 of s[0..n) decoded into a new NUL-terminated buffer:
 * its length, -1 for text that is not base64 (a length not a multiple
 * of 4, a byte outside the alphabet, misplaced padding, non-zero pad
 * bits), -2 when memory ran out. */
long jstr_base64_decode(const char *s, size_t n, char **ret);

#endif
