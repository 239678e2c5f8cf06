/* Place a test input so that its last byte sits right before a PROT_NONE
 * page: any read past the end of the input faults at once (the
 * picohttpparser test.c habit). */
#ifndef CODELLM_GUARD_H
#define CODELLM_GUARD_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guarded {
	void *map;
	size_t map_len;
	char *data;
};

__attribute__((unused))
static char *guard_copy(struct guarded *g, const void *src, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = (len + page - 1) / page;

	if (data_pages == 0)
		data_pages = 1;
	g->map_len = (data_pages + 1) * page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		abort();
	if (mprotect((char *)g->map + data_pages * page, page, PROT_NONE) < 0)
		abort();
	g->data = (char *)g->map + data_pages * page - len;
	if (len)
		memcpy(g->data, src, len);
	return g->data;
}

__attribute__((unused))
static void guard_free(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

#endif
