/* The blocks' seccomp filters, compiled at build time by
 * sandbox/gen/seccomp-gen (from sandbox/seccomp.c) and embedded here;
 * tests/unit/test_seccomp.c checks they equal a fresh compile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/embed.h"
#include "sandbox/internal.h"

SBX_EMBED(codellm_filter_plain, "sandbox/gen/filter-plain.bpf");
SBX_EMBED(codellm_filter_netlink, "sandbox/gen/filter-netlink.bpf");

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
