#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/target.h"

int http_pct_byte(const char *s, const char *end)
{
	int hi, lo;

	if (end - s < 3)
		return -1;
	hi = http_hex_value((unsigned char)s[1]);
	lo = http_hex_value((unsigned char)s[2]);
	return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

/* RFC 9112 §3.2.2: a server MUST accept the absolute-form
 * ("http://host/v1/models"); only its path routes. */
static size_t authority_end(const char *t, size_t n)
{
	size_t skip = 0;

	if (n > 7 && http_case_eq(t, "http://", 7))
		skip = 7;
	else if (n > 8 && http_case_eq(t, "https://", 8))
		skip = 8;
	if (skip)
		while (skip < n && t[skip] != '/' && t[skip] != '?' && t[skip] != '#')
			skip++;
	return skip;
}

int http_target_path(const char *t, size_t n, char *out, size_t outlen)
{
	size_t k = 0, skip = authority_end(t, n);
	const char *end;

	t += skip;
	n -= skip;
	end = t + n;
	for (size_t i = 0; i < n && t[i] != '?' && t[i] != '#'; i++) {
		int ch = (unsigned char)t[i];
		int b = ch == '%' ? http_pct_byte(t + i, end) : -1;

		if (b >= 0) {
			ch = b;
			i += 2;
			if (ch == '\0' || ch == '/')
				return -1;
		}
		if (k + 1 >= outlen)
			return -1;
		out[k++] = (char)ch;
	}
	out[k] = '\0';
	return 0;
}

/* Form-decodes v[0..e) into a new string. */
static int form_decode(const char *v, const char *e, char **ret, size_t *ret_len)
{
	char *out = malloc((size_t)(e - v) + 1);
	size_t k = 0;

	if (!out)
		return HTTP_QUERY_NOMEM;
	for (const char *s = v; s < e; s++) {
		int b = *s == '+' ? ' ' : *s == '%' ? http_pct_byte(s, e) : (unsigned char)*s;

		if (b < 0) {
			free(out);
			return HTTP_QUERY_BAD;
		}
		if (*s == '%')
			s += 2;
		out[k++] = (char)b;
	}
	out[k] = '\0';
	*ret = out;
	*ret_len = k;
	return 0;
}

int http_query_param(const char *target, size_t n, const char *name,
		     char **ret, size_t *ret_len)
{
	const char *q = memchr(target, '?', n), *end = target + n;
	const char *hash = memchr(target, '#', n);
	size_t nl = strlen(name);

	*ret = NULL;
	*ret_len = 0;
	if (!q || (hash && hash < q))
		return HTTP_QUERY_ABSENT;
	if (hash)
		end = hash;
	for (const char *p = q + 1; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));

		if (eq && (size_t)(eq - p) == nl && !memcmp(p, name, nl))
			return form_decode(eq + 1, e, ret, ret_len);
		p = e + (e < end);
	}
	return HTTP_QUERY_ABSENT;
}
