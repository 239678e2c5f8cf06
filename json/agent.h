/* Agent mode (SPEC §6): the last block's stdout, {"changes":[…],
 * "answer":"…"}, becomes tool calls — write_note, patch_note, and always
 * a final finish. Lossless: every byte of a path, content, find or
 * replace is carried over; what cannot be (NUL) is refused, never cut.
 * The output is parsed once, into struct agent_output; the writers
 * (json/response.h) and the audit read that struct. */
#ifndef CODELLM_AGENT_H
#define CODELLM_AGENT_H

#include <stddef.h>

#include "json/jstr.h"
#include "json/request.h"
#include "sandbox/result.h"

struct agent_error {
	const char *code;	/* "invalid_changes" or "undeclared_tool" */
	char message[512];
};

enum agent_op { AGENT_WRITE, AGENT_PATCH };

/* One change; the strings are NUL-free and valid UTF-8 (the pre-check
 * refused anything else), owned by the agent_output. */
struct agent_change {
	enum agent_op op;
	const char *tool;	/* "write_note" or "patch_note" */
	const char *path;	/* non-empty */
	const char *content;	/* AGENT_WRITE */
	const char *find;	/* AGENT_PATCH, non-empty */
	const char *replace;	/* AGENT_PATCH */
};

struct agent_output {
	struct agent_change *changes;
	size_t n;
	const char *answer;	/* "" when absent */
	void *tree;		/* the parsed output the strings live in */
};

/* No change and an empty answer: a follow-up turn's finish alone. */
#define AGENT_OUTPUT_NONE ((struct agent_output){ .answer = "" })

/* Parses and checks stdout out[0..len) against the function names the
 * request declared. Returns 0 with *ret filled (free it with
 * agent_output_free), or -1 with *err filled and *ret untouched. */
int agent_parse(const char *out, size_t len, char *const *tools, size_t ntools,
		struct agent_output *ret, struct agent_error *err);
void agent_output_free(struct agent_output *o);


/* A tool call's id, unique across requests as OpenAI's are: "call_",
 * the random part of the request's id (what follows its first '-'),
 * "_" and the call's index, e.g. call_3f0a9fd27121f3d3e9ad4136_2. */
#define AGENT_CALL_ID_MAX 96
void agent_call_id(char out[AGENT_CALL_ID_MAX], const char *request_id, size_t index);

/* The tool_calls array of a follow-up turn: finish alone. */
void agent_finish_only(struct jbuf *b, const char *request_id);

/* How an agent run ended: NULL with *ret filled (free it with
 * agent_output_free), or the execution_error code (block_failed,
 * timeout, output_limit, invalid_changes, undeclared_tool) with msg
 * filled and *ret untouched. */
const char *agent_outcome(const struct sbx_result *res, const struct chat_request *r,
			  struct agent_output *ret, char *msg, size_t msglen);

/* msg for a refusal of the last block's output: "block N: what; stderr:
 * <its tail>". */
void agent_refusal(const struct sbx_result *res, const char *what, char *msg, size_t msglen);

/* The arguments of tool call i (i == o->n: finish) as JSON text. */
void agent_call_args(struct jbuf *b, const struct agent_output *o, size_t i);
/* The name of tool call i (i == o->n: "finish"). */
const char *agent_call_name(const struct agent_output *o, size_t i);

#endif
