/* The blocks' seccomp filters at run time: compiled at build time by
 * sandbox/gen/seccomp-gen (from sandbox/seccomp.c, the only file that
 * uses libseccomp) and embedded here, then installed as raw BPF; the
 * handler does not load libseccomp. tests/unit/test_seccomp.c checks
 * the embedded filters equal a fresh compile. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

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

void sbx_bpf_free(struct sbx_bpf *b)
{
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}

int sbx_seccomp_apply(const struct sbx_bpf *b)
{
	struct sock_fprog prog = {
		.len = (unsigned short)(b->len / sizeof(struct sock_filter)),
		.filter = b->insns,
	};

	if (!b->insns)
		return -EINVAL;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	/* verify it took: only this filter answers its canary so */
	if (syscall(SBX_SECCOMP_CANARY_NR) >= 0 || errno != SBX_SECCOMP_CANARY_ERRNO)
		return -EPERM;
	return 0;
}

int sbx_seccomp_available(void)
{
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
	       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0,
		       &(unsigned int){ SECCOMP_RET_KILL_PROCESS }) == 0;
}
