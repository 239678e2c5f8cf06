#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"

static int jbuf_reserve(struct jbuf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return -1;
	/* +1 keeps room for the terminator jbuf_cstr adds */
	if (__builtin_add_overflow(b->len, extra, &need) ||
	    __builtin_add_overflow(need, 1, &need)) {
		b->oom = 1;
		return -1;
	}
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (__builtin_mul_overflow(cap, 2, &cap)) {
			cap = need;
			break;
		}
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void jbuf_append(struct jbuf *b, const void *data, size_t n)
{
	if (n == 0 || jbuf_reserve(b, n) < 0)
		return;
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void jbuf_puts(struct jbuf *b, const char *s)
{
	jbuf_append(b, s, strlen(s));
}

void jbuf_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || jbuf_reserve(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *jbuf_cstr(struct jbuf *b)
{
	if (jbuf_reserve(b, 0) < 0)
		return NULL;
	b->p[b->len] = '\0';
	return b->p;
}

void jbuf_free(struct jbuf *b)
{
	free(b->p);
	*b = (struct jbuf){0};
}

/* Length of the valid UTF-8 sequence at s (1..4), or -k when the bytes
 * form an ill-formed sequence whose maximal subpart is k bytes long (k >=
 * 1), or 0 when s ends inside a sequence that is valid so far. The
 * ranges are Unicode Table 3-7. */
static int utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	int len;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return -1;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return 0;
		if (s[i] < lo || s[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xBF;
	}
	return len;
}

size_t jstr_escape(struct jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, replaced = 0;

	jbuf_append(b, "\"", 1);
	while (i < n) {
		unsigned char c = u[i];
		const char *esc = NULL;
		char ubuf[6];
		int k;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		/* flush the plain run before anything that needs work */
		jbuf_append(b, s + run, i - run);
		if (c >= 0x80) {
			k = utf8_seq(u + i, n - i);
			if (k == 0)	/* truncated at the end: one U+FFFD */
				k = -(int)(n - i);
			if (k > 0) {
				/* U+2028/2029 are legal JSON but break JS */
				if (k == 3 && c == 0xE2 && u[i + 1] == 0x80 &&
				    (u[i + 2] == 0xA8 || u[i + 2] == 0xA9))
					jbuf_append(b, u[i + 2] == 0xA8 ?
						    "\\u2028" : "\\u2029", 6);
				else
					jbuf_append(b, s + i, (size_t)k);
				i += (size_t)k;
			} else {
				jbuf_append(b, "\xEF\xBF\xBD", 3);
				replaced++;
				i += (size_t)-k;
			}
			run = i;
			continue;
		}
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		}
		if (esc) {
			jbuf_puts(b, esc);
		} else {
			memcpy(ubuf, "\\u00", 4);
			ubuf[4] = hex[c >> 4];
			ubuf[5] = hex[c & 15];
			jbuf_append(b, ubuf, 6);
		}
		i++;
		run = i;
	}
	jbuf_append(b, s + run, i - run);
	jbuf_append(b, "\"", 1);
	return replaced;
}

size_t jstr_utf8_prefix(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		int k = utf8_seq(u + i, n - i);

		if (k == 0)
			return i;
		i += (size_t)(k > 0 ? k : -k);
	}
	return n;
}

size_t jstr_utf8_valid_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		int k = utf8_seq(u + i, n - i);

		if (k <= 0)
			return i;
		i += (size_t)k;
	}
	return n;
}

/* The sequence's length from utf8_seq, its payload bits gathered: the
 * leading byte keeps 7, 5, 4 or 3 of them, each continuation byte 6. */
int jstr_utf8_decode(const char *s, size_t n, unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	int k = n ? utf8_seq(u, n) : 0;

	*cp = 0;
	if (k <= 0)
		return 0;
	*cp = k == 1 ? u[0] : u[0] & (0x7F >> k);
	for (int i = 1; i < k; i++)
		*cp = *cp << 6 | (u[i] & 0x3F);
	return k;
}

int jstr_utf8_valid(const char *s, size_t n)
{
	return jstr_utf8_valid_len(s, n) == n;
}

void jstr_base64(struct jbuf *b, const void *data, size_t n)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = data;
	char out[4096];
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;

		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		out[k++] = abc[v >> 18 & 63];
		out[k++] = abc[v >> 12 & 63];
		out[k++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? abc[v & 63] : '=';
		if (k + 4 > sizeof out) {
			jbuf_append(b, out, k);
			k = 0;
		}
	}
	jbuf_append(b, out, k);
}

/* One base64 digit's value, or -1. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long jstr_base64_decode(const char *s, size_t n, char **ret)
{
	size_t pad = 0, out_len, k = 0;
	char *out;

	*ret = NULL;
	if (n % 4)
		return -1;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	out_len = n / 4 * 3 - pad;
	if (!(out = malloc(out_len + 1)))
		return -2;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		unsigned w;

		for (int j = 0; j < 4; j++) {
			v[j] = i + (size_t)j >= n - pad ? 0 : b64_value((unsigned char)s[i + j]);
			if (v[j] < 0) {
				free(out);
				return -1;
			}
		}
		w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
		/* the bits a padded end leaves over must be zero: one text,
		 * one decoding */
		if (i + 4 == n && ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))) {
			free(out);
			return -1;
		}
		for (int j = 0; j < 3 && k < out_len; j++)
			out[k++] = (char)(w >> (16 - 8 * j));
	}
	out[out_len] = '\0';
	*ret = out;
	return (long)out_len;
}
