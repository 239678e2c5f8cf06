/* What the entry (codellm-handler.c) and its parts share: the request's
 * context, the refusals and the answers' heads, the route bodies
 * (routes.c) and a run with its answer (run.c). Nothing outside the
 * program includes this. */
#ifndef CODELLM_HANDLER_H
#define CODELLM_HANDLER_H

#include <stddef.h>

#include "http/conn.h"
#include "http/http.h"
#include "json/audit.h"
#include "json/env.h"
#include "json/jstr.h"
#include "json/registry.h"
#include "json/request.h"
#include "json/response.h"
#include "sandbox/sandbox.h"

struct route;
struct mcp_msg;
struct rsp_face;

struct ctx {
	struct conn c;
	struct registry reg;
	char id[48];
	long t_start;
	char *key;		/* configured bearer key, NULL when none */
	char key_why[256];	/* why there is none */
	char *head;		/* request line + headers (+ early body bytes) */
	size_t head_used;
	struct http_request hr;
	struct http_framing fr;	/* the body's, from the head */
	char path[1024];
	char path_log[200];	/* path, audit_text(): for log lines */
	char *body;
	size_t body_len;
	int unread;		/* bytes after the request were left unread */
	int slot_fd;		/* the run slot held, or -1 */
	int slot;		/* its index, or -1 */
	struct audit au;	/* the journal record, sent at exit */
	const char *ctype;	/* Content-Type of the answer, JSON when NULL */
	/* a stream (SSE) in progress */
	const struct resp_run *st_rr;
	char st_pend[4];	/* the start of a UTF-8 sequence still arriving */
	size_t st_npend;
	long st_last;		/* when the last event went out */
	/* a debug route's run (SPEC §8) instead of a chat completion */
	enum { RUN_CHAT, RUN_DEBUG_BLOCK, RUN_DEBUG_PIPELINE, RUN_RESPONSES, RUN_MCP } run_kind;
	struct rsp_face *rsp;	/* RUN_RESPONSES: the face's state (responses.c) */
	size_t dbg_index;	/* run-block: the block's index in the body */
	struct mcp_msg *mcp;	/* POST /mcp's tools/call being run, or NULL */
	const struct route *route;	/* the request's route, once routed */
	int head_bytes;		/* the head's length in head[] */
	int request_read;	/* the whole request was read */
	int exit;		/* the process's exit status */
	/* the environment the request's model names (env.c); name "" for
	 * the host's trees */
	struct {
		char name[SBX_ENV_NAME_MAX + 1];
		char digest[ENV_DIGEST_LEN + 1];
		char root[PATH_MAX + 8];
	} env;
};

/* Every refusal the handler answers itself; codellm-handler.c maps
 * each to its (status, type, code) in one table. */
enum refusal {
	REF_BAD_REQUEST,
	REF_INCOMPLETE,
	REF_TIMEOUT,
	REF_LENGTH_REQUIRED,
	REF_TOO_LARGE,
	REF_HEADERS_TOO_LARGE,
	REF_TE_UNSUPPORTED,
	REF_BAD_KEY,
	REF_CROSS_ORIGIN,
	REF_CROSS_SITE,
	REF_HOST,
	REF_LOOPBACK,
	REF_NOT_FOUND,
	REF_MODEL_NOT_FOUND,
	REF_METHOD,
	REF_MEDIA_TYPE,
	REF_SLOTS_BUSY,
	REF_NO_KEY,
	REF_MISCONFIGURED,
	REF_SANDBOX,
	REF_ENVIRONMENT,
	REF_ENV_LANGUAGE,
	REF_WORKDIR,
	REF_OVERLOADED,
	REF_ANSWER_OOM,
};

/* ---- answering (codellm-handler.c) ---- */

long write_deadline(struct ctx *x);
/* The response head; content_length -1: the body runs to the close.
 * after_run is an http_retry. */
void send_head(struct ctx *x, int status, const char *extra, long content_length,
	       int after_run);
void respond(struct ctx *x, int status, const char *extra, const struct jbuf *body,
	     int after_run);
/* A refusal as the OpenAI error object; returns its status. */
__attribute__((format(printf, 4, 5)))
int refuse(struct ctx *x, enum refusal why, const char *extra, const char *fmt, ...);
/* A request json/ refused, as it words it; refuse_request also tells
 * the journal when the refusal is the server's setting. */
int fail_req(struct ctx *x, const struct req_error *e);
int refuse_request(struct ctx *x, const struct req_error *e);
int method_is(const struct ctx *x, const char *m);

/* ---- the route bodies and the commands (routes.c) ---- */

int route_healthz(struct ctx *x);
int route_model_list(struct ctx *x);
int route_model(struct ctx *x);
int route_chat(struct ctx *x);
int route_page(struct ctx *x);
int route_debug_blocks(struct ctx *x);
int route_debug_run_block(struct ctx *x);
int route_debug_run_pipeline(struct ctx *x);
/* --probe and --check: exit statuses */
int probe(struct ctx *x);
int check_files(struct ctx *x, int argc, char **argv, int first);

/* The run slot held (routes.c takes it before a run): given back once
 * the run's processes are gone, before the answer's end. */
void release_slot(struct ctx *x);
/* A run slot for this request: 0, or the status of the refusal sent. */
int take_slot(struct ctx *x);
/* What a request may make the handler run, hold and echo. */
const struct req_limits *limits(void);
/* The directory of the run slots and the files instances share
 * (--runtime-dir); 0, or -errno. */
int runtime_dir(char *dir, size_t len);

/* ---- environments (env.c) ---- */

/* The environment the request's model names, checked before anything
 * runs: 0 when the blocks get the host's trees (no --environments, or
 * the model is codellm or a language), 1 when x->env names the
 * environment, or the status of the refusal sent: 404 model_not_found
 * (no such model), 503 environment_unavailable (its tree or manifest
 * failed the check), 400 language_not_available (a block's language is
 * not in it). */
int env_select(struct ctx *x, const struct chat_request *r);
/* GET /v1/models: ",{model}" for each environment; GET /v1/models/ID:
 * the one named (-1 when none is). */
void env_models(struct ctx *x, struct jbuf *b, long created);
int env_model(struct ctx *x, struct jbuf *b, const char *id, long created);
/* /healthz's and --probe's "environments" array, each checked; -1 when
 * one failed. */
int env_health(struct ctx *x, struct jbuf *b);
/* --env-digest TREE: prints the tree's digest; the exit status. */
int env_digest_command(int argc, char **argv, int first);

/* ---- MCP (mcp.c) ---- */

int route_mcp(struct ctx *x);
/* A tools/call's answer once its run ended; the status sent. */
int mcp_answer(struct ctx *x, const struct resp_run *rr);
/* A refusal of the handler's own during a tools/call, as a JSON-RPC
 * error body. */
void mcp_refusal(struct ctx *x, struct jbuf *b, const char *msg, int status,
		 const char *code);

/* ---- a run and its answer (run.c) ---- */

struct sbx_config;
/* The sandbox's settings from the options; slot -1: a check (no run). */
void sandbox_config(struct sbx_config *c, int slot);
/* Runs the request's blocks in the slot held and answers in its mode;
 * returns the status sent. */
int run_request(struct ctx *x, struct chat_request *r);
/* A follow-up turn answered without running (the re-execution guard). */
int answer_without_run(struct ctx *x, struct chat_request *r);
struct agent_output;
/* Agent mode's audit: the paths the tool calls write. */
void audit_paths(struct audit *a, const struct agent_output *o);

/* ---- the Responses API face (responses.c) ---- */

int route_responses(struct ctx *x);
int route_responses_stateless(struct ctx *x);
/* run.c's answer modes, rendered as the Responses API renders them */
void rsp_stream_start(struct ctx *x, const struct resp_run *rr);
int rsp_stream_text(struct ctx *x, const char *data, size_t len);
void rsp_stream_end(struct ctx *x, struct resp_run *rr);
void rsp_answer_text(struct ctx *x, const struct resp_run *rr);
int rsp_agent_answer(struct ctx *x, struct resp_run *rr);

#endif
