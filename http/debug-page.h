/* The debug surface's page (GET /, SPEC §8): http/debug-page.html,
 * embedded in the binary at build time, served as it is. */
#ifndef CODELLM_DEBUG_PAGE_H
#define CODELLM_DEBUG_PAGE_H

#include <stddef.h>

extern const char debug_page[];
extern const char debug_page_end[];

static inline size_t debug_page_len(void)
{
	return (size_t)(debug_page_end - debug_page);
}

#endif
