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

/* agent_parse, then the tool_calls JSON array (ids call_0, call_1, …)
 * appended to b. Returns the number of changes (>= 0), or -1 with *err
 * filled and b untouched. */
long agent_tool_calls(const char *out, size_t len, char *const *tools,
		      size_t ntools, struct jbuf *b, struct agent_error *err);

/* The tool_calls array of a follow-up turn: finish alone. */
void agent_finish_only(struct jbuf *b);

/* How an agent run ended (rr->p is the run): NULL with *ret filled
 * (free it with agent_output_free) and, when calls is given, the
 * tool_calls array appended to it; or the execution_error code
 * (block_failed, timeout, output_limit, invalid_changes,
 * undeclared_tool) with msg filled and *ret untouched. */
struct resp_run;
const char *agent_outcome(const struct resp_run *rr, struct agent_output *ret,
			  struct jbuf *calls, char *msg, size_t msglen);

/* The arguments of tool call i (i == o->n: finish) as JSON text. */
void agent_call_args(struct jbuf *b, const struct agent_output *o, size_t i);
/* The name of tool call i (i == o->n: "finish"). */
const char *agent_call_name(const struct agent_output *o, size_t i);

#endif
