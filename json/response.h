/* Response bodies: the OpenAI error object, chat.completion, model
 * lists. Written with jstr_escape so any byte of program output yields
 * valid JSON. */
#ifndef CODELLM_RESPONSE_H
#define CODELLM_RESPONSE_H

#include "json/agent.h"
#include "json/jstr.h"
#include "json/registry.h"
#include "json/request.h"
#include "sandbox/result.h"

void resp_error(struct jbuf *b, const char *message, const char *type,
		const char *param, const char *code);

/* {"object":"list","data":[…]}: "codellm", one model per allowed
 * interpreter, then `more` (",{…}" items: the environments), if any. */
void resp_models(struct jbuf *b, const struct registry *reg, long created,
		 const struct jbuf *more);
/* One model object; returns -1 when id is not one of ours. */
int resp_model(struct jbuf *b, const struct registry *reg, const char *id,
	       long created);

struct resp_run {
	const char *id;
	long created;
	const struct chat_request *req;
	const struct sbx_result *res;	/* NULL when nothing ran (re-execution guard) */
	long changes;			/* agent mode: changes mapped, or -1 */
	const char *text;		/* content when nothing ran (res NULL): the
					 * finish answer of a follow-up turn, or NULL */
	const struct sbx_artifacts *files;	/* /work/out after the run, or NULL */
	const char *env_name;		/* the environment the blocks ran in, or NULL */
	const char *env_digest;
};

/* ,"files":[{"name","bytes","mime","sha256","data_b64"} or
 * {"name","bytes","mime","omitted"}…] and ,"files_truncated":K when
 * more were only counted; nothing when there is none (or f is NULL).
 * A name that is not valid UTF-8 has "name_base64" after "name" too.
 * Without with_data no "data_b64" (MCP carries the bytes in content
 * parts). */
void resp_files(struct jbuf *b, const struct sbx_artifacts *f, int with_data);
/* The media type an artifact's name suggests, by its extension
 * ("application/octet-stream" when none). */
const char *resp_mime(const char *name);

/* The "sandbox" object: {"mode","layers":[…],"missing":[…],"net"}. */
void resp_sandbox(struct jbuf *b, const struct sbx_layers *l);
/* /healthz's and --probe's "sandbox" object: the self-test's verdict,
 * the host's facts, the layers a run would have. */
void resp_health_sandbox(struct jbuf *b, const struct sbx_health *h);
/* /healthz's "interpreters": each of the registry with its program,
 * whether it is on this host and whether it is allowed. */
void resp_interpreters(struct jbuf *b, const struct registry *reg);

void resp_completion(struct jbuf *b, const struct resp_run *rr);

/* "skipped_fences":[{"label":…,"line":N},…]: the fences whose label
 * names no interpreter, as many as the request kept (--max-skipped-
 * fences); then ,"skipped_fences_truncated":K when K more were only
 * counted. */
void resp_skipped_fences(struct jbuf *b, const struct chat_request *r);
/* The "codellm" extension object alone. */
/* A run's (run: with how its memory was bounded) or a block's usage
 * (sandbox/result.h: struct sbx_usage). */
void resp_usage(struct jbuf *b, const struct sbx_usage *u, int run);
void resp_codellm(struct jbuf *b, const struct resp_run *rr);

/* Agent mode: finish_reason tool_calls, content "", the given tool_calls
 * array (JSON text). */
void resp_agent_completion(struct jbuf *b, const struct resp_run *rr,
			   const char *calls, size_t calls_len);

/* Agent mode after code ran: the error object with type
 * execution_error, and the codellm object beside it. */
void resp_execution_error(struct jbuf *b, const char *code, const char *message,
			  const struct resp_run *rr);

/* A stream's events as the OpenAI SDKs parse them: each call appends
 * one event's data, a chat.completion.chunk (a JSON text, never holding
 * a raw newline) and "\n"; http_sse_send frames each line as a
 * server-sent event. */
void resp_sse_role(struct jbuf *b, const struct resp_run *rr);
void resp_sse_content(struct jbuf *b, const struct resp_run *rr,
		      const char *data, size_t len);
/* A tool call's first delta (index, id, type, name, arguments "") and
 * an arguments fragment. */
void resp_sse_call_head(struct jbuf *b, const struct resp_run *rr, size_t index,
			const char *id, const char *name);
void resp_sse_call_args(struct jbuf *b, const struct resp_run *rr, size_t index,
			const char *args);
/* The last chunk: an empty delta, the finish_reason and the codellm object. */
void resp_sse_final(struct jbuf *b, const struct resp_run *rr, const char *finish_reason);
/* stream_options.include_usage: choices [] and zero usage. */
void resp_sse_usage(struct jbuf *b, const struct resp_run *rr);
/* A failure after the stream began: the error object (and codellm). */
void resp_sse_error(struct jbuf *b, const char *code, const char *type,
		    const char *message, const struct resp_run *rr);
void resp_sse_done(struct jbuf *b);

/* Agent mode's tool calls from the parsed output: the tool_calls array
 * (ids call_0, call_1, …, finish last), and the same calls as stream
 * deltas (resp_sse_call_head and resp_sse_call_args for each). */
void resp_tool_calls(struct jbuf *b, const struct agent_output *o, const char *request_id);
void resp_sse_tool_calls(struct jbuf *b, const struct resp_run *rr,
			 const struct agent_output *o);

/* agent_parse, then the tool_calls JSON array (ids from request_id, see
 * agent_call_id) appended to b. Returns the number of changes (>= 0),
 * or -1 with *err filled and b untouched. */
long agent_tool_calls(const char *out, size_t len, char *const *tools,
		      size_t ntools, const char *request_id, struct jbuf *b,
		      struct agent_error *err);

#endif
