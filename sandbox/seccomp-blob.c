/* The blocks' seccomp filters, compiled at build time by
 * sandbox/gen/seccomp-gen (from sandbox/seccomp.c) and embedded here;
 * tests/unit/test_seccomp.c checks they equal a fresh compile. The
 * assembler reads the files; the paths are relative to the directory
 * make runs in, the Makefile's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox.h"

__asm__(".section .rodata\n"
	".balign 16\n"
	"codellm_filter_plain:\n"
	".incbin \"sandbox/gen/filter-plain.bpf\"\n"
	"codellm_filter_plain_end:\n"
	".balign 16\n"
	"codellm_filter_netlink:\n"
	".incbin \"sandbox/gen/filter-netlink.bpf\"\n"
	"codellm_filter_netlink_end:\n"
	".previous\n");
extern const char codellm_filter_plain[] __asm__("codellm_filter_plain");
extern const char codellm_filter_plain_end[] __asm__("codellm_filter_plain_end");
extern const char codellm_filter_netlink[] __asm__("codellm_filter_netlink");
extern const char codellm_filter_netlink_end[] __asm__("codellm_filter_netlink_end");

int sbx_seccomp_prebuilt(int netlink_route, struct sbx_bpf *ret)
{
	const char *p = netlink_route ? codellm_filter_netlink : codellm_filter_plain;
	const char *end = netlink_route ? codellm_filter_netlink_end : codellm_filter_plain_end;
	size_t len = (size_t)(end - p);

	if (len == 0 || len % 8)
		return -EINVAL;
	if (!(ret->insns = malloc(len)))
		return -ENOMEM;
	memcpy(ret->insns, p, len);
	ret->len = len;
	return 0;
}
