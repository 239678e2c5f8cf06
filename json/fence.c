/* CommonMark 0.31 §4.5 fenced code blocks, top level only: block quotes,
 * list items and the like are not parsed, so their lines are just text.
 * Every line is looked at a bounded number of times (once as a possible
 * opening fence or once as a possible closing fence), which keeps the scan
 * linear, and nothing is read outside [text, text + len). */
#include <string.h>

#include "json/fence.h"

struct line {
	size_t start;	/* first byte of the line */
	size_t end;	/* one past the last byte, line ending excluded */
	size_t next;	/* first byte of the following line, or len */
	unsigned nl;	/* 1 when the line ends in '\n' (line numbers count these) */
};

/* Only "\n" and "\r\n" end a line: a lone '\r' stays ordinary text, which
 * is simpler and keeps line numbers equal to the count of '\n'. */
static void line_at(const char *text, size_t len, size_t off, struct line *l)
{
	const char *nl = memchr(text + off, '\n', len - off);

	l->start = off;
	if (!nl) {
		l->end = l->next = len;
		l->nl = 0;
		return;
	}
	l->next = (size_t)(nl - text) + 1;
	l->end = l->next - 1;
	if (l->end > off && text[l->end - 1] == '\r')
		l->end--;
	l->nl = 1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Up to three spaces of indent are allowed before a fence. Tabs need no
 * special case: a tab there reaches column 4, and since it is not a fence
 * character the caller rejects the line anyway; likewise a fourth space. */
static size_t skip_indent(const char *text, const struct line *l)
{
	size_t p = l->start;

	while (p < l->end && p - l->start < 3 && text[p] == ' ')
		p++;
	return p;
}

static size_t run_of(const char *text, size_t p, size_t end, char c)
{
	size_t q = p;

	while (q < end && text[q] == c)
		q++;
	return q - p;
}

/* Fills the opening-fence fields of *b and returns the fence length, or 0
 * when the line does not open a block. */
static size_t open_fence(const char *text, const struct line *l,
			 struct fence_block *b, char *ch)
{
	size_t p = skip_indent(text, l), run, q, w;
	char c;

	if (p >= l->end)
		return 0;
	c = text[p];
	if (c != '`' && c != '~')
		return 0;
	run = run_of(text, p, l->end, c);
	if (run < 3)
		return 0;
	q = p + run;
	/* otherwise ``` a`b ``` style inline code at a line start would open
	 * a block; tildes have no such ambiguity */
	if (c == '`' && memchr(text + q, '`', l->end - q))
		return 0;
	while (q < l->end && is_blank(text[q]))
		q++;
	w = q;
	while (w < l->end && !is_blank(text[w]))
		w++;
	b->open_off = l->start;
	b->indent = (unsigned)(p - l->start);
	b->label_off = q;
	b->label_len = w - q;
	*ch = c;
	return run;
}

static int close_fence(const char *text, const struct line *l, char c,
		       size_t need)
{
	size_t p = skip_indent(text, l), run = run_of(text, p, l->end, c), q;

	if (run < need)
		return 0;
	for (q = p + run; q < l->end && is_blank(text[q]); q++)
		;
	return q == l->end;
}

int fence_next(const char *text, size_t len, struct fence_scan *s,
	       struct fence_block *out)
{
	size_t off = s->off, run = 0;
	unsigned line = s->nl + 1;
	struct fence_block b;
	struct line l;
	char c;

	while (off < len && !run) {
		line_at(text, len, off, &l);
		run = open_fence(text, &l, &b, &c);
		b.start_line = line;
		off = l.next;
		line += l.nl;
	}
	if (!run) {
		s->off = off;
		s->nl = line - 1;
		return 0;
	}
	b.body_off = off;
	b.closed = 0;
	while (off < len) {
		line_at(text, len, off, &l);
		if (close_fence(text, &l, c, run)) {
			b.body_end = off;
			b.end_line = line;
			b.closed = 1;
			off = l.next;
			line += l.nl;
			break;
		}
		off = l.next;
		line += l.nl;
	}
	if (!b.closed) {
		/* off == len > 0 here and `line` is 1 + the number of
		 * '\n' in the input; a final '\n' ends the last line
		 * rather than starting an empty one */
		b.body_end = len;
		b.end_line = text[len - 1] == '\n' ? line - 1 : line;
	}
	s->off = off;
	s->nl = line - 1;
	*out = b;
	return 1;
}

size_t fence_extract(const char *text, size_t len, struct fence_block *out,
		     size_t max)
{
	struct fence_scan s = {0};
	struct fence_block b;
	size_t count = 0;

	while (fence_next(text, len, &s, &b)) {
		if (count < max)
			out[count] = b;
		count++;
	}
	return count;
}

size_t fence_content(const char *text, const struct fence_block *b, char *out)
{
	size_t p = b->body_off, w = 0, n;
	const char *nl;
	unsigned k;

	while (p < b->body_end) {
		for (k = 0; k < b->indent && p < b->body_end && text[p] == ' '; k++)
			p++;
		nl = memchr(text + p, '\n', b->body_end - p);
		n = nl ? (size_t)(nl - (text + p)) + 1 : b->body_end - p;
		memcpy(out + w, text + p, n);
		w += n;
		p += n;
	}
	return w;
}
