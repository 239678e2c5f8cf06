/* Landlock: the block's file-system view as access rights, applied by
 * the program process itself after no_new_privs and before seccomp.
 * Debian's kernel headers define only ABI <= 2, so the constants this
 * file needs are its own (include/uapi/linux/landlock.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/internal.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define FS_EXECUTE	(1ULL << 0)
#define FS_WRITE_FILE	(1ULL << 1)
#define FS_READ_FILE	(1ULL << 2)
#define FS_READ_DIR	(1ULL << 3)
#define FS_REMOVE_DIR	(1ULL << 4)
#define FS_REMOVE_FILE	(1ULL << 5)
#define FS_MAKE_CHAR	(1ULL << 6)
#define FS_MAKE_DIR	(1ULL << 7)
#define FS_MAKE_REG	(1ULL << 8)
#define FS_MAKE_SOCK	(1ULL << 9)
#define FS_MAKE_FIFO	(1ULL << 10)
#define FS_MAKE_BLOCK	(1ULL << 11)
#define FS_MAKE_SYM	(1ULL << 12)
#define FS_REFER	(1ULL << 13)	/* ABI 2 */
#define FS_TRUNCATE	(1ULL << 14)	/* ABI 3 */
#define FS_IOCTL_DEV	(1ULL << 15)	/* ABI 5 */
#define NET_BIND_TCP	(1ULL << 0)	/* ABI 4 */
#define NET_CONNECT_TCP	(1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)	/* ABI 6 */
#define SCOPE_SIGNAL	(1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

int sbx_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
			   LL_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : (int)abi;
}

static uint64_t fs_rights(int abi)
{
	uint64_t r = (FS_MAKE_SYM << 1) - 1;	/* ABI 1: bits 0..12 */

	if (abi >= 2)
		r |= FS_REFER;
	if (abi >= 3)
		r |= FS_TRUNCATE;
	if (abi >= 5)
		r |= FS_IOCTL_DEV;
	return r;
}

static int add_path(int ruleset, const char *path, uint64_t access)
{
	struct ll_path_beneath pb = { .allowed_access = access };
	int fd = open(path, O_PATH | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* absent: nothing to grant */
	pb.parent_fd = fd;
	rc = (int)syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
	rc = rc < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Rights per kind of path; ioctl on device files (ABI 5) is granted on
 * the block's own devices, so terminals (its private ptys) and isatty()
 * answer as on the host. */
static int add_rules(int rs, const struct sbx_landlock_spec *s, int abi)
{
	uint64_t all = fs_rights(abi), ro = FS_READ_FILE | FS_READ_DIR;
	uint64_t ioctl = abi >= 5 ? FS_IOCTL_DEV : 0;
	uint64_t dev_ro = FS_READ_FILE | ioctl;
	uint64_t dev_rw = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | ioctl;
	int rc = 0;

	for (const char *const *p = s->exec_paths; p && *p && !rc; p++)
		rc = add_path(rs, *p, ro | FS_EXECUTE);
	for (const char *const *p = s->ro_paths; p && *p && !rc; p++)
		rc = add_path(rs, *p, ro);
	for (const char *const *p = s->dir_paths; p && *p && !rc; p++)
		rc = add_path(rs, *p, FS_READ_DIR);
	for (const char *const *p = s->dev_ro; p && *p && !rc; p++)
		rc = add_path(rs, *p, dev_ro);
	for (const char *const *p = s->dev_rw; p && *p && !rc; p++)
		rc = add_path(rs, *p, dev_rw);
	for (const char *const *p = s->rw_paths; p && *p && !rc; p++)
		rc = add_path(rs, *p, all);
	return rc;
}

int sbx_landlock_apply(const struct sbx_landlock_spec *s)
{
	struct ll_ruleset_attr attr = {0};
	size_t attr_size = sizeof attr.handled_access_fs;
	int abi = sbx_landlock_abi(), rs, rc;

	if (abi < 0)
		return abi;
	if (abi < SBX_LANDLOCK_MIN_ABI)
		return -ENOTSUP;
	attr.handled_access_fs = fs_rights(abi);
	if (abi >= 4) {
		attr_size = 2 * sizeof(uint64_t);
		/* no rule: TCP bind and connect are denied, a second wall
		 * behind a network namespace the block shares with other
		 * runs; in its own namespace (only its own loopback) or on
		 * the host's network (--sandbox-network) TCP is not handled */
		if (!s->allow_tcp)
			attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
	}
	if (abi >= 6) {
		attr_size = sizeof attr;
		/* abstract unix sockets and signals stop at the domain: no
		 * channel to other runs, even in a shared network namespace */
		attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
	}
	rs = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
	if (rs < 0)
		return -errno;
	rc = add_rules(rs, s, abi);
	if (!rc && syscall(__NR_landlock_restrict_self, rs, 0) < 0)
		rc = -errno;
	close(rs);
	return rc;
}
