/* The --check dry run over fleet role notes (SPEC §9; the seed note's
 * "Two migration constraints roles must satisfy"). Only as much YAML is
 * read as the checks need: top-level keys of the frontmatter, their
 * scalar, inline-list or block-list values. Anything else in the
 * frontmatter is skipped, never trusted and never read past `len`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/fence.h"
#include "json/jstr.h"
#include "json/registry.h"
#include "json/rolecheck.h"

/* Caps on what the report echoes back (labels, key values): a note is
 * operator input, and one absurd line should not flood the terminal. */
#define SHOW_LABEL 64
#define SHOW_LIST 200

enum { K_TOOLS, K_WRITE_PATTERNS, K_ENV_PASSTHROUGH, K_ENV_PREFIX, NKEYS };

static const char *const key_names[NKEYS] = {
	"tools", "write_patterns", "env_passthrough", "env_prefix",
};

struct key {
	unsigned line;		/* where it is (last) defined, 0 when absent */
	unsigned first;		/* where it is first defined */
	size_t items;		/* non-empty items (a scalar is one) */
	int has_write;		/* names write_note or patch_note */
	int has_finish;
	int cut;		/* list was shortened */
	struct jbuf list;	/* the items, for the report */
};

struct note {
	const char *t;
	size_t len;
	int fm;			/* the first line is --- */
	int fm_closed;		/* ... and a later --- line closes it */
	unsigned fm_last;	/* line of the closing --- */
	size_t body_off;	/* where the markdown body starts */
	unsigned body_line;	/* its line in the whole file */
	struct key k[NKEYS];
};

struct ln {
	size_t start, end, next;	/* end excludes "\n" or "\r\n" */
};

/* Same line rules as json/fence.c: only "\n" and "\r\n" end a line, so
 * the line numbers here and the fence scanner's agree. off < len. */
static void line_get(const char *t, size_t len, size_t off, struct ln *l)
{
	const char *nl = memchr(t + off, '\n', len - off);

	l->start = off;
	if (!nl) {
		l->end = l->next = len;
		return;
	}
	l->next = (size_t)(nl - t) + 1;
	l->end = l->next - 1;
	if (l->end > off && t[l->end - 1] == '\r')
		l->end--;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

static size_t skip_blanks(const char *t, size_t p, size_t end)
{
	while (p < end && blank(t[p]))
		p++;
	return p;
}

static size_t trim_end(const char *t, size_t start, size_t end)
{
	while (end > start && blank(t[end - 1]))
		end--;
	return end;
}

static int is_delim(const char *t, const struct ln *l)
{
	return l->end - l->start >= 3 && !memcmp(t + l->start, "---", 3) &&
	       skip_blanks(t, l->start + 3, l->end) == l->end;
}

/* End of the value before a YAML comment: a '#' that starts the value
 * or follows a blank, outside quotes. */
static size_t strip_comment(const char *t, size_t p, size_t end)
{
	size_t start = p;
	char q = 0;

	for (; p < end; p++) {
		if (q) {
			if (t[p] == q)
				q = 0;
		} else if (t[p] == '"' || t[p] == '\'') {
			q = t[p];
		} else if (t[p] == '#' && (p == start || blank(t[p - 1]))) {
			break;
		}
	}
	return trim_end(t, start, p);
}

/* Control bytes become \xHH so a hostile name or label cannot forge
 * report lines; at most `max` input bytes are shown. */
static void put_safe(struct jbuf *b, const char *s, size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, from = 0, shown = n < max ? n : max;

	for (i = 0; i < shown; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != 0x7f)
			continue;
		jbuf_append(b, s + from, i - from);
		jbuf_append(b, (char[]){ '\\', 'x', hex[c >> 4], hex[c & 15] }, 4);
		from = i + 1;
	}
	jbuf_append(b, s + from, shown - from);
	if (shown < n)
		jbuf_puts(b, "...");
}

static void item(struct key *k, const char *t, size_t s, size_t e)
{
	s = skip_blanks(t, s, e);
	e = trim_end(t, s, e);
	if (e - s >= 2 && (t[s] == '"' || t[s] == '\'') && t[e - 1] == t[s]) {
		s++;
		e--;
	}
	if (s == e)
		return;
	k->items++;
	if ((e - s == 10 && !memcmp(t + s, "write_note", 10)) ||
	    (e - s == 10 && !memcmp(t + s, "patch_note", 10)))
		k->has_write = 1;
	if (e - s == 6 && !memcmp(t + s, "finish", 6))
		k->has_finish = 1;
	if (k->cut)
		return;		/* counted, not shown */
	if (k->list.len >= SHOW_LIST) {
		jbuf_puts(&k->list, ", ...");
		k->cut = 1;
		return;
	}
	if (k->list.len)
		jbuf_puts(&k->list, ", ");
	put_safe(&k->list, t + s, e - s, SHOW_LABEL);
}

/* Items of a flow sequence "[a, 'b', c]" from s (after the '['); returns
 * 1 when the ']' was seen, 0 when the sequence goes on on later lines. */
static int flow_items(struct key *k, const char *t, size_t s, size_t e)
{
	size_t p, from = s;
	char q = 0;

	for (p = s; p < e; p++) {
		if (q) {
			if (t[p] == q)
				q = 0;
		} else if (t[p] == '"' || t[p] == '\'') {
			q = t[p];
		} else if (t[p] == ',' || t[p] == ']') {
			item(k, t, from, p);
			from = p + 1;
			if (t[p] == ']')
				return 1;
		}
	}
	item(k, t, from, e);
	return 0;
}

/* A top-level "key:" line: the key and where its value starts, or -1.
 * The ':' must be followed by a blank or the line's end, as YAML wants
 * ("url: http://x" has one key, "a:b" none). */
static int parse_key(const char *t, const struct ln *l, size_t *ks, size_t *ke,
		     size_t *vs)
{
	size_t p = l->start;

	if (t[p] == '"' || t[p] == '\'') {
		const char *q = memchr(t + p + 1, t[p], l->end - p - 1);

		if (!q)
			return -1;
		*ks = p + 1;
		*ke = (size_t)(q - t);
		p = skip_blanks(t, *ke + 1, l->end);
		if (p >= l->end || t[p] != ':' || (p + 1 < l->end && !blank(t[p + 1])))
			return -1;
		*vs = p + 1;
		return 0;
	}
	for (; p < l->end; p++) {
		if (t[p] == ':' && (p + 1 == l->end || blank(t[p + 1]))) {
			*ks = l->start;
			*ke = trim_end(t, l->start, p);
			*vs = p + 1;
			return 0;
		}
		if (t[p] == '#' && p > l->start && blank(t[p - 1]))
			return -1;
	}
	return -1;
}

static struct key *tracked(struct note *n, const char *t, size_t ks, size_t ke)
{
	for (int i = 0; i < NKEYS; i++)
		if (strlen(key_names[i]) == ke - ks &&
		    !memcmp(t + ks, key_names[i], ke - ks))
			return &n->k[i];
	return NULL;
}

/* Reads the keys between line 2 and the closing --- (at `close`). */
static void read_keys(struct note *n, size_t off, size_t close)
{
	const char *t = n->t;
	struct key *cur = NULL;
	int open = 0, flow = 0;	/* cur takes "- item" lines / flow continuation */
	unsigned line = 2;
	struct ln l;

	for (; off < close; off = l.next, line++) {
		size_t p, ks, ke, vs, ve;
		struct key *k;

		line_get(t, close, off, &l);
		p = skip_blanks(t, l.start, l.end);
		if (p == l.end || t[p] == '#')
			continue;	/* blank or comment: belongs to no key */
		if (p > l.start || (t[p] == '-' && (p + 1 == l.end || blank(t[p + 1])))) {
			/* indented, or a "- item" at column 0 (YAML's compact
			 * block list under a key): the current key's value */
			if (!cur)
				continue;
			ve = strip_comment(t, p, l.end);
			if (flow)
				flow = !flow_items(cur, t, p, ve);
			else if (open && t[p] == '-' && (p + 1 == l.end || blank(t[p + 1])))
				item(cur, t, p + 1, ve);
			continue;
		}
		cur = NULL;
		open = flow = 0;
		if (parse_key(t, &l, &ks, &ke, &vs) < 0 || !(k = tracked(n, t, ks, ke)))
			continue;
		if (k->line) {
			/* YAML parsers refuse a repeated key or keep the last:
			 * reported, and the last one is what is checked */
			k->items = 0;
			k->has_write = k->has_finish = k->cut = 0;
			k->list.len = 0;
		} else {
			k->first = line;
		}
		k->line = line;
		cur = k;
		vs = skip_blanks(t, vs, l.end);
		ve = strip_comment(t, vs, l.end);
		if (vs == ve)
			open = 1;
		else if (t[vs] == '[')
			flow = !flow_items(k, t, vs + 1, ve);
		else if (!((ve - vs == 1 && t[vs] == '~') ||
			   (ve - vs == 4 && (!memcmp(t + vs, "null", 4) ||
					     !memcmp(t + vs, "Null", 4) ||
					     !memcmp(t + vs, "NULL", 4)))))
			item(k, t, vs, ve);
	}
}

static void read_frontmatter(struct note *n)
{
	const char *t = n->t;
	size_t off = 0, first;
	unsigned line = 2;
	struct ln l;

	n->body_line = 1;
	/* a UTF-8 byte order mark before the opening --- is an editor's */
	if (n->len >= 3 && !memcmp(t, "\xef\xbb\xbf", 3))
		off = 3;
	if (off >= n->len)
		return;
	line_get(t, n->len, off, &l);
	if (!is_delim(t, &l))
		return;
	n->fm = 1;
	for (first = off = l.next; off < n->len; off = l.next, line++) {
		line_get(t, n->len, off, &l);
		if (is_delim(t, &l)) {
			n->fm_closed = 1;
			n->fm_last = line;
			n->body_off = l.next;
			n->body_line = line + 1;
			read_keys(n, first, l.start);
			return;
		}
	}
	/* never closed: no key can be trusted; the whole file is the body */
}

static void prefix(struct jbuf *b, const char *name)
{
	put_safe(b, name, strlen(name), 4096);
	jbuf_puts(b, ": ");
}

/* Starts a problem line in *pb; the caller writes the rest and "\n". */
static void problem(struct jbuf *pb, const char *name, int *count)
{
	prefix(pb, name);
	jbuf_puts(pb, "problem: ");
	(*count)++;
}

static const char *list_of(struct key *k)
{
	const char *s = jbuf_cstr(&k->list);

	return s ? s : "";
}

static void check_keys(struct note *n, const char *name, struct jbuf *out,
		       struct jbuf *pb, int *count)
{
	struct key *tools = &n->k[K_TOOLS], *wp = &n->k[K_WRITE_PATTERNS];
	int writes = !tools->line || !tools->items || tools->has_write;

	prefix(out, name);
	if (!tools->line)
		jbuf_puts(out, "role: tools=default");
	else
		jbuf_printf(out, "role: tools=[%s]%s", list_of(tools),
			    tools->items ? "" : " (default)");
	jbuf_printf(out, " writes=%s write_patterns=", writes ? "yes" : "no");
	if (!wp->line)
		jbuf_puts(out, "none\n");
	else
		jbuf_printf(out, "%zu\n", wp->items);

	for (int i = 0; i < NKEYS; i++) {
		if (n->k[i].first == n->k[i].line)
			continue;
		problem(pb, name, count);
		jbuf_printf(pb, "%s (line %u): defined again on line %u; YAML "
			    "parsers refuse that or keep only one (checked: the last)\n",
			    key_names[i], n->k[i].first, n->k[i].line);
	}
	for (int i = K_ENV_PASSTHROUGH; i <= K_ENV_PREFIX; i++) {
		if (!n->k[i].line)
			continue;
		problem(pb, name, count);
		jbuf_printf(pb, "%s (line %u): [%s]: no environment reaches code "
			    "under codellm (secrets stay out of the request); the role "
			    "cannot migrate: remove the key or keep the role in-process\n",
			    key_names[i], n->k[i].line, list_of(&n->k[i]));
	}
	if (tools->items && !tools->has_finish) {
		problem(pb, name, count);
		/* fleet declares the role's tools to codellm, which answers
		 * with tool calls only when finish is among them (SPEC §4) */
		jbuf_printf(pb, "tools (line %u): lacks finish; codellm answers with "
			    "tool calls only when finish is declared, so no change "
			    "would be applied\n", tools->line);
	}
	if (writes && !wp->items) {
		problem(pb, name, count);
		if (wp->line)
			jbuf_printf(pb, "write_patterns (line %u): empty for a role that "
				    "writes; fleet's scope denies every change\n", wp->line);
		else
			jbuf_puts(pb, "write_patterns: missing for a role that writes; "
				  "fleet's scope denies every change\n");
	}
}

static void check_blocks(struct note *n, const char *name,
			 const struct registry *reg, size_t max_blocks,
			 struct jbuf *out, struct jbuf *pb, int *count, int *oom)
{
	const char *body = n->t + n->body_off;
	size_t blen = n->len - n->body_off;
	size_t nb = fence_extract(body, blen, NULL, 0), known = 0;
	struct fence_block *fb = calloc(nb ? nb : 1, sizeof *fb);
	unsigned base = n->body_line - 1;

	if (!fb) {
		*oom = 1;
		return;
	}
	fence_extract(body, blen, fb, nb);
	for (size_t i = 0; i < nb; i++) {
		const struct fence_block *b = &fb[i];
		const struct interp *it = b->label_len ?
			reg_lookup(reg, body + b->label_off, b->label_len) : NULL;

		prefix(out, name);
		jbuf_printf(out, "block %zu label=", i);
		if (b->label_len)
			put_safe(out, body + b->label_off, b->label_len, SHOW_LABEL);
		else
			jbuf_puts(out, "(none)");
		jbuf_printf(out, " lang=%s line %u-%u%s: ", it ? it->name : "unknown",
			    base + b->start_line, base + b->end_line,
			    b->closed ? "" : " (unclosed)");
		if (!it) {
			/* codellm skips what its registry does not know: prose */
			jbuf_puts(out, b->label_len ? "prose, skipped\n" :
				  "prose, skipped (no label)\n");
			continue;
		}
		known++;
		if (it->allowed) {
			jbuf_puts(out, "runs\n");
		} else if (!reg->any_allowed) {
			/* one cause, reported once below */
			jbuf_puts(out, "not run: execution disabled\n");
		} else {
			jbuf_printf(out, "not run: %s is not in --allowed-programs\n", it->name);
			problem(pb, name, count);
			jbuf_printf(pb, "block %zu (line %u-%u): %s is not in "
				    "--allowed-programs; codellm would refuse the run (403)\n",
				    i, base + b->start_line, base + b->end_line, it->name);
		}
	}
	free(fb);
	if (known && !reg->any_allowed) {
		problem(pb, name, count);
		jbuf_printf(pb, "--allowed-programs is empty: code execution is "
			    "disabled, none of the %zu code block(s) would run\n", known);
	}
	if (!known) {
		problem(pb, name, count);
		if (nb)
			jbuf_printf(pb, "no runnable block: none of the %zu fenced "
				    "block(s) has a label the registry knows; codellm "
				    "would refuse the run (400)\n", nb);
		else
			jbuf_puts(pb, "no runnable block: the note has no fenced "
				  "block; codellm would refuse the run (400)\n");
	}
	if (max_blocks && known > max_blocks) {
		problem(pb, name, count);
		jbuf_printf(pb, "%zu code blocks, more than --max-blocks %zu; "
			    "codellm would refuse the run (400)\n", known, max_blocks);
	}
}

int rc_check_note(const char *name, const char *text, size_t len,
		  const struct registry *reg, size_t max_blocks,
		  struct jbuf *out)
{
	struct note n = { .t = text ? text : "", .len = text ? len : 0 };
	struct jbuf pb = {0};	/* problem lines, put after the facts */
	int count = 0, oom = 0;

	read_frontmatter(&n);
	prefix(out, name);
	if (!n.fm) {
		jbuf_puts(out, "frontmatter: none\n");
	} else if (n.fm_closed) {
		jbuf_printf(out, "frontmatter: line 1-%u\n", n.fm_last);
	} else {
		jbuf_puts(out, "frontmatter: unclosed\n");
		problem(&pb, name, &count);
		jbuf_puts(&pb, "frontmatter (line 1): opened by --- but no --- line "
			  "closes it; no key was read, the whole file is taken as the body\n");
	}
	if (!n.fm || n.fm_closed)
		check_keys(&n, name, out, &pb, &count);
	check_blocks(&n, name, reg, max_blocks, out, &pb, &count, &oom);
	jbuf_append(out, pb.p, pb.len);
	prefix(out, name);
	if (count)
		jbuf_printf(out, "%d problem(s)\n", count);
	else
		jbuf_puts(out, "ok\n");
	for (int i = 0; i < NKEYS; i++) {
		oom |= n.k[i].list.oom;
		jbuf_free(&n.k[i].list);
	}
	oom |= pb.oom;
	jbuf_free(&pb);
	return oom || out->oom ? -1 : count;
}

int rc_unreadable(const char *name, const char *why, struct jbuf *out)
{
	prefix(out, name);
	jbuf_puts(out, "problem: cannot read: ");
	put_safe(out, why, strlen(why), 512);
	jbuf_puts(out, "\n");
	prefix(out, name);
	jbuf_puts(out, "1 problem(s)\n");
	return out->oom ? -1 : 1;
}

/* ---- the --check driver: notes read from files ---- */

/* A role note, whole, into a malloc'd *text (NUL-terminated for safety
 * only). Anything that is not a readable file of at most `cap` bytes is
 * refused with the reason in why. */
static int read_note(const char *path, size_t cap, char **text, size_t *len,
		     char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t n = 0, size = 65536;
	struct stat st;
	char *p = NULL, *q;
	ssize_t r;

	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail;
	}
	/* st_size is a hint only: a pipe has none, a file may grow */
	if (S_ISREG(st.st_mode) && st.st_size >= 0 && (size_t)st.st_size < cap)
		size = (size_t)st.st_size + 1;
	if (!(p = malloc(size + 1)))
		goto fail;
	while (n <= cap) {
		if (n == size) {
			size = size > cap / 2 ? cap + 1 : size * 2;
			if (!(q = realloc(p, size + 1)))
				goto fail;
			p = q;
		}
		r = read(fd, p + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > cap) {
		snprintf(why, whylen, "larger than %zu bytes", cap);
		free(p);
		return -1;
	}
	p[n] = '\0';
	*text = p;
	*len = n;
	return 0;
fail:
	snprintf(why, whylen, "%s", strerror(errno));
	if (fd >= 0)
		close(fd);
	free(p);
	return -1;
}

/* --check FILE...: the dry run an operator does before moving fleet role
 * notes to codellm (SPEC §9). Nothing runs; the report is
 * json/rolecheck.c's. Exit status: 0 nothing flagged, 1 something
 * flagged (an unreadable file too), 2 no check possible. */
int rc_check_files(char *const *paths, int n, const struct registry *reg,
		   size_t max_blocks, FILE *out)
{
	/* --max-request-bytes' default: a bigger note is no request anyway */
	const size_t cap = 8u << 20;
	int flagged = 0, failed = 0;

	for (int i = 0; i < n; i++) {
		struct jbuf b = {0};
		char *text = NULL, why[256];
		size_t len = 0;
		int k;

		if (read_note(paths[i], cap, &text, &len, why, sizeof why) < 0)
			k = rc_unreadable(paths[i], why, &b);
		else
			k = rc_check_note(paths[i], text, len, reg, max_blocks, &b);
		if (k < 0)
			failed = 1;
		else if (k > 0)
			flagged = 1;
		fwrite(b.p, 1, b.len, out);
		jbuf_free(&b);
		free(text);
	}
	if (fflush(out) != 0 || ferror(out))
		failed = 1;
	return failed ? -1 : flagged;
}
