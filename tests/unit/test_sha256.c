/* SHA-256 against FIPS 180-4 / NIST example vectors and sha256sum. */
#include <stdlib.h>
#include <string.h>

#include "json/sha256.h"
#include "tests/guard.h"
#include "tests/tap.h"

static const struct {
	const char *in;
	size_t repeat;
	const char *hex;
	const char *why;
} rows[] = {
	{ "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty" },
	{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "FIPS one block" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "FIPS two blocks (56 bytes)" },
	{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "a million a" },
};

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		size_t n = strlen(rows[i].in) * rows[i].repeat;
		char *buf = malloc(n + 1), hex[65];
		struct guarded g;
		const char *in;

		for (size_t k = 0; k < rows[i].repeat; k++)
			memcpy(buf + k * strlen(rows[i].in), rows[i].in, strlen(rows[i].in));
		in = guard_copy(&g, buf, n);
		sha256_hex(in, n, hex);
		tap_ok(!strcmp(hex, rows[i].hex), "%s", rows[i].why);
		guard_free(&g);
		free(buf);
	}
	/* the lengths around the padding boundaries; values from sha256sum */
	{
		static const char *const want[] = {
			[55] = "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
			[56] = "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
			[63] = "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
			[64] = "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
		};
		char buf[64], hex[65];

		memset(buf, 'a', sizeof buf);
		for (size_t n = 55; n <= 64; n++) {
			if (!want[n])
				continue;
			sha256_hex(buf, n, hex);
			tap_ok(!strcmp(hex, want[n]), "%zu bytes of 'a' (padding boundary)", n);
		}
	}
	/* in pieces (an environment's walk): every split of 1000 bytes into
	 * pieces of one size gives the one-shot digest */
	{
		static const size_t sizes[] = { 1, 3, 63, 64, 65, 127, 999, 1000 };
		unsigned char buf[1000];
		char one[65], hex[65];
		int same = 1;

		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = (unsigned char)(i * 7 + 3);
		sha256_hex(buf, sizeof buf, one);
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			struct sha256 c;

			sha256_init(&c);
			for (size_t off = 0; off < sizeof buf; off += sizes[k])
				sha256_update(&c, buf + off, sizeof buf - off < sizes[k] ?
					      sizeof buf - off : sizes[k]);
			sha256_final_hex(&c, hex);
			same &= !strcmp(hex, one);
		}
		tap_ok(same, "1000 bytes in pieces of 1, 3, 63, 64, 65, 127, 999 and 1000 bytes: "
		       "the one-shot digest");
	}
	{
		struct sha256 c;
		char hex[65];

		sha256_init(&c);
		for (int i = 0; i < 1000; i++)
			sha256_update(&c, "aaaaaaaaaa", 10);
		sha256_final_hex(&c, hex);
		tap_ok(!strcmp(hex, "27dd1f61b867b6a0f6e9d8a41c43231de52107e53ae424de8f847b821db4b711"),
		       "10000 'a' in pieces of 10 (sha256sum)");
	}
	return tap_done();
}
