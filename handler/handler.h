/* What the entry (codellm-handler.c) and its parts share: the request's
 * context, the refusals and the answers' heads (answer.c), the route
 * bodies (routes.c and each face's file), a run (run.c) and the face
 * interface a run answers through. Calls go one way: the entry calls
 * the route bodies, the faces call the run, the run calls a face only
 * through its struct face; nothing calls the entry (tests/lint-arch).
 * Nothing outside the program includes this. */
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
struct face;
struct sbx_pipeline;

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
	/* how the run's answer is written: chat completions, Responses,
	 * MCP, a debug object; NULL until a route body picks one */
	const struct face *face;
	void *face_state;	/* the face's own, its file's type */
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

/* ---- answering (answer.c) ---- */

long write_deadline(struct ctx *x);
/* The response head; content_length -1: the body runs to the close.
 * after_run is an http_retry. */
void send_head(struct ctx *x, int status, const char *extra, long content_length,
	       int after_run);
void respond(struct ctx *x, int status, const char *extra, const struct jbuf *body,
	     int after_run);
/* A refusal as the OpenAI error object (or in the face's words, when
 * it has its own); returns its status. */
__attribute__((format(printf, 4, 5)))
int refuse(struct ctx *x, enum refusal why, const char *extra, const char *fmt, ...);
/* A request json/ refused, as it words it; refuse_request also tells
 * the journal when the refusal is the server's setting. */
int fail_req(struct ctx *x, const struct req_error *e);
int refuse_request(struct ctx *x, const struct req_error *e);
int method_is(const struct ctx *x, const char *m);

/* ---- a face: how a run's answer is written ----
 *
 * Each face is one file and one table entry: chat.c (chat
 * completions), responses.c (the Responses API), mcp.c (MCP's
 * tools/call), debug.c (the debug routes). Its route body parses the
 * request into a chat_request, sets x->face (and x->face_state), and
 * calls run_request (or answer_without_run); run.c knows no face by
 * name. In the chat modes (chat_modes) run mode's head goes out before
 * the run, a stream is begun, fed and ended through begin, text and
 * end, and everything else is one answer at the end; without them
 * every answer is one object once the run ended (answer). */
struct face {
	unsigned chat_modes : 1;	/* run, agent and stream modes as chat's */
	unsigned taps : 1;		/* keep what crosses each edge */
	/* a stream's first events, its head sent (text/event-stream) */
	void (*begin)(struct ctx *x, const struct resp_run *rr);
	/* a stream's text, whole UTF-8 sequences: 0, or -1 (client gone) */
	int (*text)(struct ctx *x, const char *data, size_t len);
	/* a stream's last events; rr->res NULL when nothing ran */
	void (*end)(struct ctx *x, struct resp_run *rr);
	/* the answer that is not a stream; rr->res NULL when nothing ran
	 * (answer_without_run). The status sent. */
	int (*answer)(struct ctx *x, struct resp_run *rr);
	/* a refusal of the handler's own (busy, sandbox) in the face's
	 * words, its body into b; NULL: the OpenAI error object */
	void (*refusal)(struct ctx *x, struct jbuf *b, const char *msg, int status,
			const char *code);
};

/* ---- the route bodies (routes.c and each face's file) and the
 * commands (routes.c) ---- */

int route_healthz(struct ctx *x);
int route_model_list(struct ctx *x);
int route_model(struct ctx *x);
int route_chat(struct ctx *x);			/* chat.c */
int route_responses(struct ctx *x);		/* responses.c */
int route_responses_stateless(struct ctx *x);
int route_mcp(struct ctx *x);			/* mcp.c */
int route_page(struct ctx *x);			/* debug.c */
int route_debug_blocks(struct ctx *x);
int route_debug_run_block(struct ctx *x);
int route_debug_run_pipeline(struct ctx *x);
/* --probe and --check: exit statuses */
int probe(struct ctx *x);
int check_files(struct ctx *x, int argc, char **argv, int first);

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

/* ---- a run (run.c) ---- */

struct sbx_config;
/* The sandbox's settings from the options; slot -1: a check (no run). */
void sandbox_config(struct sbx_config *c, int slot);
/* A run slot for this request: 0, or the status of the refusal sent. */
int take_slot(struct ctx *x);
/* The run slot held: given back once the run's processes are gone,
 * before the answer's end. */
void release_slot(struct ctx *x);
/* A chat request its face checked: the environment its model names, a
 * slot, a run, the answer through x->face; or, for a follow-up turn,
 * the answer without a run. The status sent. */
int run_chat(struct ctx *x, struct chat_request *r);
/* Runs the request's blocks in the slot held and answers through
 * x->face; returns the status sent. */
int run_request(struct ctx *x, struct chat_request *r);
/* A follow-up turn answered without running (the re-execution guard). */
int answer_without_run(struct ctx *x, struct chat_request *r);
struct agent_output;
/* Agent mode's audit: the paths the tool calls write. */
void audit_paths(struct audit *a, const struct agent_output *o);

#endif
