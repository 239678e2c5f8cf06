/* Tests for sandbox/capture.c: the head kept for stdout and taps, the
 * tail kept for stderr, and the count of bytes not kept, across writes
 * that meet the limit before, at and past it. Table-driven: each row
 * writes its chunks in order and states what must remain. */
#include <string.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

struct row {
	const char *name;
	int tail;		/* keep the last bytes */
	size_t limit;
	const char *chunks[4];	/* written in order, NULL ends */
	const char *kept;
	unsigned long long lost;
};

static const struct row rows[] = {
	{ "head: nothing written", 0, 4, { NULL }, "", 0 },
	{ "head: under the limit", 0, 4, { "ab", NULL }, "ab", 0 },
	{ "head: exactly the limit", 0, 4, { "abcd", NULL }, "abcd", 0 },
	{ "head: one past", 0, 4, { "abcde", NULL }, "abcd", 1 },
	{ "head: the write that meets it is cut", 0, 4, { "ab", "cdef", NULL }, "abcd", 2 },
	{ "head: writes after it are lost whole", 0, 4, { "abcd", "ef", "g", NULL }, "abcd", 3 },
	{ "head: limit 0 keeps nothing", 0, 0, { "abc", NULL }, "", 3 },
	{ "head: empty writes", 0, 4, { "", "a", "", NULL }, "a", 0 },
	{ "tail: under the limit", 1, 4, { "ab", "c", NULL }, "abc", 0 },
	{ "tail: exactly the limit", 1, 4, { "ab", "cd", NULL }, "abcd", 0 },
	{ "tail: the front is dropped", 1, 4, { "abc", "de", NULL }, "bcde", 1 },
	{ "tail: one write past the limit", 1, 4, { "abcdef", NULL }, "cdef", 2 },
	{ "tail: a write of the limit replaces all", 1, 4, { "ab", "wxyz", NULL }, "wxyz", 2 },
	{ "tail: a long write after a short", 1, 4, { "ab", "uvwxyz", NULL }, "wxyz", 4 },
	{ "tail: many small writes", 1, 3, { "a", "b", "c", "d" }, "bcd", 1 },
	{ "tail: limit 0 keeps nothing", 1, 0, { "abc", "d", NULL }, "", 4 },
};

static void run_row(const struct row *r)
{
	struct sbx_capture c = {0};
	unsigned long long seen = 0;

	for (size_t k = 0; k < 4 && r->chunks[k]; k++) {
		size_t n = strlen(r->chunks[k]);

		if (r->tail)
			sbx_capture_tail(&c, r->limit, r->chunks[k], n);
		else
			sbx_capture_head(&c, r->limit, r->chunks[k], n);
		seen += n;
	}
	tap_ok(c.len == strlen(r->kept) && (!c.len || !memcmp(c.p, r->kept, c.len)) &&
	       c.lost == r->lost && c.len + c.lost == seen && c.size <= r->limit && !c.oom,
	       "%s: kept \"%.*s\", lost %llu", r->name, (int)c.len, c.p ? c.p : "",
	       (unsigned long long)c.lost);
	sbx_capture_free(&c);
	tap_ok(!c.p && !c.len && !c.lost, "%s: freed", r->name);
}

/* A large stream through a small tail: the kept bytes are the stream's
 * last, whatever the write sizes. */
static void test_long_tail(void)
{
	struct sbx_capture c = {0};
	char buf[1000];
	int ok = 1;

	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)('a' + i % 26);
	for (size_t off = 0, step = 1; off < sizeof buf; off += step, step = step % 37 + 1)
		sbx_capture_tail(&c, 100, buf + off,
				 off + step <= sizeof buf ? step : sizeof buf - off);
	ok = c.len == 100 && !memcmp(c.p, buf + 900, 100) && c.lost == 900;
	tap_ok(ok, "tail: 1000 bytes in uneven writes keep the last 100");
	sbx_capture_free(&c);
}

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		run_row(&rows[i]);
	test_long_tail();
	return tap_done();
}
