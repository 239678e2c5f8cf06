/* CommonMark fenced code blocks: a pure scanner over (text, len) that
 * returns offsets, never allocates and never reads outside the input. */
#ifndef CODELLM_FENCE_H
#define CODELLM_FENCE_H

#include <stddef.h>

struct fence_block {
	size_t open_off;	/* first byte of the opening fence line */
	size_t label_off;	/* first word of the info string ... */
	size_t label_len;	/* ... 0 when the fence has no info string */
	size_t body_off;	/* first byte of the first content line */
	size_t body_end;	/* one past the last content byte (raw, indent not removed) */
	unsigned indent;	/* indent of the opening fence (0..3) removed from content lines */
	unsigned start_line;	/* 1-based line of the opening fence */
	unsigned end_line;	/* 1-based line of the closing fence, or of the last line when unclosed */
	int closed;		/* 1 when a closing fence was found */
};

/* Where a scan of the blocks stands; zeroed, it is at the start. */
struct fence_scan {
	size_t off;		/* first byte of the next line to look at */
	unsigned nl;		/* '\n' seen before it */
};

/* The next top-level fenced code block of `text` after *s: fills *out,
 * moves *s past the block and returns 1, or returns 0 at the end. Lets
 * a caller walk any number of blocks in constant memory. */
int fence_next(const char *text, size_t len, struct fence_scan *s,
	       struct fence_block *out);

/* Scan `text` for top-level fenced code blocks. Fills at most `max`
 * entries of `out` (out may be NULL when max is 0) and returns the total
 * number of blocks in the text, which may exceed `max`. */
size_t fence_extract(const char *text, size_t len,
		     struct fence_block *out, size_t max);

/* Copy the content of block `b` into `out` (which must hold at least
 * b->body_end - b->body_off bytes), removing up to b->indent leading
 * spaces from each content line as CommonMark does. Returns the number
 * of bytes written. */
size_t fence_content(const char *text, const struct fence_block *b, char *out);

#endif
