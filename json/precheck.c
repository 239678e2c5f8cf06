/* RFC 8259 JSON validation ahead of cJSON (see precheck.h). One pass,
 * no recursion: the open arrays and objects are one bit each in a word,
 * so the depth limit is also the stack's size. precheck_json allocates
 * nothing; precheck_json_unique keeps a table of the keys, sorted once
 * the walk is done. Nothing is read outside s[0..n). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A key of an object, for the duplicate check: where it is written,
 * the object it is in (numbered as they open), a hash of what it says. */
struct key_ent {
	uint64_t hash;
	size_t at;		/* its opening quote */
	size_t len;		/* through its closing quote */
	uint32_t obj;
};

/* The keys seen, in text order until sorted. */
struct keyset {
	struct key_ent *v;
	size_t n, cap;
	int oom;		/* a key could not be kept */
};

/* Where the walk is: what may come next, and the open levels. */
struct walk {
	enum { VALUE, KEY, AFTER } want;
	uint64_t obj;		/* bit d: the open level d + 1 is an object */
	int depth;
	size_t values;
	struct keyset *keys;	/* NULL: keys are not kept (precheck_json) */
	uint32_t objs;		/* objects opened so far */
	uint32_t open_obj[PRECHECK_MAX_DEPTH];	/* level d + 1's number */
};

/* The next character of a string the walk has checked, escapes decoded
 * (a surrogate pair to the one code point it stands for): its code
 * point, *pi past it; -1 at the closing quote. *pi starts after the
 * opening quote. */
static long next_char(const char *s, size_t n, size_t *pi)
{
	size_t i = *pi;
	unsigned cp, lo;
	int k;

	if (i >= n || s[i] == '"')
		return -1;
	if (s[i] != '\\') {
		k = jstr_utf8_decode(s + i, n - i, &cp);
		*pi = i + (size_t)(k > 0 ? k : 1);
		return cp;
	}
	switch (s[i + 1]) {
	case 'b': cp = '\b'; break;
	case 'f': cp = '\f'; break;
	case 'n': cp = '\n'; break;
	case 'r': cp = '\r'; break;
	case 't': cp = '\t'; break;
	case 'u':
		hex4(s, n, i + 2, &cp);
		*pi = i + 6;
		if (cp >= 0xD800 && cp <= 0xDBFF && hex4(s, n, i + 8, &lo) == 4) {
			*pi = i + 12;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		}
		return cp;
	default: cp = (unsigned char)s[i + 1]; break;	/* " \ / */
	}
	*pi = i + 2;
	return cp;
}

/* The string at s[at] (checked) kept as a key of the innermost open
 * object: FNV-1a over its code points. Memory running out is noted and
 * told when the walk is done. */
static void keep_key(const char *s, size_t n, size_t at, size_t end, struct walk *w)
{
	struct keyset *k = w->keys;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i = at + 1;
	long c;

	if (!k || k->oom)
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct key_ent *v = realloc(k->v, cap * sizeof *v);

		if (!v) {
			k->oom = 1;
			return;
		}
		k->v = v;
		k->cap = cap;
	}
	while ((c = next_char(s, n, &i)) >= 0)
		h = (h ^ (uint64_t)c) * UINT64_C(0x100000001b3);
	k->v[k->n++] = (struct key_ent){ h, at, end - at, w->open_obj[w->depth - 1] };
}

/* The leading byte order mark's length, 3 or 0. cJSON skips a BOM
 * only when more than one byte follows it: a BOM and one byte
 * ("\xEF\xBB\xBF" "0") it fails to parse, so the BOM is no BOM here
 * either (and no value: a syntax error at byte 0). */
static size_t bom_len(const char *s, size_t n)
{
	return n >= 3 && n != 4 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0;
}

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
	*ret_start = bom_len(s, n);
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
	size_t at = *pi;

	if (s[*pi] != '"' || string(s, n, pi, ret) < 0)
		return -1;
	keep_key(s, n, at, *pi, w);
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
	if (is_obj) {
		w->obj |= UINT64_C(1) << w->depth;
		w->open_obj[w->depth] = w->objs++;
	} else {
		w->obj &= ~(UINT64_C(1) << w->depth);
	}
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
 * other is a syntax error where the walk stopped. Keys go to *keys when
 * it is not NULL. */
static int walk(const char *s, size_t n, struct keyset *keys, struct precheck *ret)
{
	struct walk w = { .want = VALUE, .keys = keys };
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

int precheck_json(const char *s, size_t n, struct precheck *ret)
{
	return walk(s, n, NULL, ret);
}

struct text {
	const char *s;
	size_t n;
};

/* 0 when two keys say the same, else their order by code points. */
static int key_cmp(const struct text *t, const struct key_ent *a, const struct key_ent *b)
{
	size_t i = a->at + 1, j = b->at + 1;
	long ca, cb;

	if (a->len == b->len && !memcmp(t->s + a->at, t->s + b->at, a->len))
		return 0;
	do {
		ca = next_char(t->s, t->n, &i);
		cb = next_char(t->s, t->n, &j);
	} while (ca == cb && ca >= 0);
	return ca < cb ? -1 : ca > cb;
}

/* The table's order: by object, hash and place, so the keys of an
 * object that hash alike are side by side, in text order. */
static int by_place(const struct key_ent *a, const struct key_ent *b, struct text *t)
{
	if (a->obj != b->obj)
		return a->obj < b->obj ? -1 : 1;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* The order within keys that hash alike: what they say, then place. */
static int by_key(const struct key_ent *a, const struct key_ent *b, struct text *t)
{
	int c = key_cmp(t, a, b);

	if (c)
		return c;
	return a->at < b->at ? -1 : a->at > b->at;
}

typedef int key_order(const struct key_ent *, const struct key_ent *, struct text *);

/* v[i] sunk into the heap v[0..n) until no child is greater. */
static void sift_down(struct key_ent *v, size_t i, size_t n, key_order *cmp, struct text *t)
{
	struct key_ent tmp;
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && cmp(&v[c], &v[c + 1], t) < 0)
			c++;
		if (cmp(&v[i], &v[c], t) >= 0)
			return;
		tmp = v[i];
		v[i] = v[c];
		v[c] = tmp;
		i = c;
	}
}

/* Heapsort: n log n at worst, in place. Not qsort: glibc's takes memory
 * for a merge sort and quietly does without when there is none, and
 * the check's one allocation is the keys' table, whose failure it
 * tells. */
static void sort_keys(struct key_ent *v, size_t n, key_order *cmp, struct text *t)
{
	struct key_ent tmp;

	for (size_t i = n / 2; i-- > 0;)
		sift_down(v, i, n, cmp, t);
	for (size_t end = n; end-- > 1;) {
		tmp = v[0];
		v[0] = v[end];
		v[end] = tmp;
		sift_down(v, 0, end, cmp, t);
	}
}

/* The key at s[at] (checked) as a message shows it: printable ASCII as
 * itself, but the quote and the backslash escaped, any other character
 * as \uXXXX (a pair beyond the BMP); at most 40 bytes, then "...". */
static const char *shown_key(const char *s, size_t n, size_t at, char out[48])
{
	size_t i = at + 1, used = 0;
	char piece[32];
	long c;

	out[0] = '\0';
	while ((c = next_char(s, n, &i)) >= 0) {
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			snprintf(piece, sizeof piece, "%c", (int)c);
		else if (c == '"' || c == '\\')
			snprintf(piece, sizeof piece, "\\%c", (int)c);
		else if (c < 0x10000)
			snprintf(piece, sizeof piece, "\\u%04X", (unsigned)c);
		else
			snprintf(piece, sizeof piece, "\\u%04X\\u%04X",
				 (unsigned)(0xD800 + ((c - 0x10000) >> 10) % 0x400),
				 (unsigned)(0xDC00 + (c - 0x10000) % 0x400));
		if (used + strlen(piece) > 40) {
			memcpy(out + used, "...", 4);
			break;
		}
		memcpy(out + used, piece, strlen(piece) + 1);
		used += strlen(piece);
	}
	return out;
}

/* In v[0..r), r >= 2 keys of one object with one hash, in text order:
 * the repeat that comes first, *first the key it repeats; NULL when
 * they all differ. Alike keys nearly always say the same (then the
 * second repeats the first); only keys whose hashes collide are sorted
 * by what they say, so a run of n repeats costs n, not n log n
 * comparisons of their text. */
static const struct key_ent *run_repeat(struct text *t, struct key_ent *v, size_t r,
					const struct key_ent **first)
{
	const struct key_ent *dup = NULL;

	*first = &v[0];
	if (!key_cmp(t, &v[1], &v[0]))
		return &v[1];
	sort_keys(v, r, by_key, t);
	for (size_t i = 1; i < r; i++)
		if (!key_cmp(t, &v[i - 1], &v[i]) && (!dup || v[i].at < dup->at)) {
			dup = &v[i];
			*first = &v[i - 1];
		}
	return dup;
}

/* The table sorted by object and hash: the repeat that comes first in
 * the text, if any, told with the key and both places. */
static int find_duplicate(const char *s, size_t n, struct keyset *k, struct precheck *ret)
{
	struct text t = { s, n };
	const struct key_ent *dup = NULL, *first = NULL, *d, *f;
	char shown[48];
	size_t r;

	sort_keys(k->v, k->n, by_place, &t);
	for (size_t i = 0; i < k->n; i += r) {
		for (r = 1; i + r < k->n && k->v[i + r].obj == k->v[i].obj &&
		     k->v[i + r].hash == k->v[i].hash; r++)
			;
		if (r > 1 && (d = run_repeat(&t, &k->v[i], r, &f)) && (!dup || d->at < dup->at)) {
			dup = d;
			first = f;
		}
	}
	if (!dup)
		return 0;
	return fail(ret, PRECHECK_DUPLICATE, dup->at,
		    "holds the key \"%s\" twice in one object (byte %zu; first at byte %zu)",
		    shown_key(s, n, dup->at, shown), dup->at, first->at);
}

int precheck_json_unique(const char *s, size_t n, struct precheck *ret)
{
	struct keyset k = {0};
	int rc = walk(s, n, &k, ret);

	if (rc == 0 && k.oom)
		rc = fail(ret, PRECHECK_MEMORY, 0,
			  "could not be checked: the server is out of memory");
	else if (rc == 0)
		rc = find_duplicate(s, n, &k, ret);
	free(k.v);
	return rc;
}

/* Past the value at s[*pi] of a checked text: -1 when it is none. */
static int skip_value(const char *s, size_t n, size_t *pi)
{
	struct precheck scratch;
	int depth = 0;

	do {
		char c = s[*pi];

		if (c == '"') {
			if (string(s, n, pi, &scratch) < 0)
				return -1;
		} else if (c == '{' || c == '[') {
			depth++;
			(*pi)++;
		} else if (c == '}' || c == ']') {
			depth--;
			(*pi)++;
		} else if (c == 't' || c == 'f' || c == 'n') {
			if (literal(s, n, pi) < 0)
				return -1;
		} else if (c == '-' || is_digit(c)) {
			if (number(s, n, pi) < 0)
				return -1;
		} else {
			(*pi)++;	/* whitespace, a comma, a colon */
		}
	} while (*pi < n && depth > 0);
	return depth ? -1 : 0;
}

/* 1 when the string at s[at] (checked) says the UTF-8 text key. */
static int key_is(const char *s, size_t n, size_t at, const char *key)
{
	size_t i = at + 1, j = 0, len = strlen(key);
	unsigned cp;
	long c;
	int k;

	while ((c = next_char(s, n, &i)) >= 0) {
		k = j < len ? jstr_utf8_decode(key + j, len - j, &cp) : 0;
		if (k <= 0 || cp != (unsigned long)c)
			return 0;
		j += (size_t)k;
	}
	return j == len;
}

int precheck_member(const char *s, size_t n, const char *key, size_t *start, size_t *len)
{
	struct precheck scratch;
	size_t i = skip_ws(s, n, bom_len(s, n)), at;
	int hit;

	if (i >= n || s[i] != '{')
		return -1;
	i = skip_ws(s, n, i + 1);
	while (i < n && s[i] == '"') {
		hit = key_is(s, n, i, key);
		if (string(s, n, &i, &scratch) < 0)
			return -1;
		i = skip_ws(s, n, i);
		if (i >= n || s[i] != ':')
			return -1;
		at = i = skip_ws(s, n, i + 1);
		if (i >= n || skip_value(s, n, &i) < 0)
			return -1;
		if (hit) {
			*start = at;
			*len = i - at;
			return 0;
		}
		i = skip_ws(s, n, i);
		if (i >= n || s[i] != ',')
			return -1;
		i = skip_ws(s, n, i + 1);
	}
	return -1;
}
