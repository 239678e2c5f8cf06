/* Namespaces and the block's minimal root.
 *
 * Per request the handler enters its own user + mount namespace and
 * mounts a size- and inode-capped tmpfs on /tmp there: the run's code,
 * its workdir and the blocks' root mount points live in it, nothing
 * touches the host's disk, and removal is an unmount (no link can be
 * followed). Per block, the process created with new user, PID, mount,
 * network, IPC, UTS and cgroup namespaces builds a root from read-only
 * binds, pivots into it and detaches the old one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
struct mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* What of the host's /etc the interpreters read; anything else of /etc
 * stays out. passwd, group, hosts, hostname and nsswitch.conf are
 * written fresh instead. */
static const char *const etc_keep[] = {
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"localtime", "timezone", "perl", "php", "python3", "python3.*",
	"ruby*", "ssl", "ca-certificates", "ca-certificates.conf",
	"mime.types", "protocols", "services", "gai.conf", "magic",
	"magic.mime", "inputrc", NULL
};

static const char *const sys_dirs[] = {
	"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL
};

static int write_file_at(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* ---- the handler's own namespace for the request ----------------------- */

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, rc = 0;
	size_t len = strlen(text);

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = -errno ? -errno : -EIO;
	close(fd);
	return rc;
}

int sbx_write_maps(pid_t pid, const char *uid_map, const char *gid_map)
{
	int rc;

	/* setgroups must be denied before an unprivileged gid_map, and a
	 * block must never drop its groups to reach group-denied files */
	rc = write_proc(pid, "setgroups", "deny");
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if ((rc = write_proc(pid, "uid_map", uid_map)) < 0)
		return rc;
	return write_proc(pid, "gid_map", gid_map);
}

int sbx_request_ns(struct sbx_rundir *d, unsigned long long work_bytes,
		   unsigned long long work_inodes, unsigned long long run_bytes,
		   uid_t *ret_uid, gid_t *ret_gid)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char umap[64], gmap[64], opts[160];
	int sync[2], status, rc;
	pid_t helper, self = getpid();
	char c = 0;

	memset(d, 0, sizeof *d);
	d->root_fd = -1;
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	/* Our own maps are written from outside: a process that just
	 * entered a user namespace has no capability left in the parent,
	 * and a root handler maps two ids (0 and 65534). */
	if (uid == 0) {
		snprintf(umap, sizeof umap, "0 0 1\n65534 65534 1\n");
		snprintf(gmap, sizeof gmap, "0 0 1\n65534 65534 1\n");
	} else {
		snprintf(umap, sizeof umap, "0 %u 1\n", (unsigned)uid);
		snprintf(gmap, sizeof gmap, "0 %u 1\n", (unsigned)gid);
	}
	helper = fork();
	if (helper < 0) {
		rc = -errno;
		close(sync[0]);
		close(sync[1]);
		return rc;
	}
	if (helper == 0) {
		close(sync[1]);
		if (read(sync[0], &c, 1) != 1 || c != 'u')
			_exit(1);
		_exit(sbx_write_maps(self, umap, gmap) < 0 ? 2 : 0);
	}
	close(sync[0]);
	rc = unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ? -errno : 0;
	if (write(sync[1], rc ? "x" : "u", 1) != 1 && !rc)
		rc = -EIO;
	close(sync[1]);
	if (waitpid(helper, &status, 0) != helper || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		rc = rc ? rc : -EPERM;
	if (rc)
		return rc;
	/* nothing mounted below may propagate back to the host */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%d,mode=0755",
		 run_bytes, 4096);
	if (mount("codellm-run", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	snprintf(d->root, sizeof d->root, "/tmp");
	snprintf(d->work, sizeof d->work, "/tmp/work");
	snprintf(d->code, sizeof d->code, "/tmp/code");
	snprintf(d->roots, sizeof d->roots, "/tmp/roots");
	if (mkdir(d->work, 0700) < 0 || mkdir(d->code, 0755) < 0 ||
	    mkdir(d->roots, 0755) < 0)
		return -errno;
	*ret_uid = uid == 0 ? 65534 : 0;
	*ret_gid = uid == 0 ? 65534 : 0;
	/* --workdir-bytes and --workdir-inodes bound the blocks' writes */
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=0700,uid=%u,gid=%u",
		 work_bytes, work_inodes, (unsigned)*ret_uid, (unsigned)*ret_gid);
	if (mount("codellm-work", d->work, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	d->tmpfs = 1;
	d->root_fd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->root_fd < 0 ? -errno : 0;
}

/* ---- the shared, empty network namespace -------------------------------- */

int sbx_net_is_empty(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	struct ifreq ifr;
	int fd, empty = 1;

	if (!ifs)
		return 0;
	for (i = ifs; i->if_index; i++)
		if (strcmp(i->if_name, "lo"))
			empty = 0;
	if_freenameindex(ifs);
	if (!empty)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags & IFF_UP))
		empty = 0;
	close(fd);
	return empty;
}

/* ---- the block's root ---------------------------------------------------- */

static int set_ro(const char *path, int recursive)
{
	struct mount_attr a = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};

	/* mount_setattr only adds flags, so the flags a user namespace may
	 * not clear (locked from the host) stay as they are */
	if (syscall(__NR_mount_setattr, AT_FDCWD, path,
		    recursive ? AT_RECURSIVE : 0, &a, sizeof a) < 0)
		return -errno;
	return 0;
}

static int bind_ro(const char *src, const char *dst, int is_dir)
{
	if (is_dir) {
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		int fd = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444);

		if (fd < 0)
			return -errno;
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | (is_dir ? MS_REC : 0), NULL) < 0)
		return -errno;
	return set_ro(dst, is_dir);
}

/* A host entry as it is: a symlink copied (usr-merged /bin -> usr/bin),
 * a directory or file bound read-only, anything absent skipped. */
static int mirror(const char *host, const char *dst)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;

	if (lstat(host, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(host, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, dst) < 0 ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode))
		return bind_ro(host, dst, 1);
	if (S_ISREG(st.st_mode))
		return bind_ro(host, dst, 0);
	return 0;
}

static int build_etc(const struct sbx_policy *pol)
{
	static const char passwd[] =
		"root:x:0:0:root:/root:/usr/sbin/nologin\n"
		"nobody:x:65534:65534:nobody:" SBX_IN_WORK ":/usr/sbin/nologin\n";
	static const char group[] = "root:x:0:\nnogroup:x:65534:\n";
	static const char hosts[] = "127.0.0.1\tlocalhost codellm\n::1\tlocalhost ip6-localhost\n";
	DIR *dir;
	struct dirent *e;
	int rc;

	if (mkdir("etc", 0755) < 0)
		return -errno;
	if ((rc = write_file_at("etc/passwd", passwd)) ||
	    (rc = write_file_at("etc/group", group)) ||
	    (rc = write_file_at("etc/hosts", hosts)) ||
	    (rc = write_file_at("etc/hostname", "codellm\n")) ||
	    (rc = write_file_at("etc/nsswitch.conf",
				"passwd: files\ngroup: files\nhosts: files dns\n")))
		return rc;
	if (pol->allow_network && (rc = mirror("/etc/resolv.conf", "etc/resolv.conf")))
		return rc;
	dir = opendir("/etc");
	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		char host[PATH_MAX], dst[PATH_MAX];

		for (const char *const *k = etc_keep; *k; k++) {
			if (fnmatch(*k, e->d_name, 0))
				continue;
			snprintf(host, sizeof host, "/etc/%s", e->d_name);
			snprintf(dst, sizeof dst, "etc/%s", e->d_name);
			if ((rc = mirror(host, dst)) < 0) {
				closedir(dir);
				return rc;
			}
			break;
		}
	}
	closedir(dir);
	return 0;
}

static int build_dev(void)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", NULL };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	};
	int rc;

	if (mkdir("dev", 0755) < 0)
		return -errno;
	for (const char *const *n = nodes; *n; n++) {
		char host[64], dst[64];
		int fd;

		snprintf(host, sizeof host, "/dev/%s", *n);
		snprintf(dst, sizeof dst, "dev/%s", *n);
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0)
			return -errno;
		close(fd);
		/* device nodes cannot be made in a user namespace: bind the
		 * host's (no nosuid/ro: /dev/null must stay writable) */
		if (mount(host, dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
	}
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		char dst[32];

		snprintf(dst, sizeof dst, "dev/%s", links[i][0]);
		if (symlink(links[i][1], dst) < 0)
			return -errno;
	}
	rc = 0;
	return rc;
}

int sbx_block_root(const struct sbx_policy *pol, size_t index,
		   const char **ret_layer)
{
	char newroot[PATH_MAX];
	int rc;

	*ret_layer = "mountns";
	/* the block's mounts stay in its namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	*ret_layer = "root";
	snprintf(newroot, sizeof newroot, "%s/%zu", pol->roots, index);
	if (mount("codellm-root", newroot, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=1m,nr_inodes=1024,mode=0755") < 0)
		return -errno;
	if (chdir(newroot) < 0)
		return -errno;
	/* Only these exist inside: /run, /tmp, /home, /var, /sys and every
	 * host unix socket are simply not there (Landlock before ABI 9 does
	 * not cover connect() to a pathname socket). */
	for (const char *const *s = sys_dirs; *s; s++) {
		char host[64];

		snprintf(host, sizeof host, "/%s", *s);
		if ((rc = mirror(host, *s)) < 0)
			return rc;
	}
	if ((rc = build_etc(pol)) < 0 || (rc = build_dev()) < 0)
		return rc;
	if (mkdir("work", 0755) < 0 || mkdir("code", 0755) < 0 || mkdir("proc", 0555) < 0)
		return -errno;
	if (mount(pol->work, "work", NULL, MS_BIND, NULL) < 0)
		return -errno;
	if ((rc = bind_ro(pol->code, "code", 1)) < 0)
		return rc;
	if (pol->has_bag) {
		char src[PATH_MAX];

		/* a read-only mount: the bag cannot be changed or removed,
		 * whoever owns the file */
		snprintf(src, sizeof src, "%s/" SBX_BAG_NAME, pol->code);
		if (mount(src, "work/" SBX_BAG_NAME, NULL, MS_BIND, NULL) < 0 ||
		    set_ro("work/" SBX_BAG_NAME, 0) < 0)
			return -errno;
	}
	/* A private /proc, mounted while the old root is still attached:
	 * the kernel allows a new proc mount in a user namespace only while
	 * a full one is visible. Read-only: /proc/sys and sysrq-trigger
	 * cannot be written. */
	*ret_layer = "proc";
	if ((pol->layers & SBX_BIT(SBX_L_PROC)) &&
	    mount("proc", "proc", "proc",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
		return -errno;
	*ret_layer = "root";
	/* the root itself read-only: only /work takes writes */
	if (mount(NULL, ".", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  "size=1m,nr_inodes=1024,mode=0755") < 0)
		return -errno;
	/* pivot_root(".", "."): the old root ends up stacked on the new
	 * one and is detached at once, so no path leads back to it */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	if (umount2(".", MNT_DETACH) < 0)
		return -errno;
	if (chdir(SBX_IN_WORK) < 0)
		return -errno;
	return 0;
}

int sbx_rundir_unmount(struct sbx_rundir *d)
{
	int rc = 0;

	if (!d->tmpfs)
		return sbx_rundir_remove(d);
	if (d->root_fd >= 0) {
		close(d->root_fd);
		d->root_fd = -1;
	}
	if (umount2(d->work, MNT_DETACH) < 0)
		rc = -errno;
	if (umount2(d->root, MNT_DETACH) < 0 && !rc)
		rc = -errno;
	d->root[0] = '\0';
	d->tmpfs = 0;
	return rc;
}
