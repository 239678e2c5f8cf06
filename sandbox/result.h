/* What a run leaves behind, as plain data: the blocks' results, the
 * taps, the kept stdout, how the run ended, the layers it had. json/
 * reads this header and nothing else of sandbox/ (its writers take
 * these structs, so a test can make one by hand). Only libc here. */
#ifndef CODELLM_SANDBOX_RESULT_H
#define CODELLM_SANDBOX_RESULT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a stream kept up to a limit: its head (stdout, taps) or its
 * tail (stderr). lost counts what was seen and not kept (cut by the
 * limit, dropped from the front, or refused memory). */
struct sbx_capture {
	char *p;
	size_t len;		/* bytes kept, at p */
	size_t size;		/* allocated */
	uint64_t lost;
	int oom;		/* sticky: memory ran out, bytes were lost */
};

#endif
