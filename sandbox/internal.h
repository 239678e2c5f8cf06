/* Private to sandbox/: what its files share and the handler does not
 * call. */
#ifndef CODELLM_SANDBOX_INTERNAL_H
#define CODELLM_SANDBOX_INTERNAL_H

#include <stddef.h>

#include "sandbox/result.h"

/* Append data[0..n) to c, keeping at most `limit` bytes: the first ones
 * (head) or the last ones (tail). */
void sbx_capture_head(struct sbx_capture *c, size_t limit, const void *data, size_t n);
void sbx_capture_tail(struct sbx_capture *c, size_t limit, const void *data, size_t n);
void sbx_capture_free(struct sbx_capture *c);

/* The run's exit status and the block that decided it (result.h). */
void sbx_result_decide(struct sbx_result *r);

#endif
