/* Unit tests for http/http.c: request-head parsing, framing rules,
 * Content-Length parsing and the chunked decoder. Every input is parsed
 * from a copy that ends right before a PROT_NONE page, so an over-read
 * crashes instead of passing by luck. */
#include "http/http.h"
#include "http/reply.h"
/* tap.h first: it brings the <stdlib.h> that guard.h relies on. */
#include "tests/tap.h"
#include "tests/guard.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A literal and its length, embedded NULs included. */
#define S(x) x, sizeof(x) - 1

/* want for a head row that must consume the whole input. */
#define ALL 0

struct head_case {
	const char *in;
	size_t len;
	int want;
	const char *why;
};

static const struct head_case head_cases[] = {
	{ S("GET / HTTP/1.1\r\n\r\n"), ALL, "simple GET, no headers" },
	{ S("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
	    "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"),
	  ALL, "POST with headers" },
	{ S("GET / HTTP/1.0\r\n\r\n"), ALL, "HTTP/1.0 accepted" },
	{ S("GET /x HTTP/1.1\r\nHost: a\r\n\r\n{}"), 28,
	  "body bytes after the head are not consumed" },
	{ S("GET / HTTP/1.1\nHost: a\n\n"), ALL, "bare LF line ends" },
	{ S("GET / HTTP/1.1\r\nHost: a\n\r\n"), ALL, "mixed CRLF and LF" },
	{ S("\r\n\r\nGET / HTTP/1.1\r\n\r\n"), ALL, "leading empty lines skipped" },
	{ S("\nGET / HTTP/1.1\r\n\r\n"), ALL, "leading bare LF skipped" },
	{ S("\rGET / HTTP/1.1\r\n\r\n"), HTTP_BAD, "leading lone CR" },
	{ S("M-SEARCH * HTTP/1.1\r\n\r\n"), ALL, "method with tchar punctuation, asterisk target" },
	{ S("get / HTTP/1.1\r\n\r\n"), ALL, "lowercase method is still a token" },
	{ S("GET http://a/b?c=%20&d=\"e\" HTTP/1.1\r\n\r\n"), ALL, "absolute-form target with quotes" },
	{ S("GET / HTTP/2.0\r\n\r\n"), HTTP_BAD, "HTTP/2.0 refused" },
	{ S("GET / HTTP/1.2\r\n\r\n"), HTTP_BAD, "HTTP/1.2 refused" },
	{ S("GET / HTTP/0.9\r\n\r\n"), HTTP_BAD, "HTTP/0.9 refused" },
	{ S("GET / http/1.1\r\n\r\n"), HTTP_BAD, "lowercase version refused" },
	{ S("GET / HTTP/1.10\r\n\r\n"), HTTP_BAD, "extra version digit" },
	{ S("GET / HTTP/1.1 \r\n\r\n"), HTTP_BAD, "space after version" },
	{ S("GET / HTTPS"), HTTP_BAD, "wrong protocol name, bad before the line ends" },
	{ S("GET /\r\n\r\n"), HTTP_BAD, "HTTP/0.9 style request line" },
	{ S("GET  / HTTP/1.1\r\n\r\n"), HTTP_BAD, "two spaces after the method" },
	{ S("GET /  HTTP/1.1\r\n\r\n"), HTTP_BAD, "two spaces after the target" },
	{ S(" GET / HTTP/1.1\r\n\r\n"), HTTP_BAD, "space before the method" },
	{ S("GET\t/ HTTP/1.1\r\n\r\n"), HTTP_BAD, "tab as separator" },
	{ S("GE(T / HTTP/1.1\r\n\r\n"), HTTP_BAD, "non-tchar in method" },
	{ S("GET\x01"), HTTP_BAD, "control char in method, bad at once" },
	{ S("G\0ET / HTTP/1.1\r\n\r\n"), HTTP_BAD, "NUL in method" },
	{ S("GET /a\0b HTTP/1.1\r\n\r\n"), HTTP_BAD, "NUL in target" },
	{ S("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n"), HTTP_BAD, "obs-text in target" },
	{ S("GET /a\x7f HTTP/1.1\r\n\r\n"), HTTP_BAD, "DEL in target" },
	{ S("GET / HTTP/1.1\rX"), HTTP_BAD, "lone CR ending the request line" },
	{ S("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), HTTP_BAD, "space before colon" },
	{ S("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n"), HTTP_BAD, "tab before colon" },
	{ S("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), HTTP_BAD, "obs-fold with SP" },
	{ S("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n"), HTTP_BAD, "obs-fold with HTAB" },
	{ S("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), HTTP_BAD, "whitespace before the first field line" },
	{ S("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"), HTTP_BAD, "control char in value" },
	{ S("GET / HTTP/1.1\r\nX: a\x7fz\r\n\r\n"), HTTP_BAD, "DEL in value" },
	{ S("GET / HTTP/1.1\r\nX: a\0z\r\n\r\n"), HTTP_BAD, "NUL in value" },
	{ S("GET / HTTP/1.1\r\nX\0: a\r\n\r\n"), HTTP_BAD, "NUL in name" },
	{ S("GET / HTTP/1.1\r\nX\x01"), HTTP_BAD, "control char in name, bad at once" },
	{ S("GET / HTTP/1.1\r\nX: a\rz\r\n\r\n"), HTTP_BAD, "lone CR inside value" },
	{ S("GET / HTTP/1.1\r\nX: a\r\n\rz"), HTTP_BAD, "lone CR where the blank line should be" },
	{ S("GET / HTTP/1.1\r\n: a\r\n\r\n"), HTTP_BAD, "empty field name" },
	{ S("GET / HTTP/1.1\r\nHost\r\n\r\n"), HTTP_BAD, "field line without colon" },
	{ S("GET / HTTP/1.1\r\nX@y: a\r\n\r\n"), HTTP_BAD, "non-tchar in name" },
	{ S("GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n"), ALL, "obs-text in value" },
	{ S("GET / HTTP/1.1\r\nX: a\tb\r\n\r\n"), ALL, "HTAB inside value" },
	{ S("GET / HTTP/1.1\r\nX:\r\n\r\n"), ALL, "empty value" },
	{ S("GET / HTTP/1.1\r\nX: \t \r\n\r\n"), ALL, "whitespace-only value" },
	{ S(""), HTTP_INCOMPLETE, "empty buffer" },
	{ S("\r"), HTTP_INCOMPLETE, "CR of a leading empty line" },
	{ S("\r\n"), HTTP_INCOMPLETE, "only a leading empty line" },
	{ S("GET"), HTTP_INCOMPLETE, "inside the method" },
	{ S("GET "), HTTP_INCOMPLETE, "after the method" },
	{ S("GET /"), HTTP_INCOMPLETE, "inside the target" },
	{ S("GET / "), HTTP_INCOMPLETE, "after the target" },
	{ S("GET / HTTP/1."), HTTP_INCOMPLETE, "inside the version" },
	{ S("GET / HTTP/1.1"), HTTP_INCOMPLETE, "after the version" },
	{ S("GET / HTTP/1.1\r"), HTTP_INCOMPLETE, "between CR and LF of the request line" },
	{ S("GET / HTTP/1.1\r\n"), HTTP_INCOMPLETE, "after the request line" },
	{ S("GET / HTTP/1.1\r\nHost"), HTTP_INCOMPLETE, "inside a field name" },
	{ S("GET / HTTP/1.1\r\nHost:"), HTTP_INCOMPLETE, "after the colon" },
	{ S("GET / HTTP/1.1\r\nHost: a  "), HTTP_INCOMPLETE, "inside trailing whitespace" },
	{ S("GET / HTTP/1.1\r\nHost: a\r"), HTTP_INCOMPLETE, "between CR and LF of a field line" },
	{ S("GET / HTTP/1.1\r\nHost: a\r\n"), HTTP_INCOMPLETE, "before the blank line" },
	{ S("GET / HTTP/1.1\r\nHost: a\r\n\r"), HTTP_INCOMPLETE, "between CR and LF of the blank line" },
};

static int parse_guarded(const char *in, size_t len, struct http_request *req,
			 struct guarded *g)
{
	return http_parse_head(guard_copy(g, in, len), len, req);
}

static void test_head_table(void)
{
	for (size_t i = 0; i < sizeof head_cases / sizeof head_cases[0]; i++) {
		const struct head_case *c = &head_cases[i];
		struct http_request req;
		struct guarded g;
		int want = c->want == ALL ? (int)c->len : c->want;
		int got = parse_guarded(c->in, c->len, &req, &g);

		if (!tap_ok(got == want, "head: %s", c->why))
			tap_diag("got %d, want %d", got, want);
		guard_free(&g);
	}
}

static int hdr_is(const struct http_header *h, const char *name,
		  const char *value)
{
	return h->name_len == strlen(name) &&
		memcmp(h->name, name, h->name_len) == 0 &&
		h->value_len == strlen(value) &&
		memcmp(h->value, value, h->value_len) == 0;
}

static void test_head_fields(void)
{
	static const char in[] =
		"\r\nPOST /v1/chat/completions?x=1 HTTP/1.1\r\n"
		"Host:localhost\r\n"
		"X-Pad:  \t a b \t \r\n"
		"Empty:\r\n"
		"content-length: 12\n"
		"\r\n";
	struct http_request req;
	struct guarded g;
	const char *base = guard_copy(&g, in, sizeof in - 1);
	int r = http_parse_head(base, sizeof in - 1, &req);

	tap_ok(r == (int)sizeof in - 1, "fields: whole head consumed");
	tap_ok(req.method == base + 2 && req.method_len == 4 &&
	       memcmp(req.method, "POST", 4) == 0,
	       "fields: method points into the buffer after the empty line");
	tap_ok(req.target_len == 24 &&
	       memcmp(req.target, "/v1/chat/completions?x=1", 24) == 0,
	       "fields: target kept as sent, query included");
	tap_ok(req.minor_version == 1, "fields: minor version 1");
	tap_ok(req.num_headers == 4, "fields: four headers");
	tap_ok(hdr_is(&req.headers[0], "Host", "localhost"),
	       "fields: no whitespace after colon is fine");
	tap_ok(hdr_is(&req.headers[1], "X-Pad", "a b"),
	       "fields: leading and trailing SP/HTAB stripped, inner kept");
	tap_ok(hdr_is(&req.headers[2], "Empty", ""), "fields: empty value");
	tap_ok(hdr_is(&req.headers[3], "content-length", "12"),
	       "fields: bare LF field line");
	guard_free(&g);

	base = guard_copy(&g, S("GET / HTTP/1.0\r\n\r\n"));
	r = http_parse_head(base, 18, &req);
	tap_ok(r == 18 && req.minor_version == 0 && req.num_headers == 0,
	       "fields: HTTP/1.0 gives minor version 0");
	guard_free(&g);
}

/* Every proper prefix of a valid head must ask for more. */
static void test_head_prefixes(void)
{
	static const char *const heads[] = {
		"GET / HTTP/1.1\r\n\r\n",
		"\r\nPOST /a HTTP/1.0\r\nHost: x\r\nX:  y \r\nZ:\r\n\r\n",
		"GET / HTTP/1.1\nA: b\n\n",
	};

	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		size_t n = strlen(heads[i]), bad = 0;

		for (size_t k = 0; k < n; k++) {
			struct http_request req;
			struct guarded g;

			if (parse_guarded(heads[i], k, &req, &g) != HTTP_INCOMPLETE)
				bad++;
			guard_free(&g);
		}
		tap_ok(bad == 0, "prefixes: all %zu prefixes of head %zu incomplete",
		       n, i);
	}
}

static size_t build_headers(char *out, size_t cap, int n, int finish)
{
	size_t len = (size_t)snprintf(out, cap, "GET / HTTP/1.1\r\n");

	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, cap - len, "X-%d: %d\r\n", i, i);
	if (finish)
		len += (size_t)snprintf(out + len, cap - len, "\r\n");
	return len;
}

static void test_head_limits(void)
{
	static char buf[4096];
	struct http_request req;
	struct guarded g;
	size_t len;
	int r;

	len = build_headers(buf, sizeof buf, HTTP_MAX_HEADERS, 1);
	r = parse_guarded(buf, len, &req, &g);
	tap_ok(r == (int)len && req.num_headers == HTTP_MAX_HEADERS,
	       "limits: exactly %d headers accepted", HTTP_MAX_HEADERS);
	guard_free(&g);

	len = build_headers(buf, sizeof buf, HTTP_MAX_HEADERS + 1, 1);
	r = parse_guarded(buf, len, &req, &g);
	tap_ok(r == HTTP_TOO_MANY, "limits: %d headers is too many",
	       HTTP_MAX_HEADERS + 1);
	guard_free(&g);

	/* The 65th line has only just started: already known to be too many. */
	len = build_headers(buf, sizeof buf, HTTP_MAX_HEADERS, 0);
	buf[len++] = 'X';
	r = parse_guarded(buf, len, &req, &g);
	tap_ok(r == HTTP_TOO_MANY, "limits: too many before the head is complete");
	guard_free(&g);

	len = build_headers(buf, sizeof buf, HTTP_MAX_HEADERS, 0);
	r = parse_guarded(buf, len, &req, &g);
	tap_ok(r == HTTP_INCOMPLETE, "limits: %d headers, blank line still to come",
	       HTTP_MAX_HEADERS);
	guard_free(&g);
}

static void test_find_header(void)
{
	static const char in[] =
		"GET / HTTP/1.1\r\nHost: a\r\nX-Dup: 1\r\nx-dup: 2\r\nHos: b\r\n\r\n";
	struct http_request req;
	struct guarded g;
	const struct http_header *h;
	size_t count = 99;

	parse_guarded(in, sizeof in - 1, &req, &g);
	h = http_find_header(&req, "host", &count);
	tap_ok(h == &req.headers[0] && count == 1,
	       "find: case-insensitive, not confused by a shorter name");
	h = http_find_header(&req, "X-DUP", &count);
	tap_ok(h == &req.headers[1] && count == 2, "find: first of two, count 2");
	h = http_find_header(&req, "Content-Length", &count);
	tap_ok(h == NULL && count == 0, "find: missing gives NULL, count 0");
	h = http_find_header(&req, "Hos", NULL);
	tap_ok(h == &req.headers[3], "find: count pointer may be NULL");
	guard_free(&g);
}

struct length_case {
	const char *in;
	size_t len;
	int want;
	uint64_t value;
	const char *why;
};

static const struct length_case length_cases[] = {
	{ S("0"), 0, 0, "zero" },
	{ S("5"), 0, 5, "single digit" },
	{ S("007"), 0, 7, "leading zeros" },
	{ S("18446744073709551615"), 0, UINT64_MAX, "UINT64_MAX" },
	{ S("000018446744073709551615"), 0, UINT64_MAX, "UINT64_MAX with leading zeros" },
	{ S("18446744073709551616"), -1, 0, "UINT64_MAX + 1 overflows" },
	{ S("99999999999999999999"), -1, 0, "twenty nines overflow" },
	{ S("184467440737095516150"), -1, 0, "ten times UINT64_MAX overflows" },
	{ S(""), -1, 0, "empty" },
	{ S("+5"), -1, 0, "plus sign" },
	{ S("-5"), -1, 0, "minus sign" },
	{ S(" 5"), -1, 0, "leading space" },
	{ S("5 "), -1, 0, "trailing space" },
	{ S("0x5"), -1, 0, "hex prefix" },
	{ S("5,5"), -1, 0, "comma list" },
	{ S("1e3"), -1, 0, "exponent" },
	{ S("5\0"), -1, 0, "trailing NUL" },
};

static void test_length_table(void)
{
	for (size_t i = 0; i < sizeof length_cases / sizeof length_cases[0]; i++) {
		const struct length_case *c = &length_cases[i];
		struct guarded g;
		uint64_t v = 12345;
		int r = http_parse_length(guard_copy(&g, c->in, c->len), c->len, &v);

		tap_ok(r == c->want && (r < 0 ? v == 12345 : v == c->value),
		       "length: %s", c->why);
		guard_free(&g);
	}
}

struct framing_case {
	const char *head;
	int want;
	int chunked;
	int has_length;
	uint64_t length;
	int expect_continue;
	const char *why;
};

#define H11 "POST / HTTP/1.1\r\n"
#define H10 "POST / HTTP/1.0\r\n"

static const struct framing_case framing_cases[] = {
	{ H11 "Host: a\r\n\r\n", HTTP_FRAMING_OK, 0, 0, 0, 0,
	  "no body headers: caller decides on 411" },
	{ H11 "Content-Length: 5\r\n\r\n", HTTP_FRAMING_OK, 0, 1, 5, 0,
	  "Content-Length 5" },
	{ H11 "content-LENGTH: 0\r\n\r\n", HTTP_FRAMING_OK, 0, 1, 0, 0,
	  "Content-Length 0, name case ignored" },
	{ H11 "Content-Length: 18446744073709551615\r\n\r\n", HTTP_FRAMING_OK,
	  0, 1, UINT64_MAX, 0, "Content-Length UINT64_MAX" },
	{ H11 "Content-Length: 18446744073709551616\r\n\r\n", HTTP_FRAMING_BAD,
	  0, 0, 0, 0, "Content-Length overflow" },
	{ H11 "Content-Length: +5\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "Content-Length with sign" },
	{ H11 "Content-Length: 5, 5\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "Content-Length comma list, even identical" },
	{ H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", HTTP_FRAMING_BAD,
	  0, 0, 0, 0, "duplicate Content-Length fields" },
	{ H11 "Content-Length:\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "empty Content-Length" },
	{ H11 "Transfer-Encoding: chunked\r\n\r\n", HTTP_FRAMING_OK, 1, 0, 0, 0,
	  "chunked" },
	{ H11 "transfer-encoding: ChUnKeD\r\n\r\n", HTTP_FRAMING_OK, 1, 0, 0, 0,
	  "chunked, case ignored" },
	{ H11 "Transfer-Encoding: , chunked ,\r\n\r\n", HTTP_FRAMING_OK, 1, 0, 0, 0,
	  "empty list elements ignored (RFC 9110 5.6.1.2)" },
	{ H11 "Transfer-Encoding: gzip\r\n\r\n", HTTP_FRAMING_TE_UNSUPPORTED,
	  0, 0, 0, 0, "gzip unsupported" },
	{ H11 "Transfer-Encoding: identity\r\n\r\n", HTTP_FRAMING_TE_UNSUPPORTED,
	  0, 0, 0, 0, "identity unsupported" },
	{ H11 "Transfer-Encoding: gzip, chunked\r\n\r\n",
	  HTTP_FRAMING_TE_UNSUPPORTED, 0, 0, 0, 0, "gzip then chunked unsupported" },
	{ H11 "Transfer-Encoding: chunked, gzip\r\n\r\n",
	  HTTP_FRAMING_TE_UNSUPPORTED, 0, 0, 0, 0, "chunked not last" },
	{ H11 "Transfer-Encoding: chunked, chunked\r\n\r\n",
	  HTTP_FRAMING_TE_UNSUPPORTED, 0, 0, 0, 0, "chunked twice" },
	{ H11 "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
	  HTTP_FRAMING_TE_UNSUPPORTED, 0, 0, 0, 0, "codings spread over two fields" },
	{ H11 "Transfer-Encoding:\r\n\r\n", HTTP_FRAMING_TE_UNSUPPORTED,
	  0, 0, 0, 0, "empty Transfer-Encoding" },
	{ H11 "Transfer-Encoding: chunked;q=1\r\n\r\n",
	  HTTP_FRAMING_TE_UNSUPPORTED, 0, 0, 0, 0, "chunked with a parameter" },
	{ H11 "Transfer-Encoding: xchunked\r\n\r\n", HTTP_FRAMING_TE_UNSUPPORTED,
	  0, 0, 0, 0, "coding that merely ends in chunked" },
	{ H11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
	  HTTP_FRAMING_BAD, 0, 0, 0, 0, "Transfer-Encoding and Content-Length" },
	{ H11 "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n",
	  HTTP_FRAMING_BAD, 0, 0, 0, 0, "CL plus unknown TE is still smuggling" },
	{ H10 "Transfer-Encoding: chunked\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "Transfer-Encoding in HTTP/1.0" },
	{ H10 "Content-Length: 3\r\n\r\n", HTTP_FRAMING_OK, 0, 1, 3, 0,
	  "Content-Length in HTTP/1.0" },
	{ H11 "Expect: 100-continue\r\nContent-Length: 3\r\n\r\n",
	  HTTP_FRAMING_OK, 0, 1, 3, 1, "Expect 100-continue" },
	{ H11 "Expect: 100-CONTINUE\r\nTransfer-Encoding: chunked\r\n\r\n",
	  HTTP_FRAMING_OK, 1, 0, 0, 1, "Expect case ignored, with chunked" },
	{ H10 "Expect: 100-continue\r\nContent-Length: 3\r\n\r\n",
	  HTTP_FRAMING_OK, 0, 1, 3, 0, "Expect ignored in HTTP/1.0 (RFC 9110 10.1.1)" },
	{ H11 "Expect: 200-ok\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "unknown expectation" },
	{ H11 "Expect:\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0, "empty Expect" },
	{ H11 "Expect: 100-continue, foo\r\n\r\n", HTTP_FRAMING_BAD, 0, 0, 0, 0,
	  "Expect list with an unknown member" },
	{ H11 "Expect: 100-continue\r\nExpect: foo\r\n\r\n", HTTP_FRAMING_BAD,
	  0, 0, 0, 0, "second Expect field unknown" },
};

static void test_framing_table(void)
{
	for (size_t i = 0; i < sizeof framing_cases / sizeof framing_cases[0]; i++) {
		const struct framing_case *c = &framing_cases[i];
		size_t len = strlen(c->head);
		struct http_request req;
		struct http_framing f;
		struct guarded g;
		int r = parse_guarded(c->head, len, &req, &g);
		int ok;

		if (r != (int)len) {
			tap_ok(0, "framing: %s (head did not parse: %d)", c->why, r);
			guard_free(&g);
			continue;
		}
		r = http_framing(&req, &f);
		ok = r == c->want;
		if (ok && r == HTTP_FRAMING_OK)
			ok = f.chunked == c->chunked && f.has_length == c->has_length &&
				f.length == c->length &&
				f.expect_continue == c->expect_continue;
		if (!tap_ok(ok, "framing: %s", c->why))
			tap_diag("got %d chunked=%d has_length=%d length=%llu expect=%d",
				 r, f.chunked, f.has_length,
				 (unsigned long long)f.length, f.expect_continue);
		guard_free(&g);
	}
}

struct chunk_case {
	const char *in;
	size_t len;
	ssize_t want;		/* leftover count, or an error code */
	const char *out;	/* decoded bytes expected so far */
	const char *why;
};

static const struct chunk_case chunk_cases[] = {
	{ S("5\r\nhello\r\n0\r\n\r\n"), 0, "hello", "basic" },
	{ S("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), 0, "hello world", "two chunks" },
	{ S("0\r\n\r\n"), 0, "", "empty body" },
	{ S("A\r\n0123456789\r\n0\r\n\r\n"), 0, "0123456789", "uppercase hex" },
	{ S("a\r\n0123456789\r\n0\r\n\r\n"), 0, "0123456789", "lowercase hex" },
	{ S("0005\r\nhello\r\n000\r\n\r\n"), 0, "hello", "leading zeros" },
	{ S("5;name=value\r\nhello\r\n0;last\r\n\r\n"), 0, "hello", "extensions skipped" },
	{ S("5;a=\"x; y\";b\r\nhello\r\n0\r\n\r\n"), 0, "hello", "quoted extension value" },
	{ S("5 \t;a\r\nhello\r\n0\r\n\r\n"), 0, "hello", "BWS before an extension" },
	{ S("5;caf\xc3\xa9\r\nhello\r\n0\r\n\r\n"), 0, "hello", "obs-text in an extension" },
	{ S("5\r\nhello\r\n0\r\nX-Trailer: 1\r\nY:\r\n\r\n"), 0, "hello", "trailers skipped" },
	{ S("5\nhello\n0\nX: 1\n\n"), 0, "hello", "bare LF everywhere" },
	{ S("3\r\n\r\n\n\r\n0\r\n\r\n"), 0, "\r\n\n", "CR and LF inside data are data" },
	{ S("0\r\n\r\nGET /"), 5, "", "leftover bytes counted" },
	{ S(""), HTTP_INCOMPLETE, "", "empty input" },
	{ S("5\r\nhel"), HTTP_INCOMPLETE, "hel", "partial data is decoded" },
	{ S("5\r\nhello"), HTTP_INCOMPLETE, "hello", "data complete, CRLF missing" },
	{ S("5\r\nhello\r\n0\r\n"), HTTP_INCOMPLETE, "hello", "final CRLF missing" },
	{ S("5\r\nhello\r\n0\r\n\r"), HTTP_INCOMPLETE, "hello", "final LF missing" },
	{ S("0\r\nX: 1\r\n"), HTTP_INCOMPLETE, "", "inside the trailer section" },
	{ S("ffffffffffffffff\r\n"), HTTP_INCOMPLETE, "", "16 hex digits accepted" },
	{ S("10000000000000000\r\n"), HTTP_BAD, "", "17 hex digits overflow" },
	{ S("00000000000000005\r\n"), HTTP_BAD, "", "17 digits even with leading zeros" },
	{ S("5\r\nhelloX\r\n0\r\n\r\n"), HTTP_BAD, "hello", "junk instead of CRLF after data" },
	{ S("5\r\nhello\rX"), HTTP_BAD, "hello", "CR without LF after data" },
	{ S("3\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, "hel", "data longer than the size" },
	{ S("\r\n"), HTTP_BAD, "", "empty chunk size" },
	{ S("g\r\n"), HTTP_BAD, "", "non-hex size" },
	{ S("0x5\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, "", "0x prefix" },
	{ S("-5\r\n"), HTTP_BAD, "", "negative size" },
	{ S(" 5\r\n"), HTTP_BAD, "", "space before the size" },
	{ S("5 \r\nhello\r\n0\r\n\r\n"), HTTP_BAD, "", "whitespace after the size without ';'" },
	{ S("5\rX"), HTTP_BAD, "", "lone CR ending the size line" },
	{ S("5;a\x01\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, "", "control char in an extension" },
	{ S("5;a\0\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, "", "NUL in an extension" },
	{ S("0\r\nX: 1\r\n 2\r\n\r\n"), HTTP_BAD, "", "obs-fold in trailers" },
	{ S("0\r\nX\r\n\r\n"), HTTP_BAD, "", "trailer without colon" },
	{ S("0\r\nX : 1\r\n\r\n"), HTTP_BAD, "", "space before colon in a trailer" },
	{ S("0\r\nX: a\x01\r\n\r\n"), HTTP_BAD, "", "control char in a trailer" },
	{ S("0\r\nX: 1\rY"), HTTP_BAD, "", "lone CR in trailers" },
	{ S("0\r\n\rX"), HTTP_BAD, "", "lone CR in the final line" },
};

struct chunk_result {
	ssize_t rc;
	size_t consumed;	/* input bytes used up to completion */
	size_t out_len;
	char out[8192];
};

/* Feed in pieces: the first of `first` bytes, the rest of `step` bytes,
 * each placed against a guard page, decoded bytes gathered in r->out. */
static void chunk_feed(const char *in, size_t len, size_t first, size_t step,
		       struct chunk_result *r)
{
	struct http_chunked dec;
	size_t off = 0, pieces = 0;

	memset(&dec, 0, sizeof dec);
	memset(r, 0, sizeof *r);
	r->rc = HTTP_INCOMPLETE;
	do {
		size_t piece = pieces++ == 0 ? first : step, n;
		struct guarded g;
		char *b;

		if (piece > len - off)
			piece = len - off;
		b = guard_copy(&g, in + off, piece);
		n = piece;
		r->rc = http_chunked_decode(&dec, b, &n);
		if (n <= piece && r->out_len + n <= sizeof r->out) {
			memcpy(r->out + r->out_len, b, n);
			r->out_len += n;
		} else {
			r->rc = -100;	/* the decoder broke its contract */
		}
		guard_free(&g);
		off += piece;
		if (r->rc >= 0) {
			r->consumed = off - (size_t)r->rc;
			return;
		}
	} while (r->rc == HTTP_INCOMPLETE && off < len);
}

static int chunk_same(const struct chunk_result *a, const struct chunk_result *b)
{
	return a->rc >= 0 ? b->rc >= 0 && a->consumed == b->consumed &&
		a->out_len == b->out_len && memcmp(a->out, b->out, a->out_len) == 0
		: a->rc == b->rc && a->out_len == b->out_len &&
		memcmp(a->out, b->out, a->out_len) == 0;
}

/* One-shot must match the row; every two-way split and 1-, 2- and
 * 3-byte feeding must match one-shot. */
static void check_chunk(const char *in, size_t len, ssize_t want,
			const char *out, size_t out_len, const char *why)
{
	static struct chunk_result one, split;
	size_t mismatches = 0;

	chunk_feed(in, len, len, len, &one);
	if (!tap_ok(one.rc == want && one.out_len == out_len &&
		    memcmp(one.out, out, out_len) == 0, "chunked: %s", why))
		tap_diag("got rc %zd, %zu bytes decoded", one.rc, one.out_len);
	for (size_t k = 0; k <= len; k++) {
		chunk_feed(in, len, k, len, &split);
		mismatches += !chunk_same(&one, &split);
	}
	for (size_t step = 1; step <= 3; step++) {
		chunk_feed(in, len, step, step, &split);
		mismatches += !chunk_same(&one, &split);
	}
	tap_ok(mismatches == 0, "chunked split feeding: %s", why);
}

static void test_chunk_table(void)
{
	for (size_t i = 0; i < sizeof chunk_cases / sizeof chunk_cases[0]; i++) {
		const struct chunk_case *c = &chunk_cases[i];

		check_chunk(c->in, c->len, c->want, c->out, strlen(c->out), c->why);
	}
}

static void test_chunk_lines(void)
{
	static char in[HTTP_CHUNK_LINE_MAX + 64];
	size_t len;

	/* Size line of exactly HTTP_CHUNK_LINE_MAX bytes before CRLF. */
	len = 0;
	in[len++] = '1';
	in[len++] = ';';
	memset(in + len, 'e', HTTP_CHUNK_LINE_MAX - 2);
	len += HTTP_CHUNK_LINE_MAX - 2;
	memcpy(in + len, "\r\nZ\r\n0\r\n\r\n", 10);
	check_chunk(in, len + 10, 0, "Z", 1, "size line of HTTP_CHUNK_LINE_MAX bytes");

	in[len++] = 'e';
	memcpy(in + len, "\r\nZ\r\n0\r\n\r\n", 10);
	check_chunk(in, len + 10, HTTP_BAD, "", 0, "size line one byte too long");

	/* Trailer line of exactly HTTP_CHUNK_LINE_MAX bytes. */
	len = 0;
	memcpy(in, "0\r\nX:", 5);
	len = 5;
	memset(in + len, 'v', HTTP_CHUNK_LINE_MAX - 2);
	len += HTTP_CHUNK_LINE_MAX - 2;
	memcpy(in + len, "\r\n\r\n", 4);
	check_chunk(in, len + 4, 0, "", 0, "trailer line of HTTP_CHUNK_LINE_MAX bytes");

	in[len++] = 'v';
	memcpy(in + len, "\r\n\r\n", 4);
	check_chunk(in, len + 4, HTTP_BAD, "", 0, "trailer line one byte too long");

	/* A long name counts against the bound as well. */
	memcpy(in, "0\r\n", 3);
	memset(in + 3, 'N', HTTP_CHUNK_LINE_MAX + 1);
	len = 3 + HTTP_CHUNK_LINE_MAX + 1;
	check_chunk(in, len, HTTP_BAD, "", 0, "trailer name longer than the bound");
}

static void test_chunk_state(void)
{
	struct http_chunked dec;
	char buf[32];
	size_t n;
	ssize_t r;

	memset(&dec, 0, sizeof dec);
	memcpy(buf, "zz", 2);
	n = 2;
	r = http_chunked_decode(&dec, buf, &n);
	memcpy(buf, "0\r\n\r\n", 5);
	n = 5;
	tap_ok(r == HTTP_BAD && http_chunked_decode(&dec, buf, &n) == HTTP_BAD,
	       "chunked: an error is sticky");
	n = 0;
	tap_ok(http_chunked_decode(&dec, buf, &n) == HTTP_BAD,
	       "chunked: sticky even with no input");

	memset(&dec, 0, sizeof dec);
	memcpy(buf, "0\r\n\r\n", 5);
	n = 5;
	r = http_chunked_decode(&dec, buf, &n);
	memcpy(buf, "abc", 3);
	n = 3;
	tap_ok(r == 0 && http_chunked_decode(&dec, buf, &n) == 3 && n == 0,
	       "chunked: after completion all input is leftover");

	/* Large chunk declared, fed across calls: remaining carries over. */
	memset(&dec, 0, sizeof dec);
	memcpy(buf, "14\r\n0123456789", 14);
	n = 14;
	r = http_chunked_decode(&dec, buf, &n);
	tap_ok(r == HTTP_INCOMPLETE && n == 10 && dec.remaining == 10,
	       "chunked: remaining tracked across calls");
}

/* Who sent it: a web page's headers, the media type, the bearer. */
static const struct who_row {
	const char *head;	/* the header lines, after the request line */
	int browser, browser_debug;	/* http_browser_check, without/with own origin */
	int json;		/* http_body_is_json */
	int bearer;		/* http_bearer_matches "k3y" */
} who_rows[] = {
	{ "Host: 127.0.0.1:8\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nSec-Fetch-Site: none\r\nContent-Type: application/json\r\n",
	  HTTP_BROWSER_OK, HTTP_BROWSER_OK, 1, 0 },
	{ "Host: h\r\nSec-Fetch-Site: Same-Origin\r\nContent-Type: Application/JSON; charset=utf-8\r\n",
	  HTTP_BROWSER_OK, HTTP_BROWSER_OK, 1, 0 },
	{ "Host: h\r\nSec-Fetch-Site: same-site\r\n", HTTP_BROWSER_CROSS_SITE,
	  HTTP_BROWSER_CROSS_SITE, 0, 0 },
	{ "Host: h\r\nSec-Fetch-Site: none\r\nSec-Fetch-Site: none\r\n", HTTP_BROWSER_CROSS_SITE,
	  HTTP_BROWSER_CROSS_SITE, 0, 0 },
	{ "Host: 127.0.0.1:8\r\nOrigin: http://127.0.0.1:8\r\n", HTTP_BROWSER_CROSS_ORIGIN,
	  HTTP_BROWSER_OK, 0, 0 },
	{ "Host: 127.0.0.1:8\r\nOrigin: http://localhost:8\r\n", HTTP_BROWSER_CROSS_ORIGIN,
	  HTTP_BROWSER_CROSS_ORIGIN, 0, 0 },
	{ "Host: h\r\nOrigin: null\r\n", HTTP_BROWSER_CROSS_ORIGIN, HTTP_BROWSER_CROSS_ORIGIN, 0, 0 },
	{ "Host: h\r\nContent-Type: text/plain\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nContent-Type: application/jsonx\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nContent-Type: application/json\r\nContent-Type: application/json\r\n",
	  HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nAuthorization: Bearer k3y\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 1 },
	{ "Host: h\r\nAuthorization: bearer   k3y\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 1 },
	{ "Host: h\r\nAuthorization: Bearer k3\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nAuthorization: Bearer k3yy\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nAuthorization: Basic k3y\r\n", HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
	{ "Host: h\r\nAuthorization: Bearer k3y\r\nAuthorization: Bearer k3y\r\n",
	  HTTP_BROWSER_OK, HTTP_BROWSER_OK, 0, 0 },
};

static void test_who(void)
{
	for (size_t i = 0; i < sizeof who_rows / sizeof who_rows[0]; i++) {
		const struct who_row *w = &who_rows[i];
		char in[512];
		int n = snprintf(in, sizeof in, "POST / HTTP/1.1\r\n%s\r\n", w->head);
		struct http_request req;
		struct guarded g;
		const struct http_header *bad = NULL, *got;
		size_t count;
		int ok = http_parse_head(guard_copy(&g, in, (size_t)n), (size_t)n, &req) == n;

		tap_ok(ok && http_browser_check(&req, 0, &bad) == w->browser &&
		       http_browser_check(&req, 1, &bad) == w->browser_debug &&
		       http_body_is_json(&req, &got, &count) == w->json &&
		       http_bearer_matches(&req, "k3y") == w->bearer,
		       "who sent it: row %zu", i);
		guard_free(&g);
	}
}

/* The Date header's formatter against glibc's gmtime_r + strftime (C
 * locale) at the calendar's edges and at 200000 points from 1970 to
 * 9999. */
static void test_date(void)
{
	static const long long edges[] = {
		0, 59, 86399, 86400, 951782399, 951782400, 951868800, 1709164800,
		1709251199, 4107542399LL, 4107542400LL, 4102444800LL, 784111777,
		253402300799LL, 2147483647LL, 2147483648LL,
	};
	unsigned long long x = 88172645463325252ULL;
	size_t bad = 0, n = 0;
	char want[64], got[64];
	const char *first = NULL;
	static char first_buf[160];

	for (size_t i = 0; i < sizeof edges / sizeof edges[0] + 200000; i++) {
		long long t;
		time_t tt;
		struct tm tm;

		if (i < sizeof edges / sizeof edges[0]) {
			t = edges[i];
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t = (long long)(x % 253402300800ULL);
		}
		tt = (time_t)t;
		gmtime_r(&tt, &tm);
		strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		http_date(got, sizeof got, t);
		n++;
		if (strcmp(want, got) && !bad++) {
			snprintf(first_buf, sizeof first_buf, "%lld: %s, want %s", t, got, want);
			first = first_buf;
		}
	}
	tap_ok(bad == 0, "date: %zu of %zu dates as strftime formats them%s%s", n - bad, n,
	       first ? "; first wrong " : "", first ? first : "");
	http_date(got, sizeof got, 784111777);
	tap_ok(!strcmp(got, "Sun, 06 Nov 1994 08:49:37 GMT"), "date: RFC 9110's example (%s)", got);
}

int main(void)
{
	test_date();
	test_head_table();
	test_head_fields();
	test_head_prefixes();
	test_head_limits();
	test_find_header();
	test_length_table();
	test_framing_table();
	test_chunk_table();
	test_chunk_lines();
	test_chunk_state();
	test_who();
	return tap_done();
}
