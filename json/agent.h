/* Agent mode (SPEC §6): the last block's stdout, {"changes":[…],
 * "answer":"…"}, becomes tool calls — write_note, patch_note, and always
 * a final finish. Lossless: every byte of a path, content, find or
 * replace is carried over; what cannot be (NUL) is refused, never cut. */
#ifndef CODELLM_AGENT_H
#define CODELLM_AGENT_H

#include <stddef.h>

#include "json/jstr.h"

struct agent_error {
	const char *code;	/* "invalid_changes" or "undeclared_tool" */
	char message[512];
};

/* Appends the tool_calls JSON array (ids call_0, call_1, …) for stdout
 * out[0..len) to b, given the function names the request declared.
 * Returns the number of changes (>= 0), or -1 with *err filled and b
 * untouched. */
long agent_tool_calls(const char *out, size_t len, char *const *tools,
		      size_t ntools, struct jbuf *b, struct agent_error *err);

/* The tool_calls array of a follow-up turn: finish alone. */
void agent_finish_only(struct jbuf *b);

#endif
