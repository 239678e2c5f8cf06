/* libFuzzer target for http/http.c and http/target.c. The input is
 * parsed as a request head (a complete head's target is decoded too);
 * whatever follows a complete head (or the whole input when the head
 * does not complete) is fed to the chunked decoder in one shot and in
 * several split patterns, which must all agree. Invariant failures
 * abort so the replay driver fails `make check` too. */
#include "http/http.h"
#include "http/target.h"
#include "tests/fuzz/common.h"

static int inside(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

/* Parse from an exact-size heap copy so ASan sees any over-read. */
static int parse_copy(const uint8_t *data, size_t len, struct http_request *req,
		      char **copy)
{
	*copy = fuzz_copy(data, len);
	return http_parse_head(*copy, len, req);
}

static void check_head(const char *buf, size_t len, int r,
		       const struct http_request *req)
{
	CHECK(r == HTTP_INCOMPLETE || r == HTTP_BAD || r == HTTP_TOO_MANY ||
	      (r > 0 && (size_t)r <= len));
	if (r <= 0)
		return;
	CHECK(req->method_len > 0 && inside(req->method, req->method_len, buf, (size_t)r));
	CHECK(req->target_len > 0 && inside(req->target, req->target_len, buf, (size_t)r));
	CHECK(req->minor_version == 0 || req->minor_version == 1);
	CHECK(req->num_headers <= HTTP_MAX_HEADERS);
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];

		CHECK(h->name_len > 0 && inside(h->name, h->name_len, buf, (size_t)r));
		CHECK(inside(h->value, h->value_len, buf, (size_t)r));
		CHECK(h->name[h->name_len] == ':');
		if (h->value_len) {
			CHECK(h->value[0] != ' ' && h->value[0] != '\t');
			CHECK(h->value[h->value_len - 1] != ' ' &&
			      h->value[h->value_len - 1] != '\t');
		}
	}
}

static void check_framing(const struct http_request *req)
{
	static const char *const names[] = {
		"content-length", "Transfer-Encoding", "EXPECT", "host",
	};
	struct http_framing f;
	int r = http_framing(req, &f);

	CHECK(r == HTTP_FRAMING_OK || r == HTTP_FRAMING_BAD ||
	      r == HTTP_FRAMING_TE_UNSUPPORTED);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t count = 99;
		const struct http_header *h = http_find_header(req, names[i], &count);

		CHECK(count <= req->num_headers);
		CHECK((h == NULL) == (count == 0));
		CHECK(h == NULL || (h >= req->headers &&
				    h < req->headers + req->num_headers));
	}
	if (r != HTTP_FRAMING_OK)
		return;
	CHECK(!(f.chunked && f.has_length));
	if (f.has_length) {
		size_t count;
		const struct http_header *cl =
			http_find_header(req, "content-length", &count);
		uint64_t v;

		CHECK(cl && count == 1);
		CHECK(http_parse_length(cl->value, cl->value_len, &v) == 0 &&
		      v == f.length);
	}
	if (f.chunked || f.expect_continue)
		CHECK(req->minor_version == 1);
}

/* The target as the handler decodes it: a path that fits and holds no
 * decoded NUL, and a query value whose length matches its NUL. */
static void check_target(const struct http_request *req)
{
	char path[64];
	char *v;
	size_t len;
	int rc = http_target_path(req->target, req->target_len, path, sizeof path);

	CHECK(rc == 0 || rc == -1);
	if (rc == 0)
		CHECK(strlen(path) < sizeof path && strlen(path) <= req->target_len);
	rc = http_query_param(req->target, req->target_len, "body", &v, &len);
	CHECK(rc == 0 || rc == HTTP_QUERY_ABSENT || rc == HTTP_QUERY_BAD);
	CHECK((rc == 0) == (v != NULL));
	if (rc == 0)
		CHECK(len <= req->target_len && v[len] == '\0');
	free(v);
}

struct decoded {
	ssize_t rc;
	size_t consumed;	/* input bytes up to completion, when rc >= 0 */
	size_t out_len;
	char *out;
};

/* Feed body[0..len) to a fresh decoder: a first piece of `first` bytes,
 * then pieces of `step` bytes, each in its own exact-size heap copy. */
static void decode(const uint8_t *body, size_t len, size_t first, size_t step,
		   struct decoded *d)
{
	struct http_chunked dec;
	size_t off = 0, pieces = 0;

	memset(&dec, 0, sizeof dec);
	d->rc = HTTP_INCOMPLETE;
	d->consumed = 0;
	d->out_len = 0;
	d->out = malloc(len ? len : 1);
	CHECK(d->out);
	do {
		size_t piece = pieces++ == 0 ? first : step, n;
		char *b;

		if (piece > len - off)
			piece = len - off;
		b = malloc(piece ? piece : 1);
		CHECK(b);
		if (piece)
			memcpy(b, body + off, piece);
		n = piece;
		d->rc = http_chunked_decode(&dec, b, &n);
		CHECK(d->rc == HTTP_INCOMPLETE || d->rc == HTTP_BAD ||
		      (d->rc >= 0 && (size_t)d->rc <= piece));
		CHECK(n <= piece);
		if (d->rc >= 0)
			CHECK(n + (size_t)d->rc <= piece);
		CHECK(d->out_len + n <= len);
		memcpy(d->out + d->out_len, b, n);
		d->out_len += n;
		free(b);
		off += piece;
		if (d->rc >= 0)
			d->consumed = off - (size_t)d->rc;
	} while (d->rc == HTTP_INCOMPLETE && off < len);
}

static void same_decoding(const struct decoded *a, const struct decoded *b)
{
	CHECK(a->rc == b->rc || (a->rc >= 0 && b->rc >= 0));
	CHECK(a->consumed == b->consumed);
	CHECK(a->out_len == b->out_len);
	CHECK(a->out_len == 0 || memcmp(a->out, b->out, a->out_len) == 0);
}

static void check_chunked(const uint8_t *body, size_t len, uint8_t seed)
{
	struct decoded one, split;
	size_t steps[] = { 1, 2, (size_t)(seed % 13) + 3 };

	decode(body, len, len, len, &one);
	CHECK(one.out_len <= len);
	if (one.rc >= 0)
		CHECK((size_t)one.rc + one.consumed == len);

	decode(body, len, len / 2, len, &split);
	same_decoding(&one, &split);
	free(split.out);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		decode(body, len, steps[i], steps[i], &split);
		same_decoding(&one, &split);
		free(split.out);
	}
	free(one.out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request req;
	char *copy;
	int r = parse_copy(data, size, &req, &copy);
	size_t prefixes[4];

	check_head(copy, size, r, &req);
	if (r > 0) {
		check_framing(&req);
		check_target(&req);
	}
	free(copy);

	/* A prefix either needs more or already reaches the same verdict:
	 * the parser decides on the first byte that can decide. */
	prefixes[0] = size / 2;
	prefixes[1] = size / 3;
	prefixes[2] = size ? size - 1 : 0;
	prefixes[3] = r > 0 ? (size_t)r - 1 : size / 4;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		struct http_request preq;
		int pr = parse_copy(data, prefixes[i], &preq, &copy);

		check_head(copy, prefixes[i], pr, &preq);
		if (r > 0 && prefixes[i] >= (size_t)r)
			CHECK(pr == r);
		else
			CHECK(pr == HTTP_INCOMPLETE || pr == r);
		free(copy);
	}

	if (r > 0)
		check_chunked(data + r, size - (size_t)r, size ? data[0] : 0);
	else
		check_chunked(data, size, size ? data[0] : 0);
	return 0;
}
