/* The block's system-call filter, compiled once per request in the
 * handler with libseccomp and installed by each program process as raw
 * BPF, the last step before execve. libseccomp 2.5.4 cannot name the
 * newest calls, so those are raw x86-64 numbers. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* denied with EPERM: the kernel attack surface a program has no use for
 * (THREATS.md #3, #4, #10) */
static const char *const deny_names[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "create_module",
	"bpf", "perf_event_open", "userfaultfd", "lookup_dcookie",
	"keyctl", "add_key", "request_key",
	"unshare", "setns",
	"open_by_handle_at", "name_to_handle_at",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl",
	"nfsservctl", "vhangup", "fanotify_init",
	NULL
};

/* newer than libseccomp 2.5.4 knows reliably (x86-64 numbers) */
static const int deny_nrs[] = {
	425, 426, 427,			/* io_uring_setup/enter/register */
	428, 429, 430, 431, 432, 433,	/* open_tree move_mount fsopen fsconfig fsmount fspick */
	442,				/* mount_setattr */
	443,				/* quotactl_fd */
};
#define NR_CLONE3 435

int sbx_seccomp_build(int allow_af_all, struct sbx_bpf *ret)
{
	static const uint64_t ns_flags[] = {
		CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
		CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct stat st;
	int rc = -EINVAL, fd = -1;

	if (!ctx)
		return -ENOMEM;
	/* a foreign architecture (int 0x80 i386 entry) kills the process;
	 * libseccomp's default there kills only the thread. The native
	 * x86-64 filter also rejects x32 numbers as a foreign ABI. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0)
		goto out;
	for (const char *const *n = deny_names; *n; n++) {
		int nr = seccomp_syscall_resolve_name(*n);

		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;	/* not on this architecture */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0)
			goto out;
	}
	for (size_t i = 0; i < sizeof deny_nrs / sizeof deny_nrs[0]; i++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), deny_nrs[i], 0)) < 0)
			goto out;
	/* Memory that RLIMIT_DATA does not count (THREATS.md #12): memfd
	 * pages, SysV shared memory and message queues, shared anonymous
	 * mappings. ENOSYS for the calls, so programs take their fallback
	 * (a file in the bounded /work); no interpreter uses them to start. */
	{
		static const char *const shm_calls[] = {
			"memfd_create", "shmget", "msgget", "semget", NULL
		};

		for (const char *const *n = shm_calls; *n; n++) {
			int nr = seccomp_syscall_resolve_name(*n);

			if (nr != __NR_SCMP_ERROR && nr >= 0 &&
			    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
				goto out;
		}
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 1,
					   SCMP_A3_64(SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS,
						      MAP_SHARED | MAP_ANONYMOUS))) < 0)
			goto out;
	}
	/* clone3 passes its flags in memory a filter cannot read: ENOSYS
	 * makes runtimes fall back to clone, whose flags we can check */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), NR_CLONE3, 0)) < 0)
		goto out;
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					   SCMP_A0_64(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))) < 0)
			goto out;
	/* the request number is an int: compare its low 32 bits, so high
	 * bits cannot dodge the check (CVE-2017-5226) */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				   SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI))) < 0 ||
	    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				   SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX))) < 0)
		goto out;
	/* sockets: AF_UNIX, AF_INET, AF_INET6 only (no packet, netlink,
	 * vsock, ...) */
	if (!allow_af_all) {
		int calls[2] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };

		/* libseccomp takes one comparison per argument and rule:
		 * below AF_UNIX, each family between AF_INET and AF_INET6,
		 * and above AF_INET6 */
		for (int k = 0; k < 2; k++) {
			if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[k], 1,
						   SCMP_A0_64(SCMP_CMP_LT, AF_UNIX))) < 0 ||
			    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[k], 1,
						   SCMP_A0_64(SCMP_CMP_GT, AF_INET6))) < 0)
				goto out;
			for (int af = AF_INET + 1; af < AF_INET6; af++)
				if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[k], 1,
							   SCMP_A0_64(SCMP_CMP_EQ, (uint64_t)af))) < 0)
					goto out;
		}
	}
	fd = memfd_create("codellm-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter)) {
		rc = -EIO;
		goto out;
	}
	ret->len = (size_t)st.st_size;
	ret->insns = malloc(ret->len);
	if (!ret->insns) {
		rc = -ENOMEM;
		goto out;
	}
	if (pread(fd, ret->insns, ret->len, 0) != (ssize_t)ret->len) {
		free(ret->insns);
		ret->insns = NULL;
		rc = -EIO;
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
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
	/* verify it took: a denied call must now fail with EPERM */
	if (syscall(SYS_bpf, -1, NULL, 0) >= 0 || errno != EPERM)
		return -EPERM;
	return 0;
}

int sbx_seccomp_available(void)
{
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
	       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0,
		       &(unsigned int){ SECCOMP_RET_KILL_PROCESS }) == 0;
}
