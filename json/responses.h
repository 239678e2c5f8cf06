/* The Responses API face (POST /v1/responses, stateless): a Responses
 * body becomes the equivalent chat-completions body, which req_parse
 * reads as any chat request (fences, limits, files, agent mode, the
 * re-execution guard are chat's exactly); the answer is rendered as a
 * "response" object or its typed stream events. */
#ifndef CODELLM_RESPONSES_H
#define CODELLM_RESPONSES_H

#include <stddef.h>

#include "json/agent.h"
#include "json/jstr.h"
#include "json/request.h"
#include "json/response.h"

struct rsp_face {
	char *chat;		/* the chat-completions body, NUL-terminated */
	size_t chat_len;
	char *metadata;		/* the request's metadata, as JSON text ("{}") */
	long *map;		/* chat message i came from input[map[i]];
				 * -1: instructions, -2: input as a string */
	size_t nmap;
	unsigned long seq;	/* the next event's sequence_number */
};

/* The Responses body[0..len) as a chat-completions body in f->chat.
 * 0, or -1 with *err filled: 400 stateless_server for what needs state
 * (previous_response_id, conversation, background, prompt,
 * item_reference), 400 naming an unsupported item or part. */
int rsp_translate(const char *body, size_t len, struct rsp_face *f,
		  struct req_error *err);
/* An error req_parse gave for f->chat, worded for the Responses body:
 * messages[N] becomes input[M] (or instructions), param "input". */
void rsp_fix_error(const struct rsp_face *f, struct req_error *err);
void rsp_face_free(struct rsp_face *f);

/* What the response object's output and status say. */
struct rsp_out {
	const char *status;	/* in_progress, completed, incomplete, failed */
	const char *reason;	/* incomplete_details.reason, or NULL */
	const char *err_code;	/* status failed: error.code and message */
	const char *err_msg;
	int empty;		/* output [] (response.created, in_progress) */
	const struct agent_output *calls;	/* function_call items, or NULL: */
	const char *text;	/* one message item with this output_text */
	size_t len;
};

/* The run's outcome in run mode: completed, or incomplete with reason
 * max_output_tokens (stdout past the cap), timeout, or interrupted
 * (the handler was told to stop). Sets o->status and o->reason. */
void rsp_run_status(const struct sbx_result *res, struct rsp_out *o);

/* The "response" object (with usage and the codellm object unless
 * o->empty). */
void rsp_response(struct jbuf *b, const struct rsp_face *f, const struct resp_run *rr,
		  const struct rsp_out *o);

/* Typed stream events, each one line "TYPE {JSON}\n" (http_sse_typed
 * frames them), numbered from f->seq. */
/* response.created and response.in_progress; with_message: the message
 * item's output_item.added and content_part.added too. */
void rsp_sse_begin(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		   int with_message);
void rsp_sse_text(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		  const char *data, size_t len);
/* output_text.done, content_part.done and output_item.done. */
void rsp_sse_text_end(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		      const struct rsp_out *o);
/* Each function_call: output_item.added, function_call_arguments.delta
 * and .done, output_item.done. */
void rsp_sse_calls(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		   const struct agent_output *calls);
/* response.completed, response.incomplete or response.failed, by
 * o->status, with the whole response object. */
void rsp_sse_end(struct jbuf *b, struct rsp_face *f, const struct resp_run *rr,
		 const struct rsp_out *o);

#endif
