#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "json/response.h"
#include "json/sha256.h"

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s, strlen(s));
}

void resp_error(struct jbuf *b, const char *message, const char *type,
		const char *param, const char *code)
{
	jbuf_puts(b, "{\"error\":{\"message\":");
	str(b, message);
	jbuf_puts(b, ",\"type\":");
	str(b, type);
	jbuf_puts(b, ",\"param\":");
	if (param)
		str(b, param);
	else
		jbuf_puts(b, "null");
	jbuf_puts(b, ",\"code\":");
	if (code)
		str(b, code);
	else
		jbuf_puts(b, "null");
	jbuf_puts(b, "}}");
}

static void model_obj(struct jbuf *b, const char *id, long created)
{
	jbuf_puts(b, "{\"id\":");
	str(b, id);
	jbuf_printf(b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"codellm\"}",
		    created);
}

void resp_models(struct jbuf *b, const struct registry *reg, long created,
		 const struct jbuf *more)
{
	jbuf_puts(b, "{\"object\":\"list\",\"data\":[");
	model_obj(b, "codellm", created);
	for (size_t i = 0; i < reg->n; i++) {
		if (!reg->v[i].allowed)
			continue;
		jbuf_puts(b, ",");
		model_obj(b, reg->v[i].name, created);
	}
	if (more && more->len)
		jbuf_append(b, more->p, more->len);
	jbuf_puts(b, "]}");
}

int resp_model(struct jbuf *b, const struct registry *reg, const char *id,
	       long created)
{
	if (strcmp(id, "codellm")) {
		size_t i;

		for (i = 0; i < reg->n; i++)
			if (reg->v[i].allowed && !strcmp(reg->v[i].name, id))
				break;
		if (i == reg->n)
			return -1;
	}
	model_obj(b, id, created);
	return 0;
}

static void layer_array(struct jbuf *b, unsigned bits)
{
	int first = 1;

	jbuf_puts(b, "[");
	for (int l = 0; l < SBX_L_COUNT; l++) {
		if (!(bits & SBX_BIT(l)))
			continue;
		jbuf_printf(b, "%s\"%s\"", first ? "" : ",", sbx_layer_name(l));
		first = 0;
	}
	jbuf_puts(b, "]");
}

void resp_sandbox(struct jbuf *b, const struct sbx_layers *l)
{
	jbuf_printf(b, "{\"mode\":\"%s\",\"layers\":", sbx_mode_name(l->mode));
	layer_array(b, l->applied);
	jbuf_puts(b, ",\"missing\":");
	layer_array(b, l->missing);
	jbuf_printf(b, ",\"net\":\"%s\"}", sbx_net_name(l->net));
}

void resp_health_sandbox(struct jbuf *b, const struct sbx_health *h)
{
	const struct sbx_probe *pr = &h->host;

	jbuf_printf(b, "{\"mode\":\"%s\",\"available\":%s,\"userns\":%s,"
		    "\"landlock_abi\":%d,\"seccomp\":%s,\"cgroup2\":%s,\"sandbox\":",
		    sbx_mode_name(h->mode), h->available ? "true" : "false",
		    pr->userns ? "true" : "false", pr->landlock_abi < 0 ? 0 : pr->landlock_abi,
		    pr->seccomp ? "true" : "false", pr->cgroup2 ? "true" : "false");
	resp_sandbox(b, &h->layers);
	jbuf_puts(b, ",\"memory\":");
	str(b, h->memory);
	if (!h->available) {
		jbuf_printf(b, ",\"failed_layer\":\"%s\",\"error\":",
			    sbx_layer_name(h->failed_layer));
		str(b, h->error);
	}
	jbuf_puts(b, "}");
}

void resp_skipped_fences(struct jbuf *b, const struct chat_request *r)
{
	jbuf_puts(b, "\"skipped_fences\":[");
	for (size_t i = 0; i < r->nskipped; i++) {
		jbuf_puts(b, i ? ",{\"label\":" : "{\"label\":");
		str(b, r->skipped[i].label);
		jbuf_printf(b, ",\"line\":%u}", r->skipped[i].line);
	}
	jbuf_puts(b, "]");
	/* only when the list was cut: otherwise the answer is as it was */
	if (r->skipped_truncated)
		jbuf_printf(b, ",\"skipped_fences_truncated\":%zu", r->skipped_truncated);
}

/* stderr of a block: the tail the sandbox kept */
static void block_stderr(struct jbuf *b, const struct sbx_block_result *br)
{
	jstr_escape(b, br->err.p ? br->err.p : "", br->err.len);
}

/* The type an artifact's name suggests, by its extension. */
const char *resp_mime(const char *name)
{
	static const char *const map[][2] = {
		{ "png", "image/png" }, { "jpg", "image/jpeg" }, { "jpeg", "image/jpeg" },
		{ "gif", "image/gif" }, { "webp", "image/webp" }, { "svg", "image/svg+xml" },
		{ "bmp", "image/bmp" }, { "tif", "image/tiff" }, { "tiff", "image/tiff" },
		{ "pdf", "application/pdf" }, { "json", "application/json" },
		{ "csv", "text/csv" }, { "tsv", "text/tab-separated-values" },
		{ "txt", "text/plain" }, { "md", "text/markdown" }, { "html", "text/html" },
		{ "htm", "text/html" }, { "xml", "application/xml" }, { "zip", "application/zip" },
		{ "gz", "application/gzip" }, { "tar", "application/x-tar" },
		{ "parquet", "application/vnd.apache.parquet" },
		{ "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
		{ "wav", "audio/wav" }, { "mp3", "audio/mpeg" }, { "mp4", "video/mp4" },
	};
	const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');

	if (dot && (!slash || dot > slash + 1))
		for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
			if (!strcasecmp(dot + 1, map[i][0]))
				return map[i][1];
	return "application/octet-stream";
}

void resp_files(struct jbuf *b, const struct sbx_artifacts *f, int with_data)
{
	if (!f || (!f->n && !f->truncated))
		return;
	jbuf_puts(b, ",\"files\":[");
	for (size_t i = 0; i < f->n; i++) {
		const struct sbx_artifact *a = &f->v[i];

		jbuf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		jstr_escape(b, a->name, strlen(a->name));
		if (!jstr_utf8_valid(a->name, strlen(a->name))) {
			/* "name" had U+FFFD for some bytes: these are exact */
			jbuf_puts(b, ",\"name_base64\":\"");
			jstr_base64(b, a->name, strlen(a->name));
			jbuf_puts(b, "\"");
		}
		jbuf_printf(b, ",\"bytes\":%llu,\"mime\":\"%s\"", (unsigned long long)a->bytes,
			    resp_mime(a->name));
		if (a->data) {
			char hex[65];

			sha256_hex(a->data, a->len, hex);
			jbuf_printf(b, ",\"sha256\":\"%s\"", hex);
			if (with_data) {
				jbuf_puts(b, ",\"data_b64\":\"");
				jstr_base64(b, a->data, a->len);
				jbuf_puts(b, "\"");
			}
			jbuf_puts(b, "}");
		} else {
			jbuf_puts(b, ",\"omitted\":");
			str(b, a->omitted ? a->omitted : "unreadable");
			jbuf_puts(b, "}");
		}
	}
	jbuf_puts(b, "]");
	if (f->truncated)
		jbuf_printf(b, ",\"files_truncated\":%zu", f->truncated);
}

void resp_usage(struct jbuf *b, const struct sbx_usage *u, int run)
{
	jbuf_printf(b, "{\"cpu_user_ms\":%ld,\"cpu_sys_ms\":%ld,\"max_rss_kib\":%ld",
		    u->cpu_user_ms, u->cpu_sys_ms, u->max_rss_kib);
	if (run && u->cgroup) {
		jbuf_printf(b, ",\"memory_bound\":\"cgroup v%d\",\"memory_peak_kib\":", u->cgroup);
		jbuf_printf(b, u->memory_peak_kib < 0 ? "null" : "%ld", u->memory_peak_kib);
		jbuf_puts(b, ",\"oom_kills\":");
		jbuf_printf(b, u->oom_kills < 0 ? "null" : "%ld", u->oom_kills);
	}
	else if (run)
		jbuf_puts(b, ",\"memory_bound\":\"none\",\"memory_peak_kib\":null,"
			  "\"oom_kills\":null");
	jbuf_puts(b, "}");
}

void resp_codellm(struct jbuf *b, const struct resp_run *rr)
{
	const struct sbx_result *res = rr->res;
	const struct chat_request *r = rr->req;

	jbuf_printf(b, "{\"exit_code\":%d,\"timed_out\":%s,\"duration_ms\":%ld,\"stderr\":",
		    res ? res->exit_code : 0,
		    res && res->end == SBX_END_TIMEOUT ? "true" : "false",
		    res ? res->duration_ms : 0L);
	if (res && res->n)
		block_stderr(b, &res->res[res->decider]);
	else
		jbuf_puts(b, "\"\"");
	jbuf_puts(b, ",\"sandbox\":");
	if (res)
		resp_sandbox(b, &res->layers);
	else
		jbuf_puts(b, "null");
	if (rr->env_name) {
		jbuf_puts(b, ",\"environment\":{\"name\":");
		str(b, rr->env_name);
		jbuf_puts(b, ",\"digest\":");
		str(b, rr->env_digest ? rr->env_digest : "");
		jbuf_puts(b, "}");
	}
	jbuf_printf(b, ",\"blocks\":%zu,\"block_results\":[", res ? res->n : (size_t)0);
	for (size_t i = 0; res && i < res->n; i++) {
		const struct sbx_block_result *br = &res->res[i];

		jbuf_printf(b, "%s{\"index\":%zu,\"lang\":", i ? "," : "", i);
		str(b, r->blocks[i].interp->name);
		jbuf_printf(b, ",\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s,"
			    "\"duration_ms\":%ld,\"stderr\":",
			    br->exit_code, br->signal,
			    br->killed && res->end == SBX_END_TIMEOUT ? "true" : "false",
			    br->duration_ms);
		block_stderr(b, br);
		jbuf_printf(b, ",\"stderr_bytes\":%llu,\"stdout_bytes\":%llu,\"usage\":",
			    (unsigned long long)br->err_bytes,
			    (unsigned long long)br->out_bytes);
		resp_usage(b, &br->usage, 0);
		jbuf_puts(b, "}");
	}
	jbuf_puts(b, "],");
	if (res) {
		jbuf_puts(b, "\"usage\":");
		resp_usage(b, &res->usage, 1);
		jbuf_puts(b, ",");
	}
	resp_skipped_fences(b, r);
	if (rr->changes >= 0)
		jbuf_printf(b, ",\"changes\":%ld", rr->changes);
	if (rr->files)
		resp_files(b, rr->files, 1);
	if (!res)
		jbuf_puts(b, ",\"rerun_guard\":true");
	else if (res->end == SBX_END_SIGNAL)
		jbuf_printf(b, ",\"terminated_by_signal\":%d", res->end_signal);
	jbuf_puts(b, "}");
}

static void head(struct jbuf *b, const struct resp_run *rr)
{
	jbuf_puts(b, "{\"id\":");
	str(b, rr->id);
	jbuf_printf(b, ",\"object\":\"chat.completion\",\"created\":%ld,\"model\":",
		    rr->created);
	str(b, rr->req->model);
}

void resp_completion(struct jbuf *b, const struct resp_run *rr)
{
	const struct sbx_result *res = rr->res;
	int length = res && (res->out_truncated || res->end != SBX_END_NORMAL);

	head(b, rr);
	jbuf_puts(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
	if (res)
		jstr_escape(b, res->out.p ? res->out.p : "", res->out.len);
	else
		str(b, rr->text ? rr->text : "");
	jbuf_printf(b, ",\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"%s\"}],"
		    "\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0},"
		    "\"system_fingerprint\":null,\"codellm\":",
		    length ? "length" : "stop");
	resp_codellm(b, rr);
	jbuf_puts(b, "}");
}

void resp_agent_completion(struct jbuf *b, const struct resp_run *rr,
			   const char *calls, size_t calls_len)
{
	head(b, rr);
	jbuf_puts(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
		  "\"content\":\"\",\"refusal\":null,\"tool_calls\":");
	jbuf_append(b, calls, calls_len);
	jbuf_puts(b, "},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],"
		  "\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0},"
		  "\"system_fingerprint\":null,\"codellm\":");
	resp_codellm(b, rr);
	jbuf_puts(b, "}");
}

void resp_execution_error(struct jbuf *b, const char *code, const char *message,
			  const struct resp_run *rr)
{
	jbuf_puts(b, "{\"error\":{\"message\":");
	str(b, message);
	jbuf_puts(b, ",\"type\":\"execution_error\",\"param\":null,\"code\":");
	str(b, code);
	jbuf_puts(b, "},\"codellm\":");
	resp_codellm(b, rr);
	jbuf_puts(b, "}");
}

static void chunk_head(struct jbuf *b, const struct resp_run *rr)
{
	jbuf_puts(b, "{\"id\":");
	str(b, rr->id);
	jbuf_printf(b, ",\"object\":\"chat.completion.chunk\",\"created\":%ld,\"model\":",
		    rr->created);
	str(b, rr->req->model);
	jbuf_puts(b, ",\"system_fingerprint\":null,\"choices\":[");
}

static void delta_open(struct jbuf *b, const struct resp_run *rr)
{
	chunk_head(b, rr);
	jbuf_puts(b, "{\"index\":0,\"delta\":");
}

static void delta_close(struct jbuf *b)
{
	jbuf_puts(b, ",\"logprobs\":null,\"finish_reason\":null}]}\n");
}

void resp_sse_role(struct jbuf *b, const struct resp_run *rr)
{
	delta_open(b, rr);
	jbuf_puts(b, "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}");
	delta_close(b);
}

void resp_sse_content(struct jbuf *b, const struct resp_run *rr,
		      const char *data, size_t len)
{
	delta_open(b, rr);
	jbuf_puts(b, "{\"content\":");
	jstr_escape(b, data, len);
	jbuf_puts(b, "}");
	delta_close(b);
}

void resp_sse_call_head(struct jbuf *b, const struct resp_run *rr, size_t index,
			const char *id, const char *name)
{
	delta_open(b, rr);
	jbuf_printf(b, "{\"tool_calls\":[{\"index\":%zu,\"id\":", index);
	str(b, id);
	jbuf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
	str(b, name);
	jbuf_puts(b, ",\"arguments\":\"\"}}]}");
	delta_close(b);
}

void resp_sse_call_args(struct jbuf *b, const struct resp_run *rr, size_t index,
			const char *args)
{
	delta_open(b, rr);
	jbuf_printf(b, "{\"tool_calls\":[{\"index\":%zu,\"function\":{\"arguments\":", index);
	str(b, args);
	jbuf_puts(b, "}}]}");
	delta_close(b);
}

void resp_sse_final(struct jbuf *b, const struct resp_run *rr, const char *finish_reason)
{
	delta_open(b, rr);
	jbuf_printf(b, "{},\"logprobs\":null,\"finish_reason\":\"%s\"}],\"codellm\":",
		    finish_reason);
	resp_codellm(b, rr);
	jbuf_puts(b, "}\n");
}

void resp_sse_usage(struct jbuf *b, const struct resp_run *rr)
{
	chunk_head(b, rr);
	jbuf_puts(b, "],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,"
		  "\"total_tokens\":0}}\n");
}

void resp_sse_error(struct jbuf *b, const char *code, const char *type,
		    const char *message, const struct resp_run *rr)
{
	jbuf_puts(b, "{\"error\":{\"message\":");
	str(b, message);
	jbuf_puts(b, ",\"type\":");
	str(b, type);
	jbuf_puts(b, ",\"param\":null,\"code\":");
	str(b, code);
	jbuf_puts(b, "}");
	if (rr && rr->res) {
		jbuf_puts(b, ",\"codellm\":");
		resp_codellm(b, rr);
	}
	jbuf_puts(b, "}\n");
}

void resp_sse_done(struct jbuf *b)
{
	jbuf_puts(b, "[DONE]\n");
}

/* ---- agent mode's tool calls, rendered from the parsed output ---- */

/* Each call's arguments is a JSON text carried as a JSON string. */
void resp_tool_calls(struct jbuf *b, const struct agent_output *o, const char *request_id)
{
	struct jbuf args = {0};
	char id[AGENT_CALL_ID_MAX];

	jbuf_puts(b, "[");
	for (size_t i = 0; i <= o->n; i++) {
		args.len = 0;
		agent_call_args(&args, o, i);
		agent_call_id(id, request_id, i);
		jbuf_puts(b, i ? ",{\"id\":" : "{\"id\":");
		str(b, id);
		jbuf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
		str(b, agent_call_name(o, i));
		jbuf_puts(b, ",\"arguments\":");
		jstr_escape(b, args.p ? args.p : "", args.len);
		jbuf_puts(b, "}}");
	}
	jbuf_puts(b, "]");
	if (args.oom)
		b->oom = 1;
	jbuf_free(&args);
}

void resp_sse_tool_calls(struct jbuf *b, const struct resp_run *rr,
			 const struct agent_output *o)
{
	struct jbuf args = {0};
	char id[AGENT_CALL_ID_MAX];

	for (size_t i = 0; i <= o->n; i++) {
		args.len = 0;
		agent_call_args(&args, o, i);
		agent_call_id(id, rr->id, i);
		resp_sse_call_head(b, rr, i, id, agent_call_name(o, i));
		resp_sse_call_args(b, rr, i, jbuf_cstr(&args) ? args.p : "");
	}
	if (args.oom)
		b->oom = 1;
	jbuf_free(&args);
}

/* Parse and render in one call: for tests and the fuzz target, which
 * check the rendered tool calls of an output. */
long agent_tool_calls(const char *out, size_t len, char *const *tools,
		      size_t ntools, const char *request_id, struct jbuf *b,
		      struct agent_error *err)
{
	struct agent_output o;
	struct jbuf calls = {0};
	long rc = -1;

	if (agent_parse(out, len, tools, ntools, &o, err) < 0)
		return -1;
	resp_tool_calls(&calls, &o, request_id);
	if (calls.oom) {
		err->code = "invalid_changes";
		snprintf(err->message, sizeof err->message, "out of memory building the tool calls");
	} else {
		jbuf_append(b, calls.p, calls.len);
		rc = (long)o.n;
	}
	jbuf_free(&calls);
	agent_output_free(&o);
	return rc;
}

/* Whether an interpreter's program is on this host: an absolute path,
 * or in /usr/local/bin, /usr/bin or /bin (the blocks' PATH). */
static int program_found(const char *prog)
{
	char path[512];

	if (prog[0] == '/')
		return access(prog, X_OK) == 0;
	for (const char *d = "/usr/local/bin\0/usr/bin\0/bin\0"; *d; d += strlen(d) + 1) {
		snprintf(path, sizeof path, "%s/%s", d, prog);
		if (access(path, X_OK) == 0)
			return 1;
	}
	return 0;
}

void resp_interpreters(struct jbuf *b, const struct registry *reg)
{
	jbuf_puts(b, "[");
	for (size_t i = 0; i < reg->n; i++) {
		const struct interp *it = &reg->v[i];

		jbuf_printf(b, "%s{\"name\":\"%s\",\"program\":", i ? "," : "", it->name);
		jstr_escape(b, it->argv[0], strlen(it->argv[0]));
		jbuf_printf(b, ",\"found\":%s,\"allowed\":%s}",
			    program_found(it->argv[0]) ? "true" : "false",
			    it->allowed ? "true" : "false");
	}
	jbuf_puts(b, "]");
}

