/* libFuzzer target for agent_tool_calls (SPEC §6). The input is the
 * program's stdout; it is placed so that its last byte sits right before
 * a PROT_NONE page, because cJSON is a system library ASan does not
 * instrument and only the page catches it reading past the end. Each
 * input runs twice, with the tools {write_note, patch_note, finish} and
 * with {finish} alone, and must satisfy:
 *  - rc -1: the code is invalid_changes or undeclared_tool, the message
 *    is non-empty valid UTF-8, and the caller's buffer is untouched;
 *  - rc >= 0: what was appended is valid UTF-8 with no raw control byte
 *    and no raw U+2028/2029, cJSON parses it whole as an array of rc + 1
 *    objects {id, type, function {name, arguments}}, ids call_0 …
 *    call_rc, type "function", finish last, and every arguments string
 *    parses to an object;
 *  - both runs agree with a model written from the spec on top of a
 *    separate strict JSON reader (below, not cJSON, so a string cJSON
 *    cuts or decodes wrongly shows up): the same rc or error code, and
 *    for a success every call's name and fields decoded from the output
 *    equal the model's, byte for byte and length for length.
 * The reader refuses \u0000 (SPEC §6: a NUL is refused, never cut) and
 * takes RFC 8259 only, as the shared pre-check (json/precheck.c) does
 * for every JSON the handler reads: whitespace is space, tab, CR and LF,
 * numbers follow the RFC's grammar, a leading BOM is skipped. */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json/agent.h"
#include "json/response.h"
#include "json/jstr.h"
#include "tests/fuzz/common.h"

/* the request id the calls are named after (agent_call_id) */
#define FUZZ_REQ "0123456789abcdef01234567"

#define SEED "seed\"["	/* what the caller's buffer holds before */
#define SEED_LEN (sizeof SEED - 1)
#define MAX_DEPTH 64

static char t_write[] = "write_note", t_patch[] = "patch_note", t_finish[] = "finish";
static char *const tools_all[] = { t_write, t_patch, t_finish };
static char *const tools_finish[] = { t_finish };

/* ------------------------------------------------------------------ */
/* A separate JSON reader                                              */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	int t;
	char *s;		/* J_STR: decoded bytes (may hold NUL) */
	size_t sl;
	struct jv *kid;		/* J_ARR, J_OBJ: n values */
	struct jv *key;		/* J_OBJ: n J_STR keys */
	size_t n;
};

struct rd {
	const unsigned char *s;
	size_t n, i;
};

static void jv_free(struct jv *v)
{
	for (size_t k = 0; k < v->n; k++) {
		jv_free(&v->kid[k]);
		if (v->key)
			jv_free(&v->key[k]);
	}
	free(v->s);
	free(v->kid);
	free(v->key);
	*v = (struct jv){0};
}

static void ws(struct rd *r)
{
	while (r->i < r->n && strchr(" \t\r\n", r->s[r->i]) && r->s[r->i])
		r->i++;
}

static size_t digits(const struct rd *r, size_t k)
{
	size_t d = 0;

	while (k + d < r->n && r->s[k + d] >= '0' && r->s[k + d] <= '9')
		d++;
	return d;
}

static int hex4(const struct rd *r, size_t at, unsigned *out)
{
	unsigned v = 0;

	if (at + 4 > r->n)
		return 0;
	for (size_t k = 0; k < 4; k++) {
		unsigned char c = r->s[at + k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return 0;
	}
	*out = v;
	return 1;
}

static void put_utf8(struct jbuf *b, unsigned cp)
{
	unsigned char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xC0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xE0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xF0 | cp >> 18);
		u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[3] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	jbuf_append(b, u, n);
}

/* RFC 8259 string at r->i (the opening quote); raw bytes are taken as
 * they are (the whole input was checked to be UTF-8 before). */
static int rd_str(struct rd *r, struct jv *v)
{
	struct jbuf b = {0};

	if (r->i >= r->n || r->s[r->i] != '"')
		return 0;
	r->i++;
	for (;;) {
		unsigned char c;

		if (r->i >= r->n)
			goto bad;
		c = r->s[r->i++];
		if (c == '"')
			break;
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			jbuf_append(&b, &c, 1);
			continue;
		}
		if (r->i >= r->n)
			goto bad;
		c = r->s[r->i++];
		switch (c) {
		case '"': case '\\': case '/':
			jbuf_append(&b, &c, 1);
			break;
		case 'b': jbuf_append(&b, "\b", 1); break;
		case 'f': jbuf_append(&b, "\f", 1); break;
		case 'n': jbuf_append(&b, "\n", 1); break;
		case 'r': jbuf_append(&b, "\r", 1); break;
		case 't': jbuf_append(&b, "\t", 1); break;
		case 'u': {
			unsigned cp, lo;

			if (!hex4(r, r->i, &cp))
				goto bad;
			r->i += 4;
			/* NUL cannot survive into a tool call: the model
			 * refuses any output that holds one */
			if (cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
				goto bad;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (r->i + 2 > r->n || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u' ||
				    !hex4(r, r->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
					goto bad;
				r->i += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			put_utf8(&b, cp);
			break;
		}
		default:
			goto bad;
		}
	}
	CHECK(!b.oom);
	v->t = J_STR;
	v->sl = b.len;
	v->s = malloc(b.len + 1);
	CHECK(v->s);
	if (b.len)
		memcpy(v->s, b.p, b.len);
	v->s[b.len] = '\0';
	jbuf_free(&b);
	return 1;
bad:
	jbuf_free(&b);
	return 0;
}

static int rd_val(struct rd *r, struct jv *v, int depth);

static int rd_add(struct jv *v, struct jv *key, struct jv *val)
{
	struct jv *k = realloc(v->kid, (v->n + 1) * sizeof *k);

	CHECK(k);
	v->kid = k;
	v->kid[v->n] = *val;
	if (key) {
		k = realloc(v->key, (v->n + 1) * sizeof *k);
		CHECK(k);
		v->key = k;
		v->key[v->n] = *key;
	}
	v->n++;
	return 1;
}

static int rd_container(struct rd *r, struct jv *v, int depth, int obj)
{
	unsigned char close = obj ? '}' : ']';

	if (depth > MAX_DEPTH)
		return 0;
	v->t = obj ? J_OBJ : J_ARR;
	r->i++;
	ws(r);
	if (r->i < r->n && r->s[r->i] == close) {
		r->i++;
		return 1;
	}
	for (;;) {
		struct jv key = {0}, val = {0};

		ws(r);
		if (obj) {
			if (!rd_str(r, &key))
				return 0;
			ws(r);
			if (r->i >= r->n || r->s[r->i] != ':') {
				jv_free(&key);
				return 0;
			}
			r->i++;
			ws(r);
		}
		if (!rd_val(r, &val, depth)) {
			jv_free(&key);
			jv_free(&val);
			return 0;
		}
		rd_add(v, obj ? &key : NULL, &val);
		ws(r);
		if (r->i >= r->n)
			return 0;
		if (r->s[r->i] == close) {
			r->i++;
			return 1;
		}
		if (r->s[r->i] != ',')
			return 0;
		r->i++;
	}
}

static int rd_val(struct rd *r, struct jv *v, int depth)
{
	const char *p = (const char *)r->s + r->i;
	size_t left = r->n - r->i;

	if (!left)
		return 0;
	if (left >= 4 && !memcmp(p, "null", 4)) {
		v->t = J_NULL;
		r->i += 4;
		return 1;
	}
	if (left >= 5 && !memcmp(p, "false", 5)) {
		v->t = J_BOOL;
		r->i += 5;
		return 1;
	}
	if (left >= 4 && !memcmp(p, "true", 4)) {
		v->t = J_BOOL;
		r->i += 4;
		return 1;
	}
	if (*p == '"')
		return rd_str(r, v);
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
		size_t k = r->i + (*p == '-'), d = digits(r, k);

		if (!d || (d > 1 && r->s[k] == '0'))
			return 0;
		k += d;
		if (k < r->n && r->s[k] == '.') {
			if (!(d = digits(r, k + 1)))
				return 0;
			k += 1 + d;
		}
		if (k < r->n && (r->s[k] == 'e' || r->s[k] == 'E')) {
			k++;
			if (k < r->n && (r->s[k] == '+' || r->s[k] == '-'))
				k++;
			if (!(d = digits(r, k)))
				return 0;
			k += d;
		}
		v->t = J_NUM;
		r->i = k;
		return 1;
	}
	if (*p == '[' || *p == '{')
		return rd_container(r, v, depth + 1, *p == '{');
	return 0;
}

/* The one member called key (exact bytes), *twice set when it repeats. */
static const struct jv *member(const struct jv *o, const char *key, int *twice)
{
	const struct jv *found = NULL;

	for (size_t k = 0; k < o->n; k++)
		if (o->key[k].sl == strlen(key) && !memcmp(o->key[k].s, key, o->key[k].sl)) {
			if (found && twice)
				*twice = 1;
			if (!found)
				found = &o->kid[k];
		}
	return found;
}

/* ------------------------------------------------------------------ */
/* The model                                                           */

struct call {
	const char *tool;
	const struct jv *f[3];	/* path, content | path, find, replace | answer */
};

struct model {
	long rc;
	const char *code;	/* when rc == -1 */
	struct call *calls;	/* rc + 1 */
	struct jv root;
	struct jv empty;	/* "" for an absent answer */
};

static int absent(const struct jv *v)
{
	return !v || v->t == J_NULL;
}

static int declared(char *const *tools, size_t ntools, const char *name)
{
	for (size_t i = 0; i < ntools; i++)
		if (!strcmp(tools[i], name))
			return 1;
	return 0;
}

static long refuse(struct model *m, const char *code)
{
	m->rc = -1;
	m->code = code;
	return -1;
}

static char nothing[1];

static long model(struct model *m, const char *in, size_t size, char *const *tools, size_t ntools)
{
	static const char *const fields[] = { "path", "content", "find", "replace", "op" };
	struct rd r = { (const unsigned char *)in, size, 0 };
	const struct jv *changes, *answer, *f[5];
	int twice = 0;
	size_t nch;

	*m = (struct model){0};
	m->empty.t = J_STR;
	m->empty.s = nothing;
	if (memchr(in, '\0', size) || !jstr_utf8_valid(in, size))
		return refuse(m, "invalid_changes");
	if (size >= 3 && !memcmp(in, "\xEF\xBB\xBF", 3))
		r.i = 3;
	ws(&r);
	if (!rd_val(&r, &m->root, 0) || m->root.t != J_OBJ)
		return refuse(m, "invalid_changes");
	for (; r.i < size; r.i++)
		if (!strchr(" \t\r\n", in[r.i]))
			return refuse(m, "invalid_changes");
	/* the depth of the text, trailing whitespace aside, is the parsed
	 * value's: rd_container refused anything deeper */
	changes = member(&m->root, "changes", &twice);
	answer = member(&m->root, "answer", &twice);
	if (twice)
		return refuse(m, "invalid_changes");
	if (!absent(changes) && changes->t != J_ARR)
		return refuse(m, "invalid_changes");
	if (!absent(answer) && answer->t != J_STR)
		return refuse(m, "invalid_changes");
	nch = absent(changes) ? 0 : changes->n;
	m->calls = calloc(nch + 1, sizeof *m->calls);
	CHECK(m->calls);
	for (size_t i = 0; i < nch; i++) {
		const struct jv *ch = &changes->kid[i];
		int patch;

		if (ch->t != J_OBJ)
			return refuse(m, "invalid_changes");
		for (size_t k = 0; k < 5; k++) {
			f[k] = member(ch, fields[k], &twice);
			if (absent(f[k]))
				f[k] = NULL;
		}
		if (twice || !f[0] || f[0]->t != J_STR || f[0]->sl == 0)
			return refuse(m, "invalid_changes");
		for (size_t k = 1; k < 5; k++)
			if (f[k] && f[k]->t != J_STR)
				return refuse(m, "invalid_changes");
		if (f[4]) {
			if (f[4]->sl == 5 && !memcmp(f[4]->s, "write", 5))
				patch = 0;
			else if (f[4]->sl == 5 && !memcmp(f[4]->s, "patch", 5))
				patch = 1;
			else
				return refuse(m, "invalid_changes");
		} else if (f[1] && !f[2] && !f[3]) {
			patch = 0;
		} else if (!f[1] && (f[2] || f[3])) {
			patch = 1;
		} else {
			return refuse(m, "invalid_changes");
		}
		if (patch ? !f[2] || !f[2]->sl || !f[3] : !f[1])
			return refuse(m, "invalid_changes");
		m->calls[i].tool = patch ? "patch_note" : "write_note";
		if (!declared(tools, ntools, m->calls[i].tool))
			return refuse(m, "undeclared_tool");
		m->calls[i].f[0] = f[0];
		m->calls[i].f[1] = patch ? f[2] : f[1];
		m->calls[i].f[2] = patch ? f[3] : NULL;
	}
	m->calls[nch].tool = "finish";
	m->calls[nch].f[0] = absent(answer) ? &m->empty : answer;
	m->rc = (long)nch;
	return m->rc;
}

static void model_free(struct model *m)
{
	jv_free(&m->root);
	free(m->calls);
}

/* ------------------------------------------------------------------ */
/* Checking one run                                                    */

static int same(const struct jv *v, const struct jv *want)
{
	return v && v->t == J_STR && v->sl == want->sl && !memcmp(v->s, want->s, v->sl);
}

static int is_cstr(const struct jv *v, const char *s)
{
	return v && v->t == J_STR && v->sl == strlen(s) && !memcmp(v->s, s, v->sl);
}

/* The output read by the separate reader against the model's calls. */
static void check_against_model(const char *out, size_t n, const struct model *m)
{
	static const char *const keys_write[] = { "path", "content" };
	static const char *const keys_patch[] = { "path", "find", "replace" };
	static const char *const keys_finish[] = { "answer" };
	struct rd r = { (const unsigned char *)out, n, 0 };
	struct jv arr = {0};

	CHECK(rd_val(&r, &arr, 0) && r.i == n && arr.t == J_ARR);
	CHECK((long)arr.n == m->rc + 1);
	for (size_t i = 0; i < arr.n; i++) {
		const struct jv *c = &arr.kid[i], *fn, *args;
		const struct call *want = &m->calls[i];
		const char *const *keys;
		size_t nkeys;
		struct jv a = {0};
		struct rd ra;
		char id[64];

		snprintf(id, sizeof id, "call_" FUZZ_REQ "_%zu", i);
		CHECK(c->t == J_OBJ && c->n == 3);
		CHECK(is_cstr(member(c, "id", NULL), id));
		CHECK(is_cstr(member(c, "type", NULL), "function"));
		fn = member(c, "function", NULL);
		CHECK(fn && fn->t == J_OBJ && fn->n == 2);
		CHECK(is_cstr(member(fn, "name", NULL), want->tool));
		args = member(fn, "arguments", NULL);
		CHECK(args && args->t == J_STR);
		ra = (struct rd){ (const unsigned char *)args->s, args->sl, 0 };
		CHECK(rd_val(&ra, &a, 0) && ra.i == args->sl && a.t == J_OBJ);
		if (!strcmp(want->tool, "write_note"))
			keys = keys_write, nkeys = 2;
		else if (!strcmp(want->tool, "patch_note"))
			keys = keys_patch, nkeys = 3;
		else
			keys = keys_finish, nkeys = 1;
		CHECK(a.n == nkeys);
		for (size_t k = 0; k < nkeys; k++)
			CHECK(same(member(&a, keys[k], NULL), want->f[k]));
		jv_free(&a);
	}
	jv_free(&arr);
}

/* What cJSON makes of the output: the shape the SDKs will read. */
static void check_cjson(const char *out, long rc)
{
	cJSON *arr = cJSON_ParseWithOpts(out, NULL, 1);
	const cJSON *c;
	long i = 0;

	CHECK(cJSON_IsArray(arr));
	CHECK(cJSON_GetArraySize(arr) == rc + 1);
	cJSON_ArrayForEach(c, arr) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
		char want[64];
		cJSON *a;

		snprintf(want, sizeof want, "call_" FUZZ_REQ "_%ld", i);
		CHECK(cJSON_IsString(id) && !strcmp(id->valuestring, want));
		CHECK(cJSON_IsString(name) && cJSON_IsString(args));
		CHECK(!strcmp(name->valuestring, "finish") == (i == rc));
		a = cJSON_ParseWithOpts(args->valuestring, NULL, 1);
		CHECK(cJSON_IsObject(a));
		cJSON_Delete(a);
		i++;
	}
	cJSON_Delete(arr);
}

static long run(const char *in, size_t size, char *const *tools, size_t ntools,
		struct jbuf *b, struct agent_error *err)
{
	struct model m;
	long rc, want = model(&m, in, size, tools, ntools);

	*b = (struct jbuf){0};
	jbuf_append(b, SEED, SEED_LEN);
	err->code = NULL;
	memset(err->message, 0, sizeof err->message);
	rc = agent_tool_calls(in, size, tools, ntools, "chatcmpl-" FUZZ_REQ, b, err);
	if (rc != want)
		fprintf(stderr, "fuzz_agent: rc %ld, model %ld (%s): %s\n", rc, want,
			m.code ? m.code : "", rc < 0 ? err->message : "");
	CHECK(rc == want);
	if (rc == -1) {
		size_t n = strnlen(err->message, sizeof err->message);

		CHECK(err->code && (!strcmp(err->code, "invalid_changes") ||
				    !strcmp(err->code, "undeclared_tool")));
		if (strcmp(err->code, m.code))
			fprintf(stderr, "fuzz_agent: %s, model %s: %s\n", err->code, m.code,
				err->message);
		CHECK(!strcmp(err->code, m.code));
		CHECK(n > 0 && n < sizeof err->message);
		CHECK(jstr_utf8_valid(err->message, n));
		CHECK(b->len == SEED_LEN && !memcmp(b->p, SEED, SEED_LEN) && !b->oom);
	} else {
		const char *text = jbuf_cstr(b), *out;
		size_t n;

		CHECK(text && !b->oom && !memcmp(text, SEED, SEED_LEN));
		out = text + SEED_LEN;
		n = b->len - SEED_LEN;
		CHECK(jstr_utf8_valid(out, n));
		CHECK(!memmem(out, n, "\xE2\x80\xA8", 3) && !memmem(out, n, "\xE2\x80\xA9", 3));
		for (size_t k = 0; k < n; k++)
			CHECK((unsigned char)out[k] >= 0x20);
		check_cjson(out, rc);
		check_against_model(out, n, &m);
	}
	model_free(&m);
	return rc;
}

/* ------------------------------------------------------------------ */

/* Places data[0..size) right before a PROT_NONE page; *unmap says what to
 * release (inputs up to AREA bytes share one mapping). */
#define AREA (1u << 20)

static char *area;

static const char *guarded(const uint8_t *data, size_t size, void **unmap, size_t *unmap_len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages;
	char *m;

	*unmap = NULL;
	if (size <= AREA) {
		if (!area) {
			m = mmap(NULL, AREA + page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			CHECK(m != MAP_FAILED);
			CHECK(mprotect(m + AREA, page, PROT_NONE) == 0);
			area = m;
		}
		if (size)
			memcpy(area + AREA - size, data, size);
		return area + AREA - size;
	}
	pages = (size + page - 1) / page;
	m = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK(mprotect(m + pages * page, page, PROT_NONE) == 0);
	*unmap = m;
	*unmap_len = (pages + 1) * page;
	memcpy(m + pages * page - size, data, size);
	return m + pages * page - size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jbuf ball, bfin;
	struct agent_error eall, efin;
	void *unmap;
	size_t unmap_len = 0;
	const char *in = guarded(data, size, &unmap, &unmap_len);
	long rall, rfin;

	rall = run(in, size, tools_all, 3, &ball, &eall);
	rfin = run(in, size, tools_finish, 1, &bfin, &efin);
	/* with every tool declared, only the contents can be wrong */
	if (rall == -1)
		CHECK(!strcmp(eall.code, "invalid_changes") && rfin == -1);
	CHECK(rfin == -1 || rfin == 0);
	if (rall == 0)
		CHECK(rfin == 0 && ball.len == bfin.len && !memcmp(ball.p, bfin.p, ball.len));
	if (rall > 0)
		CHECK(rfin == -1 && !strcmp(efin.code, "undeclared_tool"));
	jbuf_free(&ball);
	jbuf_free(&bfin);
	if (unmap)
		munmap(unmap, unmap_len);
	return 0;
}
