/* Tests for json/jstr.c: jstr_escape against a table whose expected
 * outputs were computed with Python 3 (bytes.decode("utf-8", "replace"),
 * then JSON-escaped as the header promises), covering every
 * maximal-subpart case of Unicode §3.9 Table 3-8; jstr_utf8_prefix,
 * jstr_utf8_valid and jstr_utf8_valid_len tables; the split property
 * the streaming writer relies on; and jbuf growth. Inputs sit right
 * before a PROT_NONE page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "tests/guard.h"
#include "tests/tap.h"

struct esc_row {
	const char *name;
	const char *in;
	size_t len;
	const char *out;	/* exact JSON text, quotes included */
	size_t out_len;
	size_t replaced;	/* U+FFFD inserted */
};

/* Generated with /usr/bin/python3: see the header comment. */
static const struct esc_row esc_rows[] = {
	{ "empty", "", 0, "\"\"", 2, 0 },
	{ "ascii", "hello", 5, "\"hello\"", 7, 0 },
	{ "quote and backslash", "a\"b\\c", 5, "\"a\\\"b\\\\c\"", 9, 0 },
	{ "short escapes", "\x08\x0C\x0A\x0D\x09", 5, "\"\\b\\f\\n\\r\\t\"", 12, 0 },
	{ "NUL", "a\x00" "b", 3, "\"a\\u0000b\"", 10, 0 },
	{ "only NUL", "\x00", 1, "\"\\u0000\"", 8, 0 },
	{ "control 0x01 0x1f", "\x01\x1F", 2, "\"\\u0001\\u001f\"", 14, 0 },
	{ "DEL kept raw", "\x7F", 1, "\"\x7F\"", 3, 0 },
	{ "U+2028", "x\xE2\x80\xA8y", 5, "\"x\\u2028y\"", 10, 0 },
	{ "U+2029", "\xE2\x80\xA9", 3, "\"\\u2029\"", 8, 0 },
	{ "U+2027 kept", "\xE2\x80\xA7", 3, "\"\xE2\x80\xA7\"", 5, 0 },
	{ "emoji kept", "\xF0\x9F\x98\x80", 4, "\"\xF0\x9F\x98\x80\"", 6, 0 },
	{ "U+FFFD kept", "\xEF\xBF\xBD", 3, "\"\xEF\xBF\xBD\"", 5, 0 },
	{ "U+0080", "\xC2\x80", 2, "\"\xC2\x80\"", 4, 0 },
	{ "U+07FF", "\xDF\xBF", 2, "\"\xDF\xBF\"", 4, 0 },
	{ "U+0800", "\xE0\xA0\x80", 3, "\"\xE0\xA0\x80\"", 5, 0 },
	{ "U+D7FF", "\xED\x9F\xBF", 3, "\"\xED\x9F\xBF\"", 5, 0 },
	{ "U+E000", "\xEE\x80\x80", 3, "\"\xEE\x80\x80\"", 5, 0 },
	{ "U+FFFF", "\xEF\xBF\xBF", 3, "\"\xEF\xBF\xBF\"", 5, 0 },
	{ "U+10000", "\xF0\x90\x80\x80", 4, "\"\xF0\x90\x80\x80\"", 6, 0 },
	{ "U+10FFFF", "\xF4\x8F\xBF\xBF", 4, "\"\xF4\x8F\xBF\xBF\"", 6, 0 },
	{ "Table 3-8 example", "a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d", 13, "\"a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d\"", 24, 6 },
	{ "overlong C0 AF", "\xC0\xAF", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"", 8, 2 },
	{ "overlong C1 BF", "\xC1\xBF", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"", 8, 2 },
	{ "overlong E0 80 80", "\xE0\x80\x80", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 11, 3 },
	{ "overlong E0 9F BF", "\xE0\x9F\xBF", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 11, 3 },
	{ "overlong F0 80 80 80", "\xF0\x80\x80\x80", 4, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 14, 4 },
	{ "overlong F0 8F BF BF", "\xF0\x8F\xBF\xBF", 4, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 14, 4 },
	{ "surrogate ED A0 80", "\xED\xA0\x80", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 11, 3 },
	{ "surrogate ED BF BF", "\xED\xBF\xBF", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 11, 3 },
	{ "surrogate pair as UTF-8", "\xED\xA0\xBD\xED\xB8\x80", 6, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 20, 6 },
	{ "beyond U+10FFFF F4 90 80 80", "\xF4\x90\x80\x80", 4, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 14, 4 },
	{ "F5 80 80 80", "\xF5\x80\x80\x80", 4, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 14, 4 },
	{ "5-byte F8 88 80 80 80", "\xF8\x88\x80\x80\x80", 5, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 17, 5 },
	{ "6-byte FC 84 80 80 80 80", "\xFC\x84\x80\x80\x80\x80", 6, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 20, 6 },
	{ "FE FF", "\xFE\xFF", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"", 8, 2 },
	{ "lone continuation 80", "\x80", 1, "\"\xEF\xBF\xBD\"", 5, 1 },
	{ "continuations 80 BF 80", "\x80\xBF\x80", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"", 11, 3 },
	{ "E1 80 then ASCII", "\xE1\x80" "A", 3, "\"\xEF\xBF\xBD" "A\"", 6, 1 },
	{ "F1 80 80 then ASCII", "\xF1\x80\x80" "A", 4, "\"\xEF\xBF\xBD" "A\"", 6, 1 },
	{ "E2 82 28", "\xE2\x82(", 3, "\"\xEF\xBF\xBD(\"", 6, 1 },
	{ "C2 41", "\xC2" "A", 2, "\"\xEF\xBF\xBD" "A\"", 6, 1 },
	{ "C2 then C2 80", "\xC2\xC2\x80", 3, "\"\xEF\xBF\xBD\xC2\x80\"", 7, 1 },
	{ "truncated C2 at end", "ab\xC2", 3, "\"ab\xEF\xBF\xBD\"", 7, 1 },
	{ "truncated E1 80 at end", "\xE1\x80", 2, "\"\xEF\xBF\xBD\"", 5, 1 },
	{ "truncated F0 90 80 at end", "\xF0\x90\x80", 3, "\"\xEF\xBF\xBD\"", 5, 1 },
	{ "truncated F0 90 at end", "x\xF0\x90", 3, "\"x\xEF\xBF\xBD\"", 6, 1 },
	{ "truncated emoji then emoji", "\xF0\x9F\x98\xF0\x9F\x98\x80", 7, "\"\xEF\xBF\xBD\xF0\x9F\x98\x80\"", 9, 1 },
	{ "truncated ED 9F at end", "\xED\x9F", 2, "\"\xEF\xBF\xBD\"", 5, 1 },
	{ "ED A0 at end", "\xED\xA0", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"", 8, 2 },
	{ "F4 90 at end", "\xF4\x90", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"", 8, 2 },
	{ "invalid then quote", "\xFF\"", 2, "\"\xEF\xBF\xBD\\\"\"", 7, 1 },
	{ "invalid then NUL", "\xC3\x00", 2, "\"\xEF\xBF\xBD\\u0000\"", 11, 1 },
	{ "latin-1 text", "caf\xE9 ol\xE9", 8, "\"caf\xEF\xBF\xBD ol\xEF\xBF\xBD\"", 14, 2 },
	{ "mixed valid and control", "\xC3\xA9\x1B[0m\xE2\x80\xA8", 9, "\"\xC3\xA9\\u001b[0m\\u2028\"", 19, 0 },
};

struct prefix_row {
	const char *name;
	const char *in;
	size_t len;
	size_t prefix;		/* jstr_utf8_prefix */
	int valid;		/* jstr_utf8_valid */
};

static const struct prefix_row prefix_rows[] = {
	{ "empty", "", 0, 0, 1 },
	{ "ascii", "abc", 3, 3, 1 },
	{ "NUL is a character", "a\0b", 3, 3, 1 },
	{ "complete 2-byte", "\xC3\xA9", 2, 2, 1 },
	{ "lone lead C3 at end", "a\xC3", 2, 1, 0 },
	{ "E2 82 held", "a\xE2\x82", 3, 1, 0 },
	{ "E2 held", "a\xE2", 2, 1, 0 },
	{ "E2 82 AC complete", "\xE2\x82\xAC", 3, 3, 1 },
	{ "emoji 3 of 4 held", "\xF0\x9F\x98", 3, 0, 0 },
	{ "emoji complete", "\xF0\x9F\x98\x80", 4, 4, 1 },
	{ "emoji then 1 of 4 held", "\xF0\x9F\x98\x80\xF0", 5, 4, 0 },
	{ "invalid FF flushed", "a\xFF", 2, 2, 0 },
	{ "E2 28 flushed", "\xE2\x28", 2, 2, 0 },
	{ "lone continuation flushed", "\x80", 1, 1, 0 },
	{ "ED A0 can never complete", "\xED\xA0", 2, 2, 0 },
	{ "ED 9F may complete", "\xED\x9F", 2, 0, 0 },
	{ "E0 A0 may complete", "\xE0\xA0", 2, 0, 0 },
	{ "E0 9F can never complete", "\xE0\x9F", 2, 2, 0 },
	{ "F4 8F BF may complete", "\xF4\x8F\xBF", 3, 0, 0 },
	{ "F4 90 can never complete", "\xF4\x90", 2, 2, 0 },
	{ "F0 8F can never complete", "\xF0\x8F", 2, 2, 0 },
	{ "C0 is never a lead", "\xC0", 1, 1, 0 },
	{ "F5 is never a lead", "\xF5", 1, 1, 0 },
	{ "surrogate encoded", "\xED\xA0\x80", 3, 3, 0 },
	{ "overlong slash", "\xC0\xAF", 2, 2, 0 },
	{ "U+10FFFF", "\xF4\x8F\xBF\xBF", 4, 4, 1 },
	{ "U+FFFF", "\xEF\xBF\xBF", 3, 3, 1 },
	{ "invalid in the middle, valid end", "a\xFF" "b\xC3\xA9", 5, 5, 0 },
};

static int check_escape(const struct esc_row *r)
{
	struct guarded g;
	struct jbuf b = {0};
	const char *in = guard_copy(&g, r->in, r->len);
	size_t rep = jstr_escape(&b, in, r->len);
	int ok = !b.oom && b.len == r->out_len && !memcmp(b.p, r->out, r->out_len) &&
		 rep == r->replaced;

	if (!ok) {
		tap_diag("got %zu bytes, %zu replaced: %.*s", b.len, rep,
			 (int)b.len, b.p ? b.p : "");
		tap_diag("want %zu bytes, %zu replaced: %.*s", r->out_len,
			 r->replaced, (int)r->out_len, r->out);
	}
	tap_ok(ok, "jstr_escape %s", r->name);
	jbuf_free(&b);
	guard_free(&g);
	return ok;
}

/* The streaming writer escapes the jstr_utf8_prefix of what it has and
 * keeps the rest for later: for every split point the two escapes glued
 * together (quotes dropped) must equal the escape of the whole. */
static void check_split(const struct esc_row *r)
{
	int ok = 1;

	for (size_t k = 0; k <= r->len && ok; k++) {
		struct guarded g;
		struct jbuf a = {0}, c = {0};
		const char *in = guard_copy(&g, r->in, k);
		size_t p = jstr_utf8_prefix(in, k), ra, rc;

		ok = p <= k;
		guard_free(&g);
		if (!ok)
			break;
		ra = jstr_escape(&a, r->in, p);
		rc = jstr_escape(&c, r->in + p, r->len - p);
		ok = a.len + c.len - 2 == r->out_len &&
		     !memcmp(a.p + 1, r->out + 1, a.len - 2) &&
		     !memcmp(c.p + 1, r->out + 1 + a.len - 2, c.len - 2) &&
		     ra + rc == r->replaced;
		if (!ok)
			tap_diag("split at %zu: prefix %zu", k, p);
		jbuf_free(&a);
		jbuf_free(&c);
	}
	tap_ok(ok, "split escape == whole escape: %s", r->name);
}

static void check_prefix(const struct prefix_row *r)
{
	struct guarded g;
	const char *in = guard_copy(&g, r->in, r->len);
	size_t p = jstr_utf8_prefix(in, r->len);
	int v = jstr_utf8_valid(in, r->len);

	if (!tap_ok(p == r->prefix, "jstr_utf8_prefix %s", r->name))
		tap_diag("got %zu, want %zu", p, r->prefix);
	if (!tap_ok(v == r->valid, "jstr_utf8_valid %s", r->name))
		tap_diag("got %d, want %d", v, r->valid);
	/* jstr_utf8_valid_len: the longest valid prefix, so valid itself
	 * and no longer prefix is (the offset the JSON check reports) */
	{
		size_t vl = jstr_utf8_valid_len(in, r->len);
		int ok = (vl == r->len) == r->valid && jstr_utf8_valid(in, vl);

		for (size_t k = vl + 1; ok && k <= r->len; k++)
			ok = !jstr_utf8_valid(in, k);
		if (!tap_ok(ok, "jstr_utf8_valid_len %s", r->name))
			tap_diag("got %zu of %zu", vl, r->len);
	}
	guard_free(&g);
}

static void check_jbuf(void)
{
	struct jbuf b = {0};
	char big[5000], *want;
	const char *s;
	size_t i;

	/* an empty buffer still gives a terminated string */
	s = jbuf_cstr(&b);
	tap_ok(s && s[0] == '\0' && b.len == 0, "jbuf_cstr on an empty buffer is \"\"");
	jbuf_append(&b, "ignored", 0);
	tap_ok(b.len == 0, "zero-length append adds nothing");
	jbuf_puts(&b, "abc");
	jbuf_append(&b, "d\0e", 3);
	tap_ok(b.len == 6 && !memcmp(b.p, "abcd\0e", 6), "append keeps NUL bytes");
	jbuf_printf(&b, "[%d:%s]", 42, "x");
	tap_ok(b.len == 12 && !memcmp(b.p, "abcd\0e[42:x]", 12), "jbuf_printf appends");
	jbuf_free(&b);
	tap_ok(!b.p && !b.len && !b.cap && !b.oom, "jbuf_free resets the buffer");

	/* growth across several reallocations, byte-exact */
	for (i = 0; i < sizeof big; i++)
		big[i] = (char)('a' + i % 26);
	for (i = 0; i < sizeof big; i += 7)
		jbuf_append(&b, big + i, i + 7 <= sizeof big ? 7 : sizeof big - i);
	s = jbuf_cstr(&b);
	tap_ok(s && b.len == sizeof big && !memcmp(s, big, sizeof big) &&
	       s[b.len] == '\0' && b.cap > b.len, "many small appends grow to 5000 bytes");
	jbuf_free(&b);

	/* one printf bigger than the first allocation */
	jbuf_puts(&b, "<");
	jbuf_printf(&b, "%.*s|%zu", (int)sizeof big, big, sizeof big);
	want = malloc(sizeof big + 16);
	if (!want)
		abort();
	i = (size_t)snprintf(want, sizeof big + 16, "<%.*s|%zu", (int)sizeof big, big,
			     sizeof big);
	s = jbuf_cstr(&b);
	tap_ok(s && b.len == i && !strcmp(s, want), "jbuf_printf of 5006 bytes in one call");
	free(want);
	jbuf_free(&b);

	/* a printf that exactly fills the first 256-byte allocation */
	jbuf_printf(&b, "%.*s", 255, big);
	s = jbuf_cstr(&b);
	tap_ok(s && b.len == 255 && !memcmp(s, big, 255) && s[255] == '\0',
	       "255 bytes + terminator fit");
	jbuf_printf(&b, "%s", "Z");
	s = jbuf_cstr(&b);
	tap_ok(s && b.len == 256 && s[255] == 'Z' && s[256] == '\0',
	       "the 256th byte grows the buffer");
	jbuf_free(&b);

	/* escape appends to what is already there */
	jbuf_puts(&b, "{\"s\":");
	jstr_escape(&b, "a\nb", 3);
	jbuf_puts(&b, "}");
	s = jbuf_cstr(&b);
	tap_ok(s && !strcmp(s, "{\"s\":\"a\\nb\"}"), "jstr_escape appends after existing text");
	jbuf_free(&b);

	/* a long string of NULs: 6 output bytes per input byte */
	memset(big, 0, sizeof big);
	jstr_escape(&b, big, sizeof big);
	tap_ok(b.len == 2 + 6 * sizeof big && !memcmp(b.p, "\"\\u0000\\u0000", 13) &&
	       !memcmp(b.p + b.len - 7, "\\u0000\"", 7), "5000 NULs escape to 30002 bytes");
	jbuf_free(&b);

	/* once oom is set nothing more is added and cstr says so */
	b.oom = 1;
	jbuf_puts(&b, "x");
	tap_ok(b.len == 0 && jbuf_cstr(&b) == NULL, "a sticky oom refuses appends");
	jbuf_free(&b);
}

/* jstr_base64_decode: strict (RFC 4648 with padding), one text per
 * decoding, every byte value, and what it refuses. */
static void check_base64_decode(void)
{
	static const struct { const char *in, *out; long len; } ok[] = {
		{ "", "", 0 }, { "Zg==", "f", 1 }, { "Zm8=", "fo", 2 }, { "Zm9v", "foo", 3 },
		{ "Zm9vYg==", "foob", 4 }, { "Zm9vYmE=", "fooba", 5 }, { "Zm9vYmFy", "foobar", 6 },
		{ "AP8=", "\0\xff", 2 }, { "+/8=", "\xfb\xff", 2 },
	};
	static const char *const bad[] = {
		"Zg", "Zg=", "Zm9vY", "Z===", "====", "Zg==Zg==", "Zm9v\n", "Zm 9v", "Zm9-",
		"Zm9_", "Zh==", "Zm9=", "Zm=v", "=Zm9",
	};
	unsigned char all[256];
	struct jbuf enc = {0};
	char *out;
	long n;

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		n = jstr_base64_decode(ok[i].in, strlen(ok[i].in), &out);
		tap_ok(n == ok[i].len && out && !memcmp(out, ok[i].out, (size_t)n) && out[n] == '\0',
		       "base64 \"%s\" decodes to %ld bytes, NUL after them", ok[i].in, ok[i].len);
		free(out);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char shown[16];

		snprintf(shown, sizeof shown, "%s", bad[i]);
		for (char *c = shown; *c; c++)
			if (*c < 0x20)
				*c = '?';	/* a TAP line stays one line */
		n = jstr_base64_decode(bad[i], strlen(bad[i]), &out);
		tap_ok(n == -1 && out == NULL, "base64 refuses \"%s\" (-1, nothing allocated)", shown);
	}
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	jstr_base64(&enc, all, sizeof all);
	n = jstr_base64_decode(enc.p, enc.len, &out);
	tap_ok(n == 256 && out && !memcmp(out, all, 256), "every byte value round trips");
	free(out);
	jbuf_free(&enc);
}

int main(void)
{
	check_base64_decode();
	for (size_t i = 0; i < sizeof esc_rows / sizeof esc_rows[0]; i++)
		check_escape(&esc_rows[i]);
	for (size_t i = 0; i < sizeof esc_rows / sizeof esc_rows[0]; i++)
		check_split(&esc_rows[i]);
	for (size_t i = 0; i < sizeof prefix_rows / sizeof prefix_rows[0]; i++)
		check_prefix(&prefix_rows[i]);
	check_jbuf();
	return tap_done();
}
