/* SHA-256 (FIPS 180-4), for the audit's CODELLM_CODE_SHA256 and an
 * environment's digest. */
#ifndef CODELLM_SHA256_H
#define CODELLM_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Writes the 64 lowercase hex digits and a NUL to hex[65]. */
void sha256_hex(const void *data, size_t len, char hex[65]);

/* The same over data that comes in pieces (an environment's tree). */
struct sha256 {
	uint32_t h[8];
	unsigned char buf[64];
	size_t n;		/* bytes in buf */
	uint64_t len;		/* bytes so far */
};
void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final_hex(struct sha256 *c, char hex[65]);

#endif
