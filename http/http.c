/* HTTP/1.x request head parser, body framing rules and chunked decoder
 * (RFC 9112). Strict on purpose: this process sits directly on a socket,
 * and every leniency we allow is a chance for a front proxy and us to
 * disagree about where a message ends. */
#include "http/http.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 §5.6.2 tchar. */
static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return 1;
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'':
	case '*': case '+': case '-': case '.': case '^': case '_':
	case '`': case '|': case '~':
		return 1;
	}
	return 0;
}

/* VCHAR or obs-text: what a field value may hold besides SP/HTAB. */
static int is_field_vchar(unsigned char c)
{
	return c >= 0x21 && c != 0x7f;
}

static int is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

int http_hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* Our own ASCII folding: strncasecmp follows the locale. */
int http_case_eq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ascii_lower((unsigned char)a[i]) !=
		    ascii_lower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* Consume CRLF or a bare LF at *pos (RFC 9112 §2.2 lets a recipient
 * accept the latter); a CR followed by anything else is malformed. */
static int line_end(const unsigned char *p, size_t len, size_t *pos)
{
	size_t i = *pos;

	if (i == len)
		return HTTP_INCOMPLETE;
	if (p[i] == '\n') {
		*pos = i + 1;
		return 0;
	}
	if (p[i] != '\r')
		return HTTP_BAD;
	if (i + 1 == len)
		return HTTP_INCOMPLETE;
	if (p[i + 1] != '\n')
		return HTTP_BAD;
	*pos = i + 2;
	return 0;
}

/* A token (the method, a field name) at *pos up to the byte `stop`;
 * *pos is left on `stop`. */
static int parse_token(const unsigned char *p, size_t len, size_t *pos, unsigned char stop)
{
	size_t i = *pos, start = i;

	while (i < len && is_tchar(p[i]))
		i++;
	if (i == len)
		return HTTP_INCOMPLETE;
	/* §5.1: no whitespace between a field name and its colon, ever */
	if (p[i] != stop || i == start)
		return HTTP_BAD;
	*pos = i;
	return 0;
}

/* method SP request-target SP HTTP/1.x line-end (RFC 9112 §3), after
 * the empty lines §2.2 lets a client send first (CRLF after a body). */
static int parse_request_line(const char *buf, size_t len, size_t *pos,
			      struct http_request *req)
{
	static const char version[] = "HTTP/1.";
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = *pos, start;
	int r;

	for (;;) {
		if (i == len)
			return HTTP_INCOMPLETE;
		if (p[i] != '\r' && p[i] != '\n')
			break;
		if ((r = line_end(p, len, &i)) != 0)
			return r;
	}
	start = i;
	if ((r = parse_token(p, len, &i, ' ')) != 0)
		return r;
	req->method = buf + start;
	req->method_len = i++ - start;
	start = i;
	while (i < len && p[i] >= 0x21 && p[i] <= 0x7e)
		i++;
	if (i == len)
		return HTTP_INCOMPLETE;
	if (p[i] != ' ' || i == start)
		return HTTP_BAD;
	req->target = buf + start;
	req->target_len = i++ - start;
	for (size_t k = 0; k < sizeof version - 1; k++, i++) {
		if (i == len)
			return HTTP_INCOMPLETE;
		if (p[i] != (unsigned char)version[k])
			return HTTP_BAD;
	}
	if (i == len)
		return HTTP_INCOMPLETE;
	if (p[i] != '0' && p[i] != '1')
		return HTTP_BAD;
	req->minor_version = p[i++] - '0';
	*pos = i;
	return line_end(p, len, pos);
}

/* name ":" OWS value OWS line-end (RFC 9112 §5), into *h. */
static int parse_header_line(const char *buf, size_t len, size_t *pos, struct http_header *h)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = *pos, start = i, end;
	int r;

	if ((r = parse_token(p, len, &i, ':')) != 0)
		return r;
	h->name = buf + start;
	h->name_len = i++ - start;
	while (i < len && is_ows(p[i]))
		i++;
	start = end = i;
	for (;;) {
		if (i == len)
			return HTTP_INCOMPLETE;
		if (is_field_vchar(p[i]))
			end = ++i;
		else if (is_ows(p[i]))
			i++;
		else
			break;
	}
	if ((r = line_end(p, len, &i)) != 0)
		return r;
	h->value = buf + start;
	h->value_len = end - start;
	*pos = i;
	return 0;
}

/* Stateless: the caller re-runs it over the whole buffer as bytes
 * arrive. Each check fires on the first byte that can decide it, so a
 * garbage request is refused without waiting for more input. */
int http_parse_head(const char *buf, size_t len, struct http_request *req)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0;
	int r;

	/* The return value is an int; a head that long never completes. */
	if (len > INT_MAX)
		len = INT_MAX;
	memset(req, 0, offsetof(struct http_request, headers));
	req->num_headers = 0;
	if ((r = parse_request_line(buf, len, &i, req)) != 0)
		return r;
	for (;;) {
		if (i == len)
			return HTTP_INCOMPLETE;
		if (p[i] == '\r' || p[i] == '\n') {
			if ((r = line_end(p, len, &i)) != 0)
				return r;
			return (int)i;
		}
		/* obs-fold (RFC 9112 §5.2), or whitespace ahead of the first
		 * field line (§2.2), which a recipient must not merge. */
		if (is_ows(p[i]))
			return HTTP_BAD;
		/* A 65th line has started: no need to see the rest of it. */
		if (req->num_headers == HTTP_MAX_HEADERS)
			return HTTP_TOO_MANY;
		if ((r = parse_header_line(buf, len, &i, &req->headers[req->num_headers])) != 0)
			return r;
		req->num_headers++;
	}
}

const struct http_header *http_find_header(const struct http_request *req,
					   const char *name, size_t *count)
{
	const struct http_header *first = NULL;
	size_t n = strlen(name), matches = 0;

	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];

		if (h->name_len != n || !http_case_eq(h->name, name, n))
			continue;
		if (!first)
			first = h;
		matches++;
	}
	if (count)
		*count = matches;
	return first;
}

/* Walks every Transfer-Encoding field as one comma list (RFC 9110
 * §5.3 lets a sender split a list over several lines). Empty elements
 * are ignored as §5.6.1.2 asks; what remains must be the single coding
 * "chunked", the only one we can undo. */
static int te_is_chunked_only(const struct http_request *req)
{
	static const char chunked[] = "chunked";
	size_t codings = 0;
	int ok = 0;

	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];
		size_t j = 0;

		if (h->name_len != sizeof "transfer-encoding" - 1 ||
		    !http_case_eq(h->name, "transfer-encoding", h->name_len))
			continue;
		while (j <= h->value_len) {
			size_t s, e;

			while (j < h->value_len && is_ows((unsigned char)h->value[j]))
				j++;
			s = j;
			while (j < h->value_len && h->value[j] != ',')
				j++;
			e = j;
			while (e > s && is_ows((unsigned char)h->value[e - 1]))
				e--;
			if (e > s) {
				codings++;
				ok = e - s == sizeof chunked - 1 &&
					http_case_eq(h->value + s, chunked, e - s);
			}
			j++;	/* past the comma, or past the end */
		}
	}
	return codings == 1 && ok;
}

int http_framing(const struct http_request *req, struct http_framing *ret)
{
	const struct http_header *cl;
	size_t n_te, n_cl;

	memset(ret, 0, sizeof *ret);
	http_find_header(req, "transfer-encoding", &n_te);
	cl = http_find_header(req, "content-length", &n_cl);

	if (n_te) {
		/* RFC 9112 §6.1: an HTTP/1.0 message carrying
		 * Transfer-Encoding has faulty framing, whatever else it says. */
		if (req->minor_version == 0)
			return HTTP_FRAMING_BAD;
		/* §6.3 item 3: both present is the classic smuggling setup;
		 * refuse rather than pick one. */
		if (n_cl)
			return HTTP_FRAMING_BAD;
	}
	if (n_cl) {
		/* Even identical duplicates ("5, 5" or two fields) are refused:
		 * a proxy in front may have picked a different one. */
		if (n_cl > 1 ||
		    http_parse_length(cl->value, cl->value_len, &ret->length) < 0)
			return HTTP_FRAMING_BAD;
		ret->has_length = 1;
	}

	/* RFC 9110 §10.1.1 would have us answer 417 to an expectation we do
	 * not know; 417 is not in our status set, so it is a 400 instead. */
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];

		if (h->name_len != sizeof "expect" - 1 ||
		    !http_case_eq(h->name, "expect", h->name_len))
			continue;
		if (h->value_len != sizeof "100-continue" - 1 ||
		    !http_case_eq(h->value, "100-continue", h->value_len))
			return HTTP_FRAMING_BAD;
		/* §10.1.1: a 100-continue in an HTTP/1.0 request is ignored. */
		if (req->minor_version >= 1)
			ret->expect_continue = 1;
	}

	if (n_te) {
		if (!te_is_chunked_only(req))
			return HTTP_FRAMING_TE_UNSUPPORTED;
		ret->chunked = 1;
	}
	return HTTP_FRAMING_OK;
}

int http_parse_length(const char *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

/* Decoder states. CH_SIZE must be 0 so that a zeroed struct http_chunked
 * is ready for the first call. */
enum {
	CH_SIZE,		/* hex digits of chunk-size */
	CH_SIZE_EXT,		/* after the digits: BWS, ';' and extensions */
	CH_SIZE_LF,		/* CR ending the size line seen */
	CH_DATA,		/* copying chunk-data */
	CH_DATA_CR,		/* line end after chunk-data */
	CH_DATA_LF,
	CH_TRAILER,		/* start of a trailer line, or the final empty line */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF,		/* CR of the final empty line seen */
	CH_DONE,
	CH_ERROR,
};

/* in_ext while in CH_SIZE_EXT. */
enum {
	EXT_NONE,		/* nothing after the digits yet */
	EXT_BWS,		/* whitespace, which only a ';' may follow */
	EXT_IN,			/* inside the extensions: skipped */
};

static int chunk_line_byte(struct http_chunked *dec)
{
	return ++dec->line_len <= HTTP_CHUNK_LINE_MAX;
}

static void chunk_size_line_done(struct http_chunked *dec)
{
	dec->line_len = 0;
	dec->hex_digits = 0;
	dec->in_ext = EXT_NONE;
	dec->state = dec->remaining ? CH_DATA : CH_TRAILER;
}

/* The size line: hex digits, then BWS, ';' and extensions, then its
 * line end. 0, or -1 when the byte is malformed here. */
static int size_byte(struct http_chunked *dec, unsigned char c)
{
	int h;

	if (dec->state == CH_SIZE) {
		if ((h = http_hex_value(c)) >= 0) {
			/* 16 digits fill a uint64_t exactly; a 17th would
			 * overflow, leading zeros or not. */
			if (dec->hex_digits == 16 || !chunk_line_byte(dec))
				return -1;
			dec->remaining = dec->remaining << 4 | (unsigned)h;
			dec->hex_digits++;
			return 0;
		}
		if (dec->hex_digits == 0)
			return -1;
		dec->state = CH_SIZE_EXT;
		dec->in_ext = EXT_NONE;
	}
	if (c == '\r' || c == '\n') {
		/* BWS belongs to a chunk-ext; alone it is not part of the
		 * grammar. */
		if (dec->in_ext == EXT_BWS)
			return -1;
		if (c == '\r')
			dec->state = CH_SIZE_LF;
		else
			chunk_size_line_done(dec);
		return 0;
	}
	if (!chunk_line_byte(dec))
		return -1;
	if (dec->in_ext == EXT_IN)
		return is_field_vchar(c) || is_ows(c) ? 0 : -1;
	if (c == ';')
		dec->in_ext = EXT_IN;
	else if (is_ows(c))
		dec->in_ext = EXT_BWS;
	else
		return -1;
	return 0;
}

/* The trailer section: field lines, then the final empty line. */
static int trailer_byte(struct http_chunked *dec, unsigned char c)
{
	switch (dec->state) {
	case CH_TRAILER:
		if (c == '\r')
			dec->state = CH_END_LF;
		else if (c == '\n')
			dec->state = CH_DONE;
		else if (!is_tchar(c))
			return -1;
		else {
			/* trailer fields follow the header field rules:
			 * no obs-fold, no empty name */
			dec->line_len = 1;
			dec->state = CH_TRAILER_NAME;
		}
		return 0;
	case CH_TRAILER_NAME:
		if (c == ':')
			dec->state = CH_TRAILER_VALUE;
		else if (!is_tchar(c))
			return -1;
		return chunk_line_byte(dec) ? 0 : -1;
	case CH_TRAILER_VALUE:
		if (c == '\r') {
			dec->state = CH_TRAILER_LF;
		} else if (c == '\n') {
			dec->line_len = 0;
			dec->state = CH_TRAILER;
		} else if ((!is_field_vchar(c) && !is_ows(c)) || !chunk_line_byte(dec)) {
			return -1;
		}
		return 0;
	default:	/* CH_TRAILER_LF */
		if (c != '\n')
			return -1;
		dec->line_len = 0;
		dec->state = CH_TRAILER;
		return 0;
	}
}

/* One byte outside chunk-data: the state's rule decides it. */
static int chunk_byte(struct http_chunked *dec, unsigned char c)
{
	switch (dec->state) {
	case CH_SIZE:
	case CH_SIZE_EXT:
		return size_byte(dec, c);
	case CH_SIZE_LF:
		if (c != '\n')
			return -1;
		chunk_size_line_done(dec);
		return 0;
	case CH_DATA_CR:
		if (c == '\r')
			dec->state = CH_DATA_LF;
		else if (c == '\n')
			dec->state = CH_SIZE;
		else
			return -1;
		return 0;
	case CH_DATA_LF:
		if (c != '\n')
			return -1;
		dec->state = CH_SIZE;
		return 0;
	case CH_TRAILER:
	case CH_TRAILER_NAME:
	case CH_TRAILER_VALUE:
	case CH_TRAILER_LF:
		return trailer_byte(dec, c);
	case CH_END_LF:
		if (c != '\n')
			return -1;
		dec->state = CH_DONE;
		return 0;
	default:
		return -1;
	}
}

/* Every decision depends on one byte plus the state, never on what
 * follows in this buffer, which is what makes any split of the input
 * decode the same. Chunk-data is copied in runs; every other byte goes
 * through chunk_byte. */
ssize_t http_chunked_decode(struct http_chunked *dec, char *buf, size_t *len)
{
	size_t n = *len, src = 0, dst = 0;

	while (dec->state != CH_DONE) {
		if (dec->state == CH_ERROR)
			goto bad;
		if (src == n) {
			*len = dst;
			return HTTP_INCOMPLETE;
		}
		if (dec->state == CH_DATA) {
			size_t take = n - src;

			if (take > dec->remaining)
				take = (size_t)dec->remaining;
			if (dst != src)
				memmove(buf + dst, buf + src, take);
			dst += take;
			src += take;
			dec->remaining -= take;
			if (dec->remaining == 0)
				dec->state = CH_DATA_CR;
			continue;
		}
		if (chunk_byte(dec, (unsigned char)buf[src++]) < 0)
			goto bad;
	}
	*len = dst;
	return (ssize_t)(n - src);

bad:
	dec->state = CH_ERROR;
	*len = dst;
	return HTTP_BAD;
}

int http_host_is_loopback(const char *v, size_t n)
{
	size_t h = n;

	/* strip ":port" (digits), not inside an IPv6 literal */
	for (size_t i = n; i-- > 0;) {
		if (v[i] == ':') {
			if (i + 1 == n || (v[0] == '[' && (i == 0 || v[i - 1] != ']')))
				break;
			h = i;
			break;
		}
		if (v[i] < '0' || v[i] > '9')
			break;
	}
	if (h == 5 && !strncmp(v, "[::1]", 5))
		return 1;
	if (h && v[h - 1] == '.')	/* "localhost." is the same name */
		h--;
	if (h == 9 && !strncasecmp(v, "localhost", 9))
		return 1;
	if (h > 10 && !strncasecmp(v + h - 10, ".localhost", 10)) {
		/* a DNS name below localhost: letters, digits, '-', and dots
		 * between non-empty labels */
		for (size_t i = 0; i < h - 10; i++) {
			char c = v[i];

			if (c == '.' ? i == 0 || v[i - 1] == '.' :
			    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-'))
				return 0;
		}
		return v[h - 11] != '.';
	}
	/* 127.0.0.0/8 as a dotted quad of decimal octets */
	{
		unsigned parts = 0, val = 0, digits = 0, first = 0;

		for (size_t i = 0; i <= h; i++) {
			if (i == h || v[i] == '.') {
				if (!digits || val > 255)
					return 0;
				if (parts++ == 0)
					first = val;
				val = digits = 0;
			} else if (v[i] >= '0' && v[i] <= '9' && digits < 3) {
				val = val * 10 + (unsigned)(v[i] - '0');
				digits++;
			} else {
				return 0;
			}
		}
		return parts == 4 && first == 127;
	}
}

/* ---- who sent it: a web page, the key, a JSON body ---- */

static int value_is(const struct http_header *h, const char *v)
{
	size_t n = strlen(v);

	return h->value_len == n && http_case_eq(h->value, v, n);
}

/* "http://" and the Host value: the origin of a page this server
 * served itself. */
static int own_origin(const struct http_request *req, const struct http_header *o)
{
	size_t count = 0;
	const struct http_header *h = http_find_header(req, "host", &count);

	return count == 1 && o->value_len == 7 + h->value_len &&
	       http_case_eq(o->value, "http://", 7) &&
	       http_case_eq(o->value + 7, h->value, h->value_len);
}

int http_browser_check(const struct http_request *req, int allow_own_origin,
		       const struct http_header **bad)
{
	size_t n_origin = 0, n_site = 0;
	const struct http_header *o = http_find_header(req, "origin", &n_origin);
	const struct http_header *s = http_find_header(req, "sec-fetch-site", &n_site);

	if (n_site > 1 || (s && !value_is(s, "none") && !value_is(s, "same-origin"))) {
		*bad = s;
		return HTTP_BROWSER_CROSS_SITE;
	}
	if (n_origin > 1 || (o && !(allow_own_origin && own_origin(req, o)))) {
		*bad = o;
		return HTTP_BROWSER_CROSS_ORIGIN;
	}
	return HTTP_BROWSER_OK;
}

int http_body_is_json(const struct http_request *req, const struct http_header **got,
		      size_t *count)
{
	static const char want[] = "application/json";
	size_t n = sizeof want - 1, i = n;
	const struct http_header *h = http_find_header(req, "content-type", count);

	*got = h;
	if (*count != 1 || h->value_len < n || !http_case_eq(h->value, want, n))
		return 0;
	while (i < h->value_len && (h->value[i] == ' ' || h->value[i] == '\t'))
		i++;
	return i == h->value_len || h->value[i] == ';';
}

int http_bearer_matches(const struct http_request *req, const char *key)
{
	size_t n, count = 0, klen = strlen(key);
	const struct http_header *h = http_find_header(req, "authorization", &count);
	const char *v;
	unsigned char diff;

	if (!h || count != 1 || h->value_len < 7 || !http_case_eq(h->value, "Bearer ", 7))
		return 0;
	v = h->value + 7;
	n = h->value_len - 7;
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	diff = n != klen;
	for (size_t i = 0; i < klen; i++)
		diff |= (unsigned char)((i < n ? v[i] : 0) ^ key[i]);
	return !diff;
}
