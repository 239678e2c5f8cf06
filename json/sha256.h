/* SHA-256 (FIPS 180-4), for the audit's CODELLM_CODE_SHA256. */
#ifndef CODELLM_SHA256_H
#define CODELLM_SHA256_H

#include <stddef.h>

/* Writes the 64 lowercase hex digits and a NUL to hex[65]. */
void sha256_hex(const void *data, size_t len, char hex[65]);

#endif
