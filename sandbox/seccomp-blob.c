/* The blocks' seccomp filters at run time: compiled at build time by
 * sandbox/gen/seccomp-gen (from sandbox/seccomp.c, the only file that
 * uses libseccomp) and embedded here, then installed as raw BPF; the
 * handler does not load libseccomp. tests/unit/test_seccomp.c checks
 * the embedded filters equal a fresh compile and what the kernel
 * answers with them; tests/unit/test_seccomp_equiv.c that they answer
 * as libseccomp's compile of the same rules. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
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

/* Without a cgroup bounding the run (sandbox/cgroup.c), a second filter
 * stacked on the first: memfd_create fails with ENOSYS, as on a kernel
 * without it, so a block cannot keep unbounded memory in memfds (each
 * a file of --max-file-bytes, as many as it has descriptors); programs
 * that use memfds fall back (to /dev/shm, bounded by --shm-bytes, or to
 * a file in /tmp, bounded by --workdir-bytes). Other architectures are
 * the first filter's (it kills them). */
int sbx_seccomp_deny_memfd(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };

	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ? -errno : 0;
}

int sbx_seccomp_available(void)
{
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
	       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0,
		       &(unsigned int){ SECCOMP_RET_KILL_PROCESS }) == 0;
}
