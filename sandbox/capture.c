/* Capped captures of a block's streams. Memory grows with what is kept,
 * never past the limit: a quiet block costs nothing. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"

static int reserve(struct sbx_capture *c, size_t want, size_t limit)
{
	size_t size = c->size ? c->size : 256;
	char *p;

	if (want <= c->size)
		return 0;
	while (size < want)
		size = size > SIZE_MAX / 2 ? want : 2 * size;
	if (size > limit)
		size = limit;
	p = realloc(c->p, size);
	if (!p) {
		c->oom = 1;
		return -1;
	}
	c->p = p;
	c->size = size;
	return 0;
}

void sbx_capture_head(struct sbx_capture *c, size_t limit, const void *data, size_t n)
{
	size_t take = c->len < limit ? limit - c->len : 0;

	if (take > n)
		take = n;
	if (take && reserve(c, c->len + take, limit) < 0)
		take = 0;
	if (take)
		memcpy(c->p + c->len, data, take);
	c->len += take;
	c->lost += n - take;
}

/* stderr keeps its last bytes: the end of a traceback is what explains
 * a failure. */
void sbx_capture_tail(struct sbx_capture *c, size_t limit, const void *data, size_t n)
{
	const char *s = data;

	if (n >= limit) {
		/* the new bytes alone fill the capture */
		c->lost += c->len + (n - limit);
		c->len = 0;
		s += n - limit;
		n = limit;
	} else if (c->len + n > limit) {
		size_t drop = c->len + n - limit;

		memmove(c->p, c->p + drop, c->len - drop);
		c->len -= drop;
		c->lost += drop;
	}
	if (n && reserve(c, c->len + n, limit) < 0) {
		c->lost += n;
		return;
	}
	if (n)
		memcpy(c->p + c->len, s, n);
	c->len += n;
}

void sbx_capture_free(struct sbx_capture *c)
{
	free(c->p);
	memset(c, 0, sizeof *c);
}
