/* Unit tests for http/target.c: the path that routes and the query
 * parameters, both through the one percent-decoder. Every input sits
 * right before a PROT_NONE page, so an over-read crashes. */
#include "http/target.h"
/* tap.h first: it brings the <stdlib.h> that guard.h relies on. */
#include "tests/tap.h"
#include "tests/guard.h"

#include <string.h>

/* want NULL: refused (-1) */
static const struct { const char *in; const char *want; const char *why; } path_rows[] = {
	{ "/v1/models", "/v1/models", "origin-form as it is" },
	{ "/v1/models?x=1", "/v1/models", "query cut" },
	{ "/v1/models#frag", "/v1/models", "fragment cut" },
	{ "/", "/", "root" },
	{ "", "", "empty target" },
	{ "http://localhost:8089/v1/models", "/v1/models", "absolute-form: authority dropped" },
	{ "HTTPS://h/v1/models?q", "/v1/models", "absolute-form, scheme in capitals" },
	{ "http://h?x=1", "", "absolute-form without a path" },
	{ "http://", "http://", "a bare scheme is not absolute-form" },
	{ "ftp://h/x", "ftp://h/x", "another scheme is a plain path" },
	{ "/v1/%6Dodels", "/v1/models", "%XX decoded" },
	{ "/v1/%6dodels", "/v1/models", "lowercase hex" },
	{ "/a%20b", "/a b", "encoded space" },
	{ "/a%3Fb?c", "/a?b", "encoded '?' stays in the path" },
	{ "/a%00b", NULL, "%00 refused" },
	{ "/v1%2Fmodels", NULL, "%2F refused" },
	{ "/v1%2fmodels", NULL, "%2f refused" },
	{ "/a%zz", "/a%zz", "non-hex after '%' kept" },
	{ "/a%4", "/a%4", "truncated %X kept" },
	{ "/a%", "/a%", "lone '%' at the end kept" },
	{ "/a%4?1", "/a%4", "a '%' cannot borrow from the query" },
	{ "/a+b", "/a+b", "'+' is not a space in a path" },
};

static void test_path(void)
{
	char out[16];

	for (size_t i = 0; i < sizeof path_rows / sizeof path_rows[0]; i++) {
		size_t n = strlen(path_rows[i].in);
		struct guarded g;
		const char *t = guard_copy(&g, path_rows[i].in, n);
		int rc = http_target_path(t, n, out, sizeof out);

		if (path_rows[i].want)
			tap_ok(rc == 0 && !strcmp(out, path_rows[i].want), "path %s: %s",
			       path_rows[i].in, path_rows[i].why);
		else
			tap_ok(rc == -1, "path %s: %s", path_rows[i].in, path_rows[i].why);
		guard_free(&g);
	}
}

static void test_path_length(void)
{
	char out[8];

	tap_ok(http_target_path("/abcdef", 7, out, sizeof out) == 0 &&
	       !strcmp(out, "/abcdef"), "path: 7 bytes fit in 8");
	tap_ok(http_target_path("/abcdefg", 8, out, sizeof out) == -1,
	       "path: 8 bytes overlong for 8");
	tap_ok(http_target_path("/abcdef%67", 10, out, sizeof out) == -1,
	       "path: overlong once decoded");
	tap_ok(http_target_path("/abcde%67", 9, out, sizeof out) == 0 &&
	       !strcmp(out, "/abcdeg"), "path: the decoded length counts");
}

/* want NULL: rc */
static const struct { const char *in; const char *name; int rc; const char *want; } q_rows[] = {
	{ "/x?body=a+b", "body", 0, "a b" },
	{ "/x?body=a%2Bb", "body", 0, "a+b" },
	{ "/x?body=%41%62", "body", 0, "Ab" },
	{ "/x?body=", "body", 0, "" },
	{ "/x?a=1&body=2&body=3", "body", 0, "2" },
	{ "/x?bodyx=1&body=2", "body", 0, "2" },
	{ "/x?body", "body", HTTP_QUERY_ABSENT, NULL },
	{ "/x?a=1", "body", HTTP_QUERY_ABSENT, NULL },
	{ "/x", "body", HTTP_QUERY_ABSENT, NULL },
	{ "/x#?body=1", "body", HTTP_QUERY_ABSENT, NULL },
	{ "/x?body=1#2", "body", 0, "1" },
	{ "/x?body=%", "body", HTTP_QUERY_BAD, NULL },
	{ "/x?body=%4", "body", HTTP_QUERY_BAD, NULL },
	{ "/x?body=%4&a", "body", HTTP_QUERY_BAD, NULL },
	{ "/x?body=%g1", "body", HTTP_QUERY_BAD, NULL },
	{ "/x?a=%zz&body=ok", "body", 0, "ok" },
};

static void test_query(void)
{
	for (size_t i = 0; i < sizeof q_rows / sizeof q_rows[0]; i++) {
		size_t n = strlen(q_rows[i].in), len = 99;
		struct guarded g;
		const char *t = guard_copy(&g, q_rows[i].in, n);
		char *v = (char *)1;
		int rc = http_query_param(t, n, q_rows[i].name, &v, &len);

		if (q_rows[i].want)
			tap_ok(rc == 0 && v && len == strlen(q_rows[i].want) &&
			       !strcmp(v, q_rows[i].want), "query %s", q_rows[i].in);
		else
			tap_ok(rc == q_rows[i].rc && !v && len == 0, "query %s gives %d",
			       q_rows[i].in, q_rows[i].rc);
		if (rc == 0)
			free(v);
		guard_free(&g);
	}
}

static void test_pct(void)
{
	static const char s[] = "%7e%G0%";

	tap_ok(http_pct_byte(s, s + 3) == 0x7e, "pct: %%7e");
	tap_ok(http_pct_byte(s, s + 2) == -1, "pct: cut short");
	tap_ok(http_pct_byte(s + 3, s + 6) == -1, "pct: non-hex");
	tap_ok(http_pct_byte(s + 6, s + 7) == -1, "pct: lone");
}

int main(void)
{
	test_path();
	test_path_length();
	test_query();
	test_pct();
	return tap_done();
}
