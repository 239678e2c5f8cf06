/* A chat-completions request body → a plain C struct. All validation of
 * the request's content happens here; the handler only acts on it. */
#ifndef CODELLM_REQUEST_H
#define CODELLM_REQUEST_H

#include <stddef.h>

#include "json/jstr.h"
#include "json/registry.h"

#define REQ_MAX_MESSAGES 4096
#define REQ_MAX_TOOLS 128
/* Bytes of a skipped fence's label kept and echoed (cut before a
 * character), and quoted in the "labels seen" of a no-runnable-block
 * error. */
#define REQ_MAX_LABEL 64

/* The server's limits on what a request may make it do and hold. */
struct req_limits {
	size_t max_blocks;	/* --max-blocks: runnable blocks, more is 400 */
	size_t max_skipped;	/* --max-skipped-fences: skipped fences listed */
	size_t max_files;	/* --max-input-files: file parts, more is 413 */
	size_t max_file_bytes;	/* --max-input-file-bytes: one file, decoded */
	size_t max_files_bytes;	/* --max-input-bytes: all files, decoded */
};

/* A file a user message carried (a "file" part, or an "image_url" part
 * with a data URL), decoded: written into the run's workdir under its
 * name before the first block starts. */
struct req_file {
	char *name;		/* a plain name: no '/', not "..", no control
				 * byte, no leading dot */
	char *data;		/* the bytes (a NUL after them) */
	size_t len;
};

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
	char *finish_answer;		/* a follow-up turn whose conversation holds a
					 * finish call (or its result): that call's
					 * answer ("" when it has none), else NULL */
	int finish_from_call;		/* finish_answer came from the call itself */
	struct req_block *blocks;
	size_t nblocks;
	struct req_skipped *skipped;	/* the first max_skipped of them */
	size_t nskipped;
	size_t skipped_truncated;	/* skipped fences past those: counted only */
	char *code_text;		/* text of the message the blocks came from */
	size_t code_text_len;
	char *stdin_data;		/* NULL when the first block's stdin is empty */
	size_t stdin_len;
	char *bag;			/* fleet_input, NULL when absent */
	size_t bag_len;
	struct req_file *files;		/* file parts of user messages, in order */
	size_t nfiles;
	size_t files_bytes;		/* their decoded bytes together */
};

struct req_error {
	int status;			/* 400, 403, or 503 when memory ran out */
	const char *type;		/* invalid_request_error, permission_error,
					 * server_error (503, code server_overloaded) */
	const char *code;		/* may be NULL */
	const char *param;		/* may be NULL */
	char message[512];
};

struct cJSON;
/* The files of a bare array of "file" and "image_url" parts (the debug
 * routes' "files"), checked and bounded as a user message's are and
 * appended to r->files. 0, or -1 with *err filled. */
int req_take_files(const struct cJSON *parts, const struct req_limits *lim,
		   struct chat_request *r, struct req_error *err);

/* Parse and validate body[0..len). Returns 0 and fills *ret, or -1 and
 * fills *err. The registry decides which labels run and which are
 * allowed; lim caps the runnable blocks and the skipped fences kept
 * (the rest are counted in skipped_truncated). Running out of memory
 * is 503 server_error "server_overloaded", never a 4xx, here and in
 * every reader below. */
int req_parse(const char *body, size_t len, const struct registry *reg,
	      const struct req_limits *lim, struct chat_request *ret,
	      struct req_error *err);

void req_free(struct chat_request *r);

/* Block i as a file of the run: its name (block-N and the
 * interpreter's extension, malloc'd into *ret_name) and its text
 * appended to *text: the registry's "prepend" (php's "<?php") unless
 * the code starts with it, then the code. Returns -1 (*ret_name NULL,
 * text untouched) when the name cannot be allocated; text->oom says
 * the text could not. */
int req_block_file(const struct chat_request *r, size_t i, char **ret_name,
		   struct jbuf *text);

/* The one check of what may run, for a chat request and the debug
 * surface alike: 403 execution_disabled when --allowed-programs is
 * empty, else 403 program_not_allowed (param names where the blocks
 * came from) for the first of blocks [from, to) whose interpreter is
 * not allowed. Returns 0, or -1 with *err filled. */
int req_check_allowed(const struct chat_request *r, const struct registry *reg,
		      size_t from, size_t to, const char *param, struct req_error *err);

/* The debug surface (SPEC §8): the blocks of inline markdown, found as
 * in a chat request's code message, without a model (an unlabeled fence
 * runs nothing). Fills blocks, skipped and code_text; no runnable block
 * is not an error here. 400 too_many_blocks past lim->max_blocks. */
int req_from_markdown(const char *text, size_t len, const struct registry *reg,
		      const struct req_limits *lim, struct chat_request *ret,
		      struct req_error *err);

/* For the debug wire (json/debug.c), which reads its bodies as a chat
 * request is read: the error filler, out of memory (503), the body as
 * one checked JSON object (NULL with *err filled), and
 * req_from_markdown on text it owns from here on (kept as code_text,
 * or freed on failure). */
__attribute__((format(printf, 5, 6)))
int req_fail(struct req_error *err, int status, const char *code,
	     const char *param, const char *fmt, ...);
int req_oom(struct req_error *err);
struct cJSON;
struct cJSON *req_parse_object(const char *body, size_t len, struct req_error *err);
int req_take_markdown(char *text, size_t len, const struct registry *reg,
		      const struct req_limits *lim, struct chat_request *r,
		      struct req_error *err);

#endif
