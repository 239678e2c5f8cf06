/* A chat-completions request body → a plain C struct. All validation of
 * the request's content happens here; the handler only acts on it. */
#ifndef CODELLM_REQUEST_H
#define CODELLM_REQUEST_H

#include <stddef.h>

#include "json/registry.h"

/* Deepest JSON nesting accepted (cJSON's own limit is compiled in). */
#define REQ_MAX_DEPTH 64
#define REQ_MAX_MESSAGES 4096
#define REQ_MAX_TOOLS 128

struct req_block {
	const struct interp *interp;
	char *label;		/* the fence's word as written; "" when unlabeled or a whole message */
	char *code;
	size_t code_len;
	unsigned start_line;	/* 1-based lines of the fences in the code message */
	unsigned end_line;
};

struct req_skipped {
	char *label;
	unsigned line;
};

struct chat_request {
	char *model;
	const struct interp *model_interp;	/* model names an interpreter */
	int stream;
	int include_usage;
	int agent;			/* tools declare a function named finish */
	char **tools;			/* declared function names */
	size_t ntools;
	double timeout_s;		/* codellm.timeout_s, 0 when absent */
	int rerun_guard;		/* assistant/tool message after the code message */
	struct req_block *blocks;
	size_t nblocks;
	struct req_skipped *skipped;
	size_t nskipped;
	char *code_text;		/* text of the message the blocks came from */
	size_t code_text_len;
	char *stdin_data;		/* NULL when the first block's stdin is empty */
	size_t stdin_len;
	char *bag;			/* fleet_input, NULL when absent */
	size_t bag_len;
};

struct req_error {
	int status;			/* 400 or 403 */
	const char *type;		/* invalid_request_error, permission_error */
	const char *code;		/* may be NULL */
	const char *param;		/* may be NULL */
	char message[512];
};

/* Parse and validate body[0..len). Returns 0 and fills *ret, or -1 and
 * fills *err. The registry decides which labels run and which are
 * allowed; max_blocks caps the runnable blocks. */
int req_parse(const char *body, size_t len, const struct registry *reg,
	      size_t max_blocks, struct chat_request *ret, struct req_error *err);

void req_free(struct chat_request *r);

#endif
