/* What the fuzz targets share: a check that aborts naming its place
 * (libFuzzer and the replay driver then keep the input), the
 * interpreter registry with python and bash allowed, made once, and
 * exact-size copies of an input (the replay driver's buffer has a spare
 * byte, so a read one past the end would go unseen without them). */
#ifndef CODELLM_FUZZ_COMMON_H
#define CODELLM_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/registry.h"

#define CHECK(c) do { \
	if (!(c)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
		abort(); \
	} \
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct registry fuzz_reg;

static inline const struct registry *fuzz_registry(void)
{
	static int ready;
	char err[256];

	if (!ready) {
		CHECK(reg_init(&fuzz_reg) == 0);
		CHECK(reg_allow(&fuzz_reg, "python,bash", err, sizeof err) == 0);
		ready = 1;
	}
	return &fuzz_reg;
}

/* p[0..n) in a buffer of exactly n bytes (1 when n is 0). */
static inline char *fuzz_copy(const void *p, size_t n)
{
	char *s = calloc(1, n ? n : 1);

	if (!s)
		abort();
	if (n)
		memcpy(s, p, n);
	return s;
}

#endif
