/* RFC 8259 JSON validation ahead of cJSON (see precheck.h). One pass,
 * no allocation, no recursion: the open arrays and objects are one bit
 * each in a word, so the depth limit is also the stack's size. Nothing
 * is read outside s[0..n). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json/jstr.h"
#include "json/precheck.h"

_Static_assert(PRECHECK_MAX_DEPTH <= 64, "one bit per open level in a uint64_t");

__attribute__((format(printf, 4, 5)))
static int fail(struct precheck *ret, enum precheck_problem p, size_t at,
		const char *fmt, ...)
{
	va_list ap;

	ret->problem = p;
	ret->offset = at;
	va_start(ap, fmt);
	vsnprintf(ret->message, sizeof ret->message, fmt, ap);
	va_end(ap);
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* How many of the (up to) four bytes at s[at..] are hex digits before
 * the first that is not; their value in *cp. */
static int hex4(const char *s, size_t n, size_t at, unsigned *cp)
{
	int k = 0;

	*cp = 0;
	for (; k < 4 && at + (size_t)k < n; k++) {
		char c = s[at + (size_t)k];
		unsigned v;

		if (is_digit(c))
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = (unsigned)(c - 'A' + 10);
		else
			break;
		*cp = *cp << 4 | v;
	}
	return k;
}

/* The \u escape at s[at] as written, for a message: "\u" and what
 * follows of it that prints as itself (printable ASCII but the quote
 * and the backslash), at most four bytes. */
static const char *shown_u(const char *s, size_t n, size_t at, char out[8])
{
	size_t k = 0;

	memcpy(out, "\\u", 2);
	while (k < 4 && at + 2 + k < n && s[at + 2 + k] > ' ' && s[at + 2 + k] < 0x7f &&
	       s[at + 2 + k] != '"' && s[at + 2 + k] != '\\') {
		out[2 + k] = s[at + 2 + k];
		k++;
	}
	out[2 + k] = '\0';
	return out;
}

/* The string whose opening quote is s[*pi]; *pi ends past its closing
 * quote. */
static int string(const char *s, size_t n, size_t *pi, struct precheck *ret)
{
	size_t i = *pi + 1;
	char shown[8];

	for (;;) {
		unsigned cp, lo;
		char c;

		/* the plain run: nearly every byte of a long string */
		while (i < n && s[i] != '"' && s[i] != '\\' && (unsigned char)s[i] >= 0x20)
			i++;
		if (i >= n)
			return fail(ret, PRECHECK_SYNTAX, n,
				    "is not valid JSON (near byte %zu)", n);
		c = s[i];
		if (c == '"') {
			*pi = i + 1;
			return 0;
		}
		if (c != '\\')
			return fail(ret, PRECHECK_CONTROL, i,
				    "holds a raw control byte 0x%02x in a string (byte %zu)",
				    (unsigned char)c, i);
		if (i + 1 >= n)
			return fail(ret, PRECHECK_ESCAPE, i,
				    "ends inside an escape in a string (byte %zu)", i);
		c = s[i + 1];
		if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' ||
		    c == 'n' || c == 'r' || c == 't') {
			i += 2;
			continue;
		}
		if (c != 'u') {
			if (c > ' ' && c < 0x7f)
				return fail(ret, PRECHECK_ESCAPE, i,
					    "holds an unknown escape \\%c in a string (byte %zu)",
					    c, i);
			return fail(ret, PRECHECK_ESCAPE, i,
				    "holds a backslash before byte 0x%02x in a string (byte %zu)",
				    (unsigned char)c, i);
		}
		/* cJSON 1.7.15 reads non-hex digits as 0, so a bad \u
		 * would be U+0000 and end the string, like \u0000 itself */
		if (hex4(s, n, i + 2, &cp) < 4)
			return fail(ret, PRECHECK_HEX, i,
				    "holds \\u without four hex digits in a string (byte %zu: %s)",
				    i, shown_u(s, n, i, shown));
		if (cp == 0)
			return fail(ret, PRECHECK_U0000, i,
				    "holds NUL (\\u0000) in a string (byte %zu), which is not accepted",
				    i);
		if (cp >= 0xD800 && cp <= 0xDBFF && i + 7 < n && s[i + 6] == '\\' &&
		    s[i + 7] == 'u') {
			if (hex4(s, n, i + 8, &lo) < 4)
				return fail(ret, PRECHECK_HEX, i + 6,
					    "holds \\u without four hex digits in a string (byte %zu: %s)",
					    i + 6, shown_u(s, n, i + 6, shown));
			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				i += 12;
				continue;
			}
		}
		/* a surrogate stands for no character alone: cJSON fails on
		 * it, Python would keep it and could not encode it as UTF-8 */
		if (cp >= 0xD800 && cp <= 0xDFFF)
			return fail(ret, PRECHECK_SURROGATE, i,
				    "holds a %s surrogate %s without its %s half in a string (byte %zu)",
				    cp < 0xDC00 ? "high" : "low", shown_u(s, n, i, shown),
				    cp < 0xDC00 ? "low" : "high", i);
		i += 6;
	}
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[*pi]; on failure
 * *pi is the byte that broke it. */
static int number(const char *s, size_t n, size_t *pi)
{
	size_t i = *pi;
	int ok = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else if (i < n && is_digit(s[i])) {
		while (i < n && is_digit(s[i]))
			i++;
	} else {
		goto out;
	}
	if (i < n && s[i] == '.') {
		if (++i >= n || !is_digit(s[i]))
			goto out;
		while (i < n && is_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !is_digit(s[i]))
			goto out;
		while (i < n && is_digit(s[i]))
			i++;
	}
	ok = 1;
out:
	*pi = i;
	return ok ? 0 : -1;
}

static int literal(const char *s, size_t n, size_t *pi)
{
	static const char *const words[] = { "true", "false", "null" };

	for (size_t k = 0; k < 3; k++) {
		size_t len = strlen(words[k]);

		if (n - *pi >= len && !memcmp(s + *pi, words[k], len)) {
			*pi += len;
			return 0;
		}
	}
	return -1;
}

/* Where the walk is: what may come next, and the open levels. */
struct walk {
	enum { VALUE, KEY, AFTER } want;
	uint64_t obj;		/* bit d: the open level d + 1 is an object */
	int depth;
	size_t values;
};

/* The bytes before any syntax: no raw NUL (never JSON, and it would end
 * a string for cJSON), valid UTF-8; *ret_start skips a leading BOM. */
static int check_bytes(const char *s, size_t n, struct precheck *ret, size_t *ret_start)
{
	const char *nul = n ? memchr(s, '\0', n) : NULL;
	size_t valid;

	if (nul)
		return fail(ret, PRECHECK_NUL, (size_t)(nul - s),
			    "holds a NUL byte (byte %zu)", (size_t)(nul - s));
	valid = jstr_utf8_valid_len(s, n);
	if (valid < n)
		return fail(ret, PRECHECK_UTF8, valid,
			    "is not valid UTF-8 (byte %zu)", valid);
	/* cJSON skips a BOM only when more than one byte follows it: a BOM
	 * and one byte ("\xEF\xBB\xBF" "0") it fails to parse, so the BOM
	 * is no BOM here either (and no value: a syntax error at byte 0) */
	*ret_start = n >= 3 && n != 4 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0;
	return 0;
}

/* After a value: a comma, or the end of the open array or object. */
static int after_value(const char *s, size_t *pi, struct walk *w)
{
	int in_obj = w->depth > 0 && (w->obj >> (w->depth - 1) & 1);

	if (s[*pi] == ',')
		w->want = in_obj ? KEY : VALUE;
	else if (s[*pi] == (in_obj ? '}' : ']'))
		w->depth--;
	else
		return -1;
	(*pi)++;
	return 0;
}

/* A member's key and its colon. */
static int key(const char *s, size_t n, size_t *pi, struct walk *w, struct precheck *ret)
{
	if (s[*pi] != '"' || string(s, n, pi, ret) < 0)
		return -1;
	*pi = skip_ws(s, n, *pi);
	if (*pi >= n || s[*pi] != ':')
		return -1;
	(*pi)++;
	w->want = VALUE;
	return 0;
}

/* '{' or '[': one level deeper, closed at once when empty. */
static int open_level(const char *s, size_t n, size_t *pi, struct walk *w,
		      struct precheck *ret)
{
	int is_obj = s[*pi] == '{';

	if (w->depth == PRECHECK_MAX_DEPTH)
		return fail(ret, PRECHECK_DEPTH, *pi,
			    "is nested deeper than %d levels (byte %zu)",
			    PRECHECK_MAX_DEPTH, *pi);
	if (is_obj)
		w->obj |= UINT64_C(1) << w->depth;
	else
		w->obj &= ~(UINT64_C(1) << w->depth);
	w->depth++;
	*pi = skip_ws(s, n, *pi + 1);
	/* empty: closed at once; otherwise a key or a value */
	if (*pi < n && s[*pi] == (is_obj ? '}' : ']')) {
		(*pi)++;
		w->depth--;
		w->want = AFTER;
	} else {
		w->want = is_obj ? KEY : VALUE;
	}
	return 0;
}

/* One value where one is wanted: a container opens, a scalar is read. */
static int value(const char *s, size_t n, size_t *pi, struct walk *w, struct precheck *ret)
{
	if (++w->values > PRECHECK_MAX_VALUES)
		return fail(ret, PRECHECK_VALUES, *pi,
			    "holds more than %d JSON values (byte %zu)",
			    PRECHECK_MAX_VALUES, *pi);
	if (s[*pi] == '{' || s[*pi] == '[')
		return open_level(s, n, pi, w, ret);
	if (s[*pi] == '"') {
		if (string(s, n, pi, ret) < 0)
			return -1;
	} else if (s[*pi] == 't' || s[*pi] == 'f' || s[*pi] == 'n') {
		if (literal(s, n, pi) < 0)
			return -1;
	} else if (number(s, n, pi) < 0) {
		return -1;
	}
	w->want = AFTER;
	return 0;
}

/* A walk over the text with an explicit stack (one bit per level), not
 * a recursive descent: the depth is checked, never the C stack's. Each
 * step returns -1 on a problem; one it named is in *ret already, any
 * other is a syntax error where the walk stopped. */
int precheck_json(const char *s, size_t n, struct precheck *ret)
{
	struct walk w = { .want = VALUE };
	size_t i = 0;
	int rc;

	ret->problem = PRECHECK_OK;
	ret->offset = 0;
	ret->message[0] = '\0';
	if (check_bytes(s, n, ret, &i) < 0)
		return -1;
	for (;;) {
		i = skip_ws(s, n, i);
		if (w.want == AFTER && w.depth == 0) {
			if (i < n)
				return fail(ret, PRECHECK_TRAILING, i,
					    "has data after the JSON value (byte %zu)", i);
			return 0;
		}
		if (i >= n)
			break;
		if (w.want == AFTER)
			rc = after_value(s, &i, &w);
		else if (w.want == KEY)
			rc = key(s, n, &i, &w, ret);
		else
			rc = value(s, n, &i, &w, ret);
		if (rc < 0)
			break;
	}
	/* a string's own problems (and the depth and count) are already told */
	if (ret->problem != PRECHECK_OK)
		return -1;
	return fail(ret, PRECHECK_SYNTAX, i, "is not valid JSON (near byte %zu)", i);
}
