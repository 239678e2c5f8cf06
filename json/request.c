#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json/fence.h"
#include "json/jstr.h"
#include "json/precheck.h"
#include "json/request.h"
#include "sandbox/result.h"

__attribute__((format(printf, 5, 0)))
static int vfail(struct req_error *err, int status, const char *code,
		 const char *param, const char *fmt, va_list ap)
{
	err->status = status;
	err->type = status == 403 ? "permission_error" :
		    status == 503 ? "server_error" : "invalid_request_error";
	err->code = code;
	err->param = param;
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	return -1;
}

int req_fail(struct req_error *err, int status, const char *code,
	     const char *param, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, status, code, param, fmt, ap);
	va_end(ap);
	return -1;
}

/* An allocation failed while reading the request: the server's
 * condition, never the client's (a 4xx would tell it not to retry a
 * request that is fine). */
int req_oom(struct req_error *err)
{
	return req_fail(err, 503, "server_overloaded", NULL,
			"the server is out of memory reading this request; retry");
}

/* The body as one JSON object; NULL with err filled. The pre-check
 * refuses what cJSON would read wrongly or not whole, and any key given
 * twice (which readers differ on), so a body it passes is one cJSON
 * takes in full and as every reader would. */
static cJSON *parse_object(const char *body, size_t len, struct req_error *err)
{
	struct precheck pc;
	cJSON *root;

	if (precheck_json_unique(body, len, &pc) < 0) {
		if (pc.problem == PRECHECK_MEMORY)
			req_oom(err);
		else
			req_fail(err, 400, "invalid_json", NULL, "request body %s", pc.message);
		return NULL;
	}
	root = cJSON_ParseWithLength(body, len);
	if (!root) {
		/* the text passed the pre-check: only memory is left */
		req_oom(err);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		req_fail(err, 400, "invalid_json", NULL, "request body must be a JSON object");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

struct cJSON *req_parse_object(const char *body, size_t len, struct req_error *err)
{
	return parse_object(body, len, err);
}

/* A message as the rest of the reading needs it, the parsed tree gone:
 * role and name point to constants, the text is owned. */
struct msg {
	const char *role;
	const char *name;	/* NULL when absent, "fleet_input", "stdin", or
				 * "" for any other name */
	char *text;
	size_t len;
	int codeable;		/* system/developer/user without a reserved name */
	char *finish;		/* a finish call's answer in an assistant
				 * message ("" unreadable), or a finish
				 * result's text; else NULL */
};

static int is_role(const char *r, const char *want)
{
	return r && !strcmp(r, want);
}

/* content: a string, an array of text parts (concatenated, nothing in
 * between), null or absent (empty). */
/* ---- files in user messages ---- */

/* A character no file name may hold, though it is valid UTF-8: it
 * controls how the name shows rather than being part of it (a C1
 * control, a line or paragraph separator, a bidirectional formatting
 * control, with which "txt.exe" can show as "exe.txt"). What it is,
 * *cp its code point; NULL when s[0..n) holds none. */
static const char *hidden_char(const char *s, size_t n, unsigned *cp)
{
	for (size_t i = 0; i < n;) {
		int k = jstr_utf8_decode(s + i, n - i, cp);

		if (k <= 0)
			return NULL;	/* the caller checked: valid UTF-8 */
		i += (size_t)k;
		if (*cp >= 0x80 && *cp <= 0x9F)
			return "a C1 control character";
		if (*cp == 0x2028 || *cp == 0x2029)
			return "a line or paragraph separator";
		if (*cp == 0x061C || *cp == 0x200E || *cp == 0x200F ||
		    (*cp >= 0x202A && *cp <= 0x202E) || (*cp >= 0x2066 && *cp <= 0x2069))
			return "a bidirectional formatting control";
	}
	return NULL;
}

/* What the run's workdir may hold under a name a request chose: one
 * path component, not hidden, no control byte or character that hides
 * how it shows, not the bag's name (the only name the run itself takes
 * there). The problem, in why[] when it needs words of its own. */
static const char *file_name_problem(const char *s, char *why, size_t whylen)
{
	size_t n = strlen(s);
	const char *what;
	unsigned cp;

	if (n == 0)
		return "is empty";
	if (n > 255)
		return "is longer than 255 bytes";
	if (s[0] == '.')
		return "starts with a dot";
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '/')
			return "holds a '/' (a plain file name, no directory)";
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "holds a control byte";
	}
	if (!jstr_utf8_valid(s, n))
		return "is not valid UTF-8";
	if ((what = hidden_char(s, n, &cp))) {
		snprintf(why, whylen, "holds U+%04X (%s)", cp, what);
		return why;
	}
	if (!strcmp(s, SBX_BAG_NAME))
		return "is the name of the fleet_input bag";
	return NULL;
}

/* "data:[<type>][;param]*;base64,<data>": the type ("" when absent) and
 * the data's span; -1 when s is no base64 data URL. */
static int data_url(const char *s, char *type, size_t tlen, const char **data)
{
	const char *comma, *semi;

	if (strncasecmp(s, "data:", 5))
		return -1;
	s += 5;
	if (!(comma = strchr(s, ',')))
		return -1;
	if (comma - s < 7 || strncasecmp(comma - 7, ";base64", 7))
		return -1;
	semi = memchr(s, ';', (size_t)(comma - s));
	snprintf(type, tlen, "%.*s", (int)(semi - s), s);
	*data = comma + 1;
	return 0;
}

/* image-N.<ext> for an image part without a name */
static const char *image_ext(const char *type)
{
	static const char *const map[][2] = {
		{ "image/png", "png" }, { "image/jpeg", "jpg" }, { "image/jpg", "jpg" },
		{ "image/gif", "gif" }, { "image/webp", "webp" }, { "image/svg+xml", "svg" },
		{ "image/bmp", "bmp" }, { "image/tiff", "tiff" },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (!strcasecmp(type, map[i][0]))
			return map[i][1];
	return "bin";
}

struct file_ctx {
	struct chat_request *r;
	const struct req_limits *lim;
	size_t images;		/* image parts so far, for image-N */
};

/* The base64 of a file part decoded, within the bounds: its length
 * with *ret set, or -1 with *err filled (413 over a bound, decided
 * before decoding where the text's length already tells). */
static long decode_bounded(const struct file_ctx *fc, const char *b64, const char *name,
			   size_t idx, size_t k, char **ret, struct req_error *err)
{
	const struct req_limits *lim = fc->lim;
	long len = (long)(strlen(b64) / 4 * 3);
	int one;

	*ret = NULL;
	if ((size_t)len > lim->max_file_bytes + 2)
		return req_fail(err, 413, "file_too_large", "messages",
			    "messages[%zu].content[%zu]: the file \"%.64s\" is over %zu bytes "
			    "(--max-input-file-bytes)", idx, k, name, lim->max_file_bytes);
	len = jstr_base64_decode(b64, strlen(b64), ret);
	if (len == -2)
		return req_oom(err);
	if (len < 0)
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: the file \"%.64s\" is not valid base64",
			    idx, k, name);
	if ((size_t)len <= lim->max_file_bytes &&
	    fc->r->files_bytes + (size_t)len <= lim->max_files_bytes)
		return len;
	one = (size_t)len > lim->max_file_bytes;
	free(*ret);
	*ret = NULL;
	return req_fail(err, 413, "file_too_large", "messages",
		    "messages[%zu].content[%zu]: the file \"%.64s\" (%ld bytes) is over "
		    "%zu bytes (%s)", idx, k, name, len,
		    one ? lim->max_file_bytes : lim->max_files_bytes,
		    one ? "--max-input-file-bytes" : "--max-input-bytes, all files together");
}

/* A "file" or "image_url" part of messages[idx].content[k] (the caller
 * checked the type): decoded and appended to r->files, or a 400/413
 * naming the part. */
static int take_file_part(struct file_ctx *fc, const cJSON *part, int image,
			  size_t idx, size_t k, struct req_error *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(part, image ? "image_url" : "file");
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(obj, image ? "url" : "file_data");
	const cJSON *fname = cJSON_GetObjectItemCaseSensitive(obj, "filename");
	struct chat_request *r = fc->r;
	char type[128], gen[64], bad[96], *data = NULL;
	const char *b64, *why, *name;
	struct req_file *f;
	char *copy;
	long len;

	if (!cJSON_IsObject(obj))
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: a %s part needs a \"%s\" object",
			    idx, k, image ? "image_url" : "file", image ? "image_url" : "file");
	if (!image && cJSON_GetObjectItemCaseSensitive(obj, "file_id"))
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: file_id references are not accepted: "
			    "this server holds no files and fetches nothing; send the bytes "
			    "as file_data (a base64 data URL)", idx, k);
	if (!cJSON_IsString(url) || data_url(url->valuestring, type, sizeof type, &b64) < 0)
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: %s must be a base64 data URL "
			    "(data:<type>;base64,...): this server holds no files and fetches "
			    "nothing", idx, k, image ? "image_url.url" : "file.file_data");
	if (fname && !cJSON_IsString(fname))
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: filename must be a string", idx, k);
	if (!image && !fname)
		return req_fail(err, 400, "invalid_file", "messages",
			    "messages[%zu].content[%zu]: a file part needs file.filename", idx, k);
	fc->images += image;
	if (fname) {
		name = fname->valuestring;
	} else {
		snprintf(gen, sizeof gen, "image-%zu.%s", fc->images, image_ext(type));
		name = gen;
	}
	if ((why = file_name_problem(name, bad, sizeof bad)) == bad)
		/* the name itself is not shown: it would hide as it does here */
		return req_fail(err, 400, "invalid_file_name", "messages",
			    "messages[%zu].content[%zu]: the file name %s, which no name may hold",
			    idx, k, why);
	if (why)
		return req_fail(err, 400, "invalid_file_name", "messages",
			    "messages[%zu].content[%zu]: the file name \"%.64s\" %s",
			    idx, k, name, why);
	for (size_t i = 0; i < r->nfiles; i++)
		if (!strcmp(r->files[i].name, name))
			return req_fail(err, 400, "invalid_file_name", "messages",
				    "messages[%zu].content[%zu]: the file name \"%.64s\" is "
				    "already taken by an earlier file part", idx, k, name);
	if (r->nfiles >= fc->lim->max_files)
		return req_fail(err, 413, "too_many_files", "messages",
			    "messages[%zu].content[%zu] (\"%.64s\"): more than %zu file parts "
			    "(--max-input-files)", idx, k, name, fc->lim->max_files);
	if ((len = decode_bounded(fc, b64, name, idx, k, &data, err)) < 0)
		return -1;
	f = realloc(r->files, (r->nfiles + 1) * sizeof *f);
	if (f)
		r->files = f;
	if (!f || !(copy = strdup(name))) {
		free(data);
		return req_oom(err);
	}
	r->files[r->nfiles++] = (struct req_file){ copy, data, (size_t)len };
	r->files_bytes += (size_t)len;
	return 0;
}

int req_take_files(const struct cJSON *parts, const struct req_limits *lim,
		   struct chat_request *r, struct req_error *err)
{
	struct file_ctx fc = { .r = r, .lim = lim };
	const cJSON *part;
	size_t k = 0;

	if (!parts || cJSON_IsNull(parts))
		return 0;
	if (!cJSON_IsArray(parts))
		return req_fail(err, 400, "invalid_type", "files",
			    "\"files\" must be an array of file or image_url parts");
	cJSON_ArrayForEach(part, parts) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		int image = cJSON_IsString(type) && !strcmp(type->valuestring, "image_url");

		if (!image && !(cJSON_IsString(type) && !strcmp(type->valuestring, "file")))
			return req_fail(err, 400, "invalid_type", "files",
				    "files[%zu] must be a part of type \"file\" or \"image_url\"", k);
		/* named as the parts of a message 0 would be */
		if (take_file_part(&fc, part, image, 0, k, err) < 0)
			return -1;
		k++;
	}
	return 0;
}

static int msg_text(cJSON *content, size_t idx, struct msg *m, struct file_ctx *fc,
		    struct req_error *err)
{
	struct jbuf b = {0};
	const cJSON *part;
	size_t parts = 0;

	if (!content || cJSON_IsNull(content)) {
		m->text = strdup("");
		m->len = 0;
		return m->text ? 0 : req_oom(err);
	}
	if (cJSON_IsString(content)) {
		/* taken over from the parsed tree, not copied: a message can
		 * be most of the body, and is held until the run */
		m->text = content->valuestring;
		m->len = strlen(m->text);
		content->valuestring = NULL;
		return 0;
	}
	if (!cJSON_IsArray(content))
		return req_fail(err, 400, "invalid_type", "messages",
			    "messages[%zu].content must be a string, an array of text parts or null",
			    idx);
	cJSON_ArrayForEach(part, content) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
		size_t k = parts++;
		int image;

		if (cJSON_IsObject(part) && cJSON_IsString(type) &&
		    ((image = !strcmp(type->valuestring, "image_url")) ||
		     !strcmp(type->valuestring, "file"))) {
			if (!fc || !is_role(m->role, "user")) {
				jbuf_free(&b);
				return req_fail(err, 400, "invalid_file", "messages",
					    "messages[%zu].content[%zu]: file and image parts are "
					    "accepted in user messages only", idx, k);
			}
			if (take_file_part(fc, part, image, idx, k, err) < 0) {
				jbuf_free(&b);
				return -1;
			}
			continue;
		}
		if (!cJSON_IsObject(part) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
			jbuf_free(&b);
			return req_fail(err, 400, "invalid_type", "messages",
				    "messages[%zu].content: only parts of type \"text\" with a string \"text\", \"file\" and \"image_url\" are accepted",
				    idx);
		}
		jbuf_puts(&b, text->valuestring);
	}
	if (!jbuf_cstr(&b)) {
		jbuf_free(&b);
		return req_oom(err);
	}
	m->text = b.p;
	m->len = b.len;
	return 0;
}

static const struct interp *fence_interp(const struct chat_request *r,
					 const struct registry *reg,
					 const char *text,
					 const struct fence_block *f)
{
	if (f->label_len == 0)
		return r->model_interp;
	return reg_lookup(reg, text + f->label_off, f->label_len);
}

/* The fences of a message, and how many of them are runnable; walked,
 * not stored, so any number of fences costs no memory. */
static size_t count_fences(const struct chat_request *r,
			   const struct registry *reg, const struct msg *m,
			   size_t *ret_runnable)
{
	struct fence_scan s = {0};
	struct fence_block f;
	size_t n = 0, k = 0;

	while (fence_next(m->text, m->len, &s, &f)) {
		n++;
		if (fence_interp(r, reg, m->text, &f))
			k++;
	}
	*ret_runnable = k;
	return n;
}

/* How much of a label an answer or a message quotes: at most
 * REQ_MAX_LABEL bytes, cut before a character (the text is valid
 * UTF-8), never inside one. */
static size_t label_len(const char *l, size_t n)
{
	if (n <= REQ_MAX_LABEL)
		return n;
	n = REQ_MAX_LABEL;
	while (n > 0 && ((unsigned char)l[n] & 0xC0) == 0x80)
		n--;
	return n;
}

static char *dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Lists the fence labels of the candidate messages for the "no runnable
 * block" error, each label once (the first 64 fences of each message),
 * as far as out[outlen] holds them. A label is looked for only in what
 * is listed already, which out[] bounds, and the walk stops when out[]
 * is full: however many fences a request holds, this costs no memory
 * and little time. */
static void labels_seen(const struct msg *msgs, size_t nmsgs, char *out,
			size_t outlen)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < nmsgs && used + 1 < outlen; i++) {
		struct fence_scan s = {0};
		struct fence_block f;

		if (!msgs[i].codeable)
			continue;
		for (size_t k = 0; k < 64 && used + 1 < outlen &&
		     fence_next(msgs[i].text, msgs[i].len, &s, &f); k++) {
			const char *l = msgs[i].text + f.label_off;
			char quoted[REQ_MAX_LABEL + 8];
			int q = snprintf(quoted, sizeof quoted, "%s\"%.*s\"", used ? ", " : "",
					 (int)label_len(l, f.label_len), l);
			size_t skip = used ? 2 : 0;

			if (used && memmem(out, used, quoted + skip, (size_t)q - skip))
				continue;
			/* what does not fit is cut, as snprintf would */
			used += (size_t)snprintf(out + used, outlen - used, "%s", quoted);
			if (used >= outlen)
				used = outlen - 1;
		}
	}
	if (!used)
		snprintf(out, outlen, "none");
}

static int parse_tools(const cJSON *tools, struct chat_request *r,
		       struct req_error *err)
{
	const cJSON *t;
	size_t n;

	if (!tools || cJSON_IsNull(tools))
		return 0;
	if (!cJSON_IsArray(tools))
		return req_fail(err, 400, "invalid_type", "tools", "tools must be an array");
	n = (size_t)cJSON_GetArraySize(tools);
	if (n > REQ_MAX_TOOLS)
		return req_fail(err, 400, "invalid_value", "tools",
			    "at most %d tools are accepted", REQ_MAX_TOOLS);
	r->tools = calloc(n + 1, sizeof *r->tools);
	if (!r->tools)
		return req_oom(err);
	cJSON_ArrayForEach(t, tools) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

		if (!cJSON_IsObject(t) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "function") || !cJSON_IsObject(fn) ||
		    !cJSON_IsString(name) || !name->valuestring[0])
			return req_fail(err, 400, "invalid_type", "tools",
				    "tools[%zu] must be {\"type\":\"function\",\"function\":{\"name\":…}}",
				    r->ntools);
		r->tools[r->ntools] = strdup(name->valuestring);
		if (!r->tools[r->ntools])
			return req_oom(err);
		if (!strcmp(name->valuestring, "finish"))
			r->agent = 1;
		r->ntools++;
	}
	return 0;
}

static int parse_scalars(const cJSON *root, struct chat_request *r,
			 const struct registry *reg, struct req_error *err)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "codellm");

	if (!cJSON_IsString(model) || !model->valuestring[0])
		return req_fail(err, 400, "missing_required_parameter", "model",
			    "model is required and must be a non-empty string");
	if (strlen(model->valuestring) > 256)
		return req_fail(err, 400, "invalid_value", "model",
			    "model is longer than 256 bytes");
	r->model = strdup(model->valuestring);
	if (!r->model)
		return req_oom(err);
	r->model_interp = reg_lookup(reg, r->model, strlen(r->model));
	if (n && !cJSON_IsNull(n) &&
	    (!cJSON_IsNumber(n) || n->valuedouble != 1.0))
		return req_fail(err, 400, "invalid_value", "n",
			    "n must be 1: a program has one output");
	if (stream && !cJSON_IsNull(stream) && !cJSON_IsBool(stream))
		return req_fail(err, 400, "invalid_type", "stream", "stream must be a boolean");
	r->stream = cJSON_IsTrue(stream);
	if (so && !cJSON_IsNull(so)) {
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(so, "include_usage");

		/* null means absent here as for every other optional field */
		if (!cJSON_IsObject(so) ||
		    (iu && !cJSON_IsNull(iu) && !cJSON_IsBool(iu)))
			return req_fail(err, 400, "invalid_type", "stream_options",
				    "stream_options must be an object with a boolean include_usage");
		r->include_usage = cJSON_IsTrue(iu);
	}
	if (ext && !cJSON_IsNull(ext)) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ext, "timeout_s");

		if (!cJSON_IsObject(ext))
			return req_fail(err, 400, "invalid_type", "codellm",
				    "codellm must be an object");
		if (t && !cJSON_IsNull(t)) {
			if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) ||
			    t->valuedouble <= 0)
				return req_fail(err, 400, "invalid_value", "codellm.timeout_s",
					    "codellm.timeout_s must be a positive number of seconds");
			r->timeout_s = t->valuedouble;
		}
	}
	return 0;
}

/* The "answer" of a finish call's arguments (a JSON text in a string),
 * "" when they hold none; NULL only when memory ran out. */
static char *finish_args_answer(const cJSON *args)
{
	struct precheck pc;
	const cJSON *a;
	cJSON *o = NULL;
	char *s;

	if (cJSON_IsString(args) &&
	    precheck_json(args->valuestring, strlen(args->valuestring), &pc) == 0 &&
	    !(o = cJSON_Parse(args->valuestring)))
		return NULL;	/* it passed precheck_json: only memory is left */
	a = cJSON_GetObjectItemCaseSensitive(o, "answer");
	s = strdup(cJSON_IsString(a) ? a->valuestring : "");
	cJSON_Delete(o);
	return s;
}

static int is_finish(const cJSON *fn)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

	return cJSON_IsString(name) && !strcmp(name->valuestring, "finish");
}

/* Whether message m (role r) is a finish call or its result: an
 * assistant message whose tool_calls (or legacy function_call) name
 * finish, or a tool/function message named finish. Sets x->finish;
 * -1 only when memory ran out. Anything malformed is not a finish. */
static int finish_of(const cJSON *m, const char *r, struct msg *x)
{
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *c;
	const cJSON *legacy = cJSON_GetObjectItemCaseSensitive(m, "function_call");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");

	if (is_role(r, "assistant")) {
		for (c = cJSON_IsArray(calls) ? calls->child : NULL; c; c = c->next) {
			const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");

			if (is_finish(fn)) {
				x->finish = finish_args_answer(
					cJSON_GetObjectItemCaseSensitive(fn, "arguments"));
				return x->finish ? 0 : -1;
			}
		}
		if (is_finish(legacy)) {
			x->finish = finish_args_answer(
				cJSON_GetObjectItemCaseSensitive(legacy, "arguments"));
			return x->finish ? 0 : -1;
		}
	} else if ((is_role(r, "tool") || is_role(r, "function")) &&
		   cJSON_IsString(name) && !strcmp(name->valuestring, "finish")) {
		x->finish = strdup(x->text ? x->text : "");
		return x->finish ? 0 : -1;
	}
	return 0;
}

static int parse_messages(cJSON *arr, struct msg **ret, size_t *ret_n,
			  struct file_ctx *fc, struct req_error *err)
{
	static const char *const roles[] = {
		"system", "developer", "user", "assistant", "tool", "function",
	};
	cJSON *m;
	struct msg *msgs;
	size_t n, i = 0;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
		return req_fail(err, 400, "missing_required_parameter", "messages",
			    "messages must be a non-empty array");
	n = (size_t)cJSON_GetArraySize(arr);
	if (n > REQ_MAX_MESSAGES)
		return req_fail(err, 400, "invalid_value", "messages",
			    "at most %d messages are accepted", REQ_MAX_MESSAGES);
	msgs = calloc(n, sizeof *msgs);
	if (!msgs)
		return req_oom(err);
	*ret = msgs;
	cJSON_ArrayForEach(m, arr) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
		struct msg *x = &msgs[i];
		const char *r;

		*ret_n = i + 1;
		if (!cJSON_IsObject(m) || !cJSON_IsString(role))
			return req_fail(err, 400, "invalid_type", "messages",
				    "messages[%zu] must be an object with a string role", i);
		r = NULL;
		for (size_t k = 0; k < sizeof roles / sizeof roles[0] && !r; k++)
			if (!strcmp(role->valuestring, roles[k]))
				r = roles[k];
		if (!r)
			return req_fail(err, 400, "invalid_value", "messages",
				    "messages[%zu].role \"%.32s\" is not one of system, developer, user, assistant, tool",
				    i, role->valuestring);
		if (name && !cJSON_IsNull(name) && !cJSON_IsString(name))
			return req_fail(err, 400, "invalid_type", "messages",
				    "messages[%zu].name must be a string", i);
		x->role = r;
		x->name = !cJSON_IsString(name) ? NULL :
			  !strcmp(name->valuestring, "fleet_input") ? "fleet_input" :
			  !strcmp(name->valuestring, "stdin") ? "stdin" : "";
		if (msg_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, x, fc, err) < 0)
			return -1;
		if (finish_of(m, r, x) < 0)
			return req_oom(err);
		x->codeable = (is_role(r, "system") || is_role(r, "developer") ||
			       is_role(r, "user")) &&
			      !(x->name && (!strcmp(x->name, "fleet_input") ||
					    !strcmp(x->name, "stdin")));
		i++;
	}
	return 0;
}

static int take_blocks(struct chat_request *r, const struct registry *reg,
		       const struct msg *m, const struct req_limits *lim,
		       struct req_error *err)
{
	struct fence_scan s = {0};
	struct fence_block f;
	size_t runnable, nf = count_fences(r, reg, m, &runnable), listed;

	if (runnable > lim->max_blocks)
		return req_fail(err, 400, "too_many_blocks", "messages",
			    "the code message has %zu runnable blocks; at most %zu are accepted (--max-blocks)",
			    runnable, lim->max_blocks);
	/* skipped fences past --max-skipped-fences are counted, not kept:
	 * what a request makes the handler hold, and echo, stays bounded */
	listed = nf - runnable < lim->max_skipped ? nf - runnable : lim->max_skipped;
	r->blocks = calloc(runnable ? runnable : 1, sizeof *r->blocks);
	r->skipped = calloc(listed ? listed : 1, sizeof *r->skipped);
	if (!r->blocks || !r->skipped)
		return req_oom(err);
	while (fence_next(m->text, m->len, &s, &f)) {
		const struct interp *it = fence_interp(r, reg, m->text, &f);
		const char *l = m->text + f.label_off;
		struct req_block *b;

		if (!it && r->nskipped == listed) {
			r->skipped_truncated++;
			continue;
		}
		if (!it) {
			r->skipped[r->nskipped].label = dupn(l, label_len(l, f.label_len));
			if (!r->skipped[r->nskipped].label)
				return req_oom(err);
			r->skipped[r->nskipped++].line = f.start_line;
			continue;
		}
		/* a runnable label names an interpreter: as short as that */
		b = &r->blocks[r->nblocks++];
		b->interp = it;
		b->label = dupn(l, f.label_len);
		b->start_line = f.start_line;
		b->end_line = f.end_line;
		b->code = malloc(f.body_end - f.body_off + 1);
		if (!b->label || !b->code)
			return req_oom(err);
		b->code_len = fence_content(m->text, &f, b->code);
		b->code[b->code_len] = '\0';
	}
	return 0;
}

static int whole_message(struct chat_request *r, const struct msg *m,
			 struct req_error *err)
{
	r->blocks = calloc(1, sizeof *r->blocks);
	if (!r->blocks)
		return req_oom(err);
	r->nblocks = 1;
	r->blocks[0].interp = r->model_interp;
	r->blocks[0].label = strdup("");
	r->blocks[0].code = dupn(m->text, m->len);
	r->blocks[0].code_len = m->len;
	r->blocks[0].start_line = 1;
	r->blocks[0].end_line = 1;
	for (size_t i = 0; i < m->len; i++)
		if (m->text[i] == '\n' && i + 1 < m->len)
			r->blocks[0].end_line++;
	if (!r->blocks[0].label || !r->blocks[0].code)
		return req_oom(err);
	return 0;
}

/* The code message: the last system/user message with a runnable block,
 * its blocks taken; else, when the model names an interpreter, the last
 * user message whole. Sets *ret_code, or -1 with err filled. */
static int find_code_message(struct chat_request *r, const struct registry *reg,
			     const struct msg *msgs, size_t nmsgs,
			     const struct req_limits *lim, size_t *ret_code,
			     struct req_error *err)
{
	size_t code = (size_t)-1;
	char seen[384];

	for (size_t i = nmsgs; i-- > 0 && code == (size_t)-1;) {
		size_t runnable = 0;

		if (msgs[i].codeable)
			count_fences(r, reg, &msgs[i], &runnable);
		if (runnable)
			code = i;
	}
	if (code != (size_t)-1) {
		*ret_code = code;
		return take_blocks(r, reg, &msgs[code], lim, err);
	}
	if (r->model_interp) {
		/* model names an interpreter: the last user message runs whole */
		for (size_t i = nmsgs; i-- > 0;)
			if (is_role(msgs[i].role, "user") && msgs[i].codeable) {
				*ret_code = i;
				return whole_message(r, &msgs[i], err);
			}
	}
	labels_seen(msgs, nmsgs, seen, sizeof seen);
	return req_fail(err, 400, "no_runnable_block", "messages",
		    "no runnable code block: no system or user message has a fenced block whose label names an interpreter (labels seen: %s)",
		    seen);
}

int req_check_allowed(const struct chat_request *r, const struct registry *reg,
		      size_t from, size_t to, const char *param, struct req_error *err)
{
	if (!reg->any_allowed)
		return req_fail(err, 403, "execution_disabled", NULL,
			    "code execution is disabled on this server (--allowed-programs is empty)");
	for (size_t i = from; i < to && i < r->nblocks; i++)
		if (!r->blocks[i].interp->allowed)
			return req_fail(err, 403, "program_not_allowed", param,
				    "block %zu (\"%.64s\", line %u) needs interpreter \"%s\", which is not in --allowed-programs",
				    i, r->blocks[i].label, r->blocks[i].start_line,
				    r->blocks[i].interp->name);
	return 0;
}

/* The run's inputs, taken out of msgs: the bag (a message named
 * fleet_input) and stdin: a message named "stdin", else (run mode) the
 * last plain system message before the code message that holds no
 * fence. */
static void take_inputs(struct chat_request *r, struct msg *msgs, size_t nmsgs, size_t code)
{
	for (size_t i = nmsgs; i-- > 0;) {
		if (msgs[i].name && !strcmp(msgs[i].name, "fleet_input") && !r->bag) {
			r->bag = msgs[i].text;
			r->bag_len = msgs[i].len;
			msgs[i].text = NULL;
		}
	}
	for (size_t i = nmsgs; i-- > 0;)
		if (msgs[i].name && !strcmp(msgs[i].name, "stdin") && msgs[i].text) {
			r->stdin_data = msgs[i].text;
			r->stdin_len = msgs[i].len;
			msgs[i].text = NULL;
			break;
		}
	if (!r->stdin_data && !r->agent)
		for (size_t i = code; i-- > 0;) {
			/* developer is the newer name of system, as for the
			 * code message */
			if ((!is_role(msgs[i].role, "system") &&
			     !is_role(msgs[i].role, "developer")) ||
			    msgs[i].name || !msgs[i].text)
				continue;
			if (fence_extract(msgs[i].text, msgs[i].len, NULL, 0) != 0)
				continue;
			r->stdin_data = msgs[i].text;
			r->stdin_len = msgs[i].len;
			msgs[i].text = NULL;
			break;
		}
	/* request.h promises NULL for an empty stdin; only now, so that an
	 * empty "stdin" message still wins over the system fallback */
	if (r->stdin_data && !r->stdin_len) {
		free(r->stdin_data);
		r->stdin_data = NULL;
	}
}

int req_parse(const char *body, size_t len, const struct registry *reg,
	      const struct req_limits *lim, struct chat_request *r,
	      struct req_error *err)
{
	cJSON *root = NULL;
	struct msg *msgs = NULL;
	size_t nmsgs = 0, code = 0;
	struct file_ctx fc = { .r = r, .lim = lim };
	int rc = -1;

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	if (!(root = parse_object(body, len, err)))
		return -1;
	if (parse_scalars(root, r, reg, err) < 0 ||
	    parse_tools(cJSON_GetObjectItemCaseSensitive(root, "tools"), r, err) < 0 ||
	    parse_messages(cJSON_GetObjectItemCaseSensitive(root, "messages"),
			   &msgs, &nmsgs, &fc, err) < 0)
		goto out;
	/* everything needed is copied or taken out of the tree: let it go
	 * before the blocks are copied, so the two never add up */
	cJSON_Delete(root);
	root = NULL;
	if (find_code_message(r, reg, msgs, nmsgs, lim, &code, err) < 0)
		goto out;
	r->code_text = msgs[code].text;
	r->code_text_len = msgs[code].len;
	msgs[code].text = NULL;

	for (size_t i = code + 1; i < nmsgs; i++) {
		if (is_role(msgs[i].role, "assistant") || is_role(msgs[i].role, "tool") ||
		    is_role(msgs[i].role, "function"))
			r->rerun_guard = 1;
		/* the call's answer over its result's text: the first call,
		 * or else the first result */
		if (msgs[i].finish && (!r->finish_answer || is_role(msgs[i].role, "assistant")) &&
		    !(r->finish_answer && r->finish_from_call)) {
			free(r->finish_answer);
			r->finish_answer = msgs[i].finish;
			r->finish_from_call = is_role(msgs[i].role, "assistant");
			msgs[i].finish = NULL;
		}
	}
	if (!r->rerun_guard &&
	    req_check_allowed(r, reg, 0, r->nblocks, "messages", err) < 0)
		goto out;
	take_inputs(r, msgs, nmsgs, code);
	rc = 0;
out:
	for (size_t i = 0; i < nmsgs; i++) {
		free(msgs[i].text);
		free(msgs[i].finish);
	}
	free(msgs);
	cJSON_Delete(root);
	if (rc < 0)
		req_free(r);
	return rc;
}

int req_block_file(const struct chat_request *r, size_t i, char **ret_name,
		   struct jbuf *text)
{
	const struct req_block *b = &r->blocks[i];
	const struct interp *it = b->interp;
	size_t pre = it->prepend ? strlen(it->prepend) : 0;

	if (asprintf(ret_name, "block-%zu%s", i, it->ext ? it->ext : "") < 0) {
		*ret_name = NULL;
		return -1;
	}
	/* php's "<?php" (a registry "prepend") unless the code has it */
	if (pre && !(b->code_len >= pre - 1 &&
		     !strncmp(b->code, it->prepend, pre - (it->prepend[pre - 1] == '\n'))))
		jbuf_append(text, it->prepend, pre);
	jbuf_append(text, b->code, b->code_len);
	return 0;
}

void req_free(struct chat_request *r)
{
	free(r->model);
	for (size_t i = 0; i < r->ntools; i++)
		free(r->tools[i]);
	free(r->tools);
	for (size_t i = 0; i < r->nblocks; i++) {
		free(r->blocks[i].label);
		free(r->blocks[i].code);
	}
	free(r->blocks);
	for (size_t i = 0; i < r->nskipped; i++)
		free(r->skipped[i].label);
	free(r->skipped);
	free(r->code_text);
	free(r->stdin_data);
	free(r->bag);
	free(r->finish_answer);
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i].name);
		free(r->files[i].data);
	}
	free(r->files);
	memset(r, 0, sizeof *r);
}

int req_take_markdown(char *text, size_t len, const struct registry *reg,
			   const struct req_limits *lim, struct chat_request *r,
			   struct req_error *err)
{
	struct msg m = { .role = "user", .text = text, .len = len };

	/* no model here: a fence without a label names no interpreter */
	if (take_blocks(r, reg, &m, lim, err) < 0) {
		free(m.text);
		req_free(r);
		if (err->param && !strcmp(err->param, "messages"))
			err->param = "body";
		return -1;
	}
	r->code_text = m.text;
	r->code_text_len = m.len;
	return 0;
}

int req_from_markdown(const char *text, size_t len, const struct registry *reg,
		      const struct req_limits *lim, struct chat_request *r,
		      struct req_error *err)
{
	char *own;

	memset(r, 0, sizeof *r);
	memset(err, 0, sizeof *err);
	own = dupn(text, len);
	if (!own)
		return req_oom(err);
	return req_take_markdown(own, len, reg, lim, r, err);
}
