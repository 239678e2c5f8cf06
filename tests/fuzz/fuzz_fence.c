/* libFuzzer target for the fence scanner. Besides letting the sanitizers
 * watch for out-of-bounds reads, it re-checks each block against a few
 * facts that follow from the spec and can be tested cheaply:
 *  - every offset is inside the input, body_off <= body_end, lines ordered;
 *  - line numbers agree with a separate count of '\n';
 *  - the opening line really starts with 0-3 spaces and a 3+ fence run,
 *    a closed block's body_end line really is a closing fence, and no
 *    content line before it would have closed the block;
 *  - the count is the same with max=0 and with a small out array, and
 *    the small array holds exactly the first entries of the full scan;
 *  - fence_content fits in body_end - body_off bytes (the buffer is
 *    allocated exactly that big so ASan sees any overflow) and is the raw
 *    body when nothing is to be stripped. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/fence.h"
#include "tests/fuzz/common.h"

#define SMALL 4

/* End of the line starting at `off`, line ending excluded; *next gets the
 * start of the following line. */
static size_t eol(const char *t, size_t len, size_t off, size_t *next)
{
	size_t e = off;

	while (e < len && t[e] != '\n')
		e++;
	*next = e < len ? e + 1 : len;
	if (e < len && e > off && t[e - 1] == '\r')
		e--;
	return e;
}

/* Length of the fence run after 0-3 spaces on the line [off, end), or 0
 * when the line does not start with a run of 3+ of `c`. *after gets the
 * first byte past the run. */
static size_t fence_run(const char *t, size_t off, size_t end, char c,
			size_t *after)
{
	size_t p = off, q;

	while (p < end && p - off < 3 && t[p] == ' ')
		p++;
	for (q = p; q < end && t[q] == c; q++)
		;
	*after = q;
	return q - p >= 3 ? q - p : 0;
}

static int closes(const char *t, size_t off, size_t end, char c, size_t need)
{
	size_t q, run = fence_run(t, off, end, c, &q);

	if (run < need)
		return 0;
	while (q < end && (t[q] == ' ' || t[q] == '\t'))
		q++;
	return q == end;
}

static int same_block(const struct fence_block *a, const struct fence_block *b)
{
	return a->open_off == b->open_off && a->label_off == b->label_off &&
	       a->label_len == b->label_len && a->body_off == b->body_off &&
	       a->body_end == b->body_end && a->indent == b->indent &&
	       a->start_line == b->start_line && a->end_line == b->end_line &&
	       a->closed == b->closed;
}

/* nl[i] is the number of '\n' in t[0..i) */
static void check_block(const char *t, size_t len, const unsigned *nl,
			const struct fence_block *b,
			const struct fence_block *prev)
{
	size_t next, end, after, run, p, blen, got;
	char c, *buf;

	CHECK(b->open_off < len);
	CHECK(b->open_off == 0 || t[b->open_off - 1] == '\n');
	CHECK(b->indent <= 3);
	CHECK(b->body_off <= b->body_end);
	CHECK(b->body_end <= len);
	CHECK(b->body_off > b->open_off);
	CHECK(b->body_off == len || t[b->body_off - 1] == '\n');
	CHECK(b->start_line >= 1 && b->start_line <= b->end_line);
	if (prev) {
		CHECK(prev->closed);
		CHECK(b->open_off > prev->body_end);
		CHECK(b->start_line > prev->end_line);
	}

	/* the opening line */
	end = eol(t, len, b->open_off, &next);
	CHECK(next == b->body_off);
	for (unsigned i = 0; i < b->indent; i++)
		CHECK(t[b->open_off + i] == ' ');
	c = t[b->open_off + b->indent];
	CHECK(c == '`' || c == '~');
	run = fence_run(t, b->open_off, end, c, &after);
	CHECK(run >= 3);
	CHECK(b->label_off >= after);
	CHECK(b->label_off + b->label_len <= end);
	for (p = after; p < b->label_off; p++)
		CHECK(t[p] == ' ' || t[p] == '\t');
	for (p = b->label_off; p < b->label_off + b->label_len; p++) {
		CHECK(t[p] != ' ' && t[p] != '\t' && t[p] != '\n');
		CHECK(c != '`' || t[p] != '`');
	}
	if (b->label_len)
		CHECK(b->label_off + b->label_len == end ||
		      t[b->label_off + b->label_len] == ' ' ||
		      t[b->label_off + b->label_len] == '\t');
	else
		CHECK(b->label_off == end);
	if (c == '`')
		CHECK(!memchr(t + after, '`', end - after));

	/* no content line closes the block early */
	for (p = b->body_off; p < b->body_end; p = next) {
		end = eol(t, len, p, &next);
		CHECK(!closes(t, p, end, c, run));
	}
	if (b->closed) {
		CHECK(b->body_end < len);
		end = eol(t, len, b->body_end, &next);
		CHECK(closes(t, b->body_end, end, c, run));
		CHECK(b->end_line == 1 + nl[b->body_end]);
	} else {
		CHECK(b->body_end == len);
		CHECK(b->end_line == 1 + nl[len - 1]);
	}
	CHECK(b->start_line == 1 + nl[b->open_off]);

	/* exact-size heap buffer: one byte over and ASan reports it */
	blen = b->body_end - b->body_off;
	buf = malloc(blen ? blen : 1);
	if (!buf)
		abort();
	got = fence_content(t, b, buf);
	CHECK(got <= blen);
	if (b->indent == 0) {
		CHECK(got == blen);
		CHECK(memcmp(buf, t + b->body_off, blen) == 0);
	}
	free(buf);
}

/* No line outside the blocks may open one. */
static void check_gaps(const char *t, size_t len, const struct fence_block *all,
		       size_t n)
{
	size_t off = 0, next, end, after;
	size_t i = 0;

	while (off < len) {
		if (i < n && off == all[i].open_off) {
			if (!all[i].closed)
				return;
			eol(t, len, all[i].body_end, &off);
			i++;
			continue;
		}
		CHECK(i >= n || off < all[i].open_off);
		end = eol(t, len, off, &next);
		if (fence_run(t, off, end, '`', &after))
			CHECK(memchr(t + after, '`', end - after));
		CHECK(!fence_run(t, off, end, '~', &after));
		off = next;
	}
	CHECK(i == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	struct fence_block small[SMALL + 1], canary, *all;
	unsigned *nl;
	size_t n0, n, k;

	memset(small, 0x5a, sizeof small);
	memset(&canary, 0x5a, sizeof canary);
	n0 = fence_extract(t, size, NULL, 0);
	n = fence_extract(t, size, small, SMALL);
	CHECK(n0 == n);
	CHECK(n <= size / 3);
	CHECK(memcmp(&small[SMALL], &canary, sizeof canary) == 0);
	k = n < SMALL ? n : SMALL;
	for (size_t i = k; i < SMALL; i++)
		CHECK(memcmp(&small[i], &canary, sizeof canary) == 0);

	all = malloc((n ? n : 1) * sizeof *all);
	if (!all)
		abort();
	CHECK(fence_extract(t, size, all, n) == n);
	for (size_t i = 0; i < k; i++)
		CHECK(same_block(&small[i], &all[i]));
	nl = malloc((size + 1) * sizeof *nl);
	if (!nl)
		abort();
	nl[0] = 0;
	for (size_t i = 0; i < size; i++)
		nl[i + 1] = nl[i] + (t[i] == '\n');
	for (size_t i = 0; i < n; i++)
		check_block(t, size, nl, &all[i], i ? &all[i - 1] : NULL);
	check_gaps(t, size, all, n);
	free(nl);
	free(all);
	return 0;
}
