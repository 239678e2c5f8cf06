/* The debug surface's wire (SPEC §8), both ways: its requests (a JSON
 * body or a query's markdown, read as a chat request is) and its
 * answers: the blocks of a body, one block's result, a whole pipeline
 * with its tapped edges; and what they need, base64 and form-encoded
 * query parameters. Written with
 * jstr_escape, so any byte of program output yields valid JSON. */
#ifndef CODELLM_DEBUG_H
#define CODELLM_DEBUG_H

#include <stddef.h>

#include "json/jstr.h"
#include "json/request.h"
#include "sandbox/result.h"

/* GET /debug/blocks?body=…: the markdown the handler decoded from the
 * request target's query (http_query_param: qrc 0, or -1 absent, -2 bad
 * form encoding, -3 out of memory), read as req_from_markdown does; 400
 * param "body" when it is absent, badly encoded, or holds NUL or invalid
 * UTF-8; 503 server_overloaded for -3. */
int dbg_parse_query(int qrc, const char *md, size_t len, const struct registry *reg,
			  const struct req_limits *lim, struct chat_request *r,
			  struct req_error *err);

enum req_debug {
	REQ_DEBUG_LIST,		/* /debug/blocks: {"body"} */
	REQ_DEBUG_BLOCK,	/* /debug/run-block: {"body","block","stdin","input"} */
	REQ_DEBUG_PIPELINE,	/* /debug/run-pipeline: {"body","stdin","input"} */
};

/* A debug route's JSON body. LIST fills only the blocks. BLOCK and
 * PIPELINE fill the request as req_parse does (blocks, stdin, bag: a
 * string verbatim, another JSON value as its compact text) and refuse
 * what a chat request refuses: no runnable block, a program not allowed,
 * execution disabled. BLOCK sets *ret_block and narrows the request to
 * that one block (blocks[0], nblocks 1). */
int dbg_parse(const char *body, size_t len, const struct registry *reg,
		    const struct req_limits *lim, enum req_debug what,
		    struct chat_request *ret, size_t *ret_block, struct req_error *err);

/* {"object":"codellm.debug.blocks","blocks":[…],"skipped_fences":[…]} */
void dbg_blocks(struct jbuf *b, const struct chat_request *r);

struct dbg_run {
	const char *id;			/* the request id */
	const struct chat_request *req;	/* run-block: narrowed to the one block */
	const struct sbx_result *res;
	size_t index;			/* run-block: the block's index in the body */
	const struct sbx_artifacts *files;	/* /work/out after the run, or NULL */
};

/* {"object":"codellm.debug.block",…}: res ran exactly one block. */
void dbg_block_result(struct jbuf *b, const struct dbg_run *d);
/* {"object":"codellm.debug.pipeline",…, "blocks":[…], "edges":[…]} */
void dbg_pipeline_result(struct jbuf *b, const struct dbg_run *d);

#endif
