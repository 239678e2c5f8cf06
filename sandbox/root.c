/* The block's minimal root (SPEC §7 as widened by §0): a tmpfs holding
 * binds of the host's system trees and a few /etc files, a /dev with the
 * block's own /dev/shm and pseudo-terminals, /work, /tmp, /code and a
 * private /proc whose host-wide files are masked. The first process of
 * the block builds it in its own mount namespace, pivots into it and
 * detaches the old root.
 *
 * The system trees are bound without MS_RDONLY: the files there belong
 * to the host's root, which is not mapped in the block's user namespace,
 * and Landlock grants them read and execute only, so a write is refused
 * with the error the host gives an unprivileged user (EACCES, or ENOENT
 * for a missing file) instead of EROFS. What the block itself owns
 * (/code, the root tmpfs, /proc) is mounted read-only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"

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

const char *const sbx_sys_dirs[SBX_SYS_DIRS + 1] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL
};

static int set_attr(const char *path, int recursive, unsigned long long attr)
{
	struct mount_attr a = { .attr_set = attr };

	/* mount_setattr only adds flags, so the flags a user namespace may
	 * not clear (locked from the host) stay as they are */
	if (syscall(__NR_mount_setattr, AT_FDCWD, path,
		    recursive ? AT_RECURSIVE : 0, &a, sizeof a) < 0)
		return -errno;
	return 0;
}

#define ATTR_RO (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define ATTR_HOST (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int make_point(const char *dst, int is_dir)
{
	int fd;

	if (is_dir)
		return mkdir(dst, 0755) < 0 && errno != EEXIST ? -errno : 0;
	/* one call for a new file; an existing one must not be a link */
	if (mknod(dst, S_IFREG | 0444, 0) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	fd = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int bind_at(const char *src, const char *dst, int is_dir,
		   unsigned long long attr)
{
	int rc = make_point(dst, is_dir);

	if (rc < 0)
		return rc;
	if (mount(src, dst, NULL, MS_BIND | (is_dir ? MS_REC : 0), NULL) < 0)
		return -errno;
	return attr ? set_attr(dst, is_dir, attr) : 0;
}

/* A host entry as it is: a symlink copied (usr-merged /bin -> usr/bin),
 * a directory or file bound (with attr; 0 where the caller sets them on
 * a mount above), anything absent skipped. type is readdir's d_type,
 * or DT_UNKNOWN for an lstat to find it. 1 for a directory bound, else
 * 0 or -errno. */
static int mirror(const char *host, const char *dst, unsigned char type,
		  unsigned long long attr)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;

	if (type == DT_UNKNOWN) {
		if (lstat(host, &st) < 0)
			return errno == ENOENT ? 0 : -errno;
		type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR :
		       S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
	}
	if (type == DT_LNK) {
		n = readlink(host, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, dst) < 0 ? -errno : 0;
	}
	if (type == DT_DIR || type == DT_REG) {
		int rc = bind_at(host, dst, type == DT_DIR, attr);

		return rc < 0 ? rc : type == DT_DIR;
	}
	return 0;
}

/* path under the blocks' system trees: the host's, or an
 * environment's (pol->sysroot) */
static void sys_path(const struct sbx_policy *pol, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", pol->sysroot ? pol->sysroot : "", path);
}

/* /etc: the run's directory of copies and written files (sandbox/etc.c)
 * bound whole, and bound over its points the entries it could not copy
 * (directories, mostly) from the source's /etc (or the host's:
 * resolv.conf). A mount of its own: one recursive mount_setattr makes
 * every bind below nosuid and nodev, one more the whole read-only. */
static int build_etc(const struct sbx_policy *pol)
{
	const struct sbx_etc *e = pol->files.etc;
	char etc[PATH_MAX];
	int rc;

	if (!e || !e->dir[0])
		return -ENOENT;
	if (mkdir("etc", 0755) < 0 || mount(e->dir, "etc", NULL, MS_BIND, NULL) < 0)
		return -errno;
	sys_path(pol, "/etc", etc, sizeof etc);
	for (const char *b = e->binds; *b; b += strlen(b) + 1) {
		char host[PATH_MAX + 256], dst[PATH_MAX];
		int dir = b[0] == 'd' || b[0] == 'D';

		snprintf(host, sizeof host, "%s/%s", b[0] == 'd' || b[0] == 'f' ? etc : "/etc", b + 1);
		snprintf(dst, sizeof dst, "etc/%s", b + 1);
		/* gone since the copy was checked: its point stays empty */
		if (mount(host, dst, NULL, MS_BIND | (dir ? MS_REC : 0), NULL) < 0 && errno != ENOENT)
			return -errno;
	}
	if ((rc = set_attr("etc", 1, ATTR_HOST)) < 0)
		return rc;
	return set_attr("etc", 0, MOUNT_ATTR_RDONLY);
}

/* /dev: the host's harmless character devices (device nodes cannot be
 * made in a user namespace), the links to this process's descriptors,
 * a private bounded /dev/shm and a private devpts instance, so POSIX
 * shared memory, semaphores and pseudo-terminals work and reach nothing
 * outside the block. */
static int build_dev(const struct sbx_policy *pol)
{
	static const char *const nodes[] = {
		"null", "zero", "full", "random", "urandom", "tty", NULL
	};
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" },
	};
	char opts[128];
	int rc;

	if (mkdir("dev", 0755) < 0 || mkdir("dev/shm", 01777) < 0 ||
	    mkdir("dev/pts", 0755) < 0)
		return -errno;
	for (const char *const *n = nodes; *n; n++) {
		char host[64], dst[64];
		struct stat st;

		snprintf(host, sizeof host, "/dev/%s", *n);
		snprintf(dst, sizeof dst, "dev/%s", *n);
		if (stat(host, &st) < 0 || !S_ISCHR(st.st_mode)) {
			if (!strcmp(*n, "tty"))
				continue;	/* e.g. a container without one */
			return -ENODEV;
		}
		if ((rc = make_point(dst, 0)) < 0)
			return rc;
		/* no nosuid/ro: /dev/null must stay writable */
		if (mount(host, dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
	}
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		char dst[32];

		snprintf(dst, sizeof dst, "dev/%s", links[i][0]);
		if (symlink(links[i][1], dst) < 0)
			return -errno;
	}
	/* noexec as container runtimes mount it; bounded by --shm-bytes */
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=1777",
		 pol->shm_bytes, pol->shm_bytes / 4096 + 64);
	if (mount("shm", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		return -errno;
	/* a new instance: its ptys are the block's alone */
	if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return -errno;
	return 0;
}

/* ---- /proc ------------------------------------------------------------- */

/* Host-wide files a program has no use for that show other processes'
 * activity (interrupt, paging and disk counters, file locks with their
 * pids), the host's kernel command line and keys: masked by an empty
 * read-only file (what runc does with /dev/null). */
static const char *const proc_empty[] = {
	"interrupts", "softirqs", "vmstat", "diskstats", "schedstat", "locks",
	"cmdline", "keys", "key-users", "config.gz", "sched_debug",
	"latency_stats", "timer_list", NULL
};

/* Directories of host-wide statistics and hardware: an empty read-only
 * directory. */
static const char *const proc_dirs[] = {
	"pressure", "acpi", "asound", "scsi", NULL
};

/* Read by programs (free, top, ps, node's os module, psutil), so given a
 * content of the block's own instead of the host's: see sbx_write_masks. */
static const char *const proc_own[] = { "meminfo", "loadavg", "stat", NULL };

static int mask_proc(const char *masks)
{
	char src[PATH_MAX], dst[64];
	int rc;

	/* the mask files' directory read-only first, in this namespace: a
	 * bind keeps its source mount's flags, so every mask below is
	 * read-only, nosuid and nodev without a call of its own (some 16) */
	if (mount(masks, masks, NULL, MS_BIND, NULL) < 0)
		return -errno;
	if ((rc = set_attr(masks, 0, ATTR_RO)) < 0)
		return rc;
	for (const char *const *f = proc_own; *f; f++) {
		snprintf(src, sizeof src, "%s/%s", masks, *f);
		snprintf(dst, sizeof dst, "proc/%s", *f);
		if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
	}
	/* With the source known to be there, ENOENT from a mount below is
	 * its target's: a file or directory this kernel does not have. */
	snprintf(src, sizeof src, "%s/empty", masks);
	if (access(src, R_OK) < 0)
		return -errno;
	for (const char *const *f = proc_empty; *f; f++) {
		snprintf(dst, sizeof dst, "proc/%s", *f);
		if (mount(src, dst, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
			return -errno;
	}
	/* an empty read-only directory bound, not a tmpfs of its own: a
	 * new superblock (and its teardown) costs several binds */
	snprintf(src, sizeof src, "%s/emptydir", masks);
	for (const char *const *d = proc_dirs; *d; d++) {
		snprintf(dst, sizeof dst, "proc/%s", *d);
		if (mount(src, dst, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

static int write_mask(int dirfd, const char *name, const char *text, size_t len)
{
	return sbx_write_file(dirfd, name, text, len, 0444);
}

int sbx_write_masks(const char *dir, unsigned long long memory)
{
	unsigned long long host_kb = 0, kb;
	struct timespec real, boot;
	long ncpu = sbx_online_cpus();
	char buf[8192];
	int fd, n, rc;
	FILE *f;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the block's memory is what one of its processes may take
	 * (--memory-max), never more than the host has */
	if ((f = fopen("/proc/meminfo", "re"))) {
		if (fscanf(f, "MemTotal: %llu kB", &host_kb) != 1)
			host_kb = 0;
		fclose(f);
	}
	kb = memory / 1024;
	if (host_kb && host_kb < kb)
		kb = host_kb;
	n = snprintf(buf, sizeof buf,
		     "MemTotal:       %llu kB\nMemFree:        %llu kB\n"
		     "MemAvailable:   %llu kB\nBuffers:        0 kB\n"
		     "Cached:         0 kB\nSwapCached:     0 kB\n"
		     "Active:         0 kB\nInactive:       0 kB\n"
		     "SwapTotal:      0 kB\nSwapFree:       0 kB\n"
		     "Shmem:          0 kB\nSReclaimable:   0 kB\n", kb, kb, kb);
	rc = write_mask(fd, "meminfo", buf, (size_t)n);
	if (!rc)
		rc = write_mask(fd, "loadavg", "0.00 0.00 0.00 1/1 1\n", 21);
	/* counters of the block's own (none yet); btime stays the host's
	 * boot time, which ps needs to date processes */
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	n = snprintf(buf, sizeof buf, "cpu  0 0 0 0 0 0 0 0 0 0\n");
	for (long i = 0; i < ncpu && i < 256; i++)
		n += snprintf(buf + n, sizeof buf - (size_t)n,
			      "cpu%ld 0 0 0 0 0 0 0 0 0 0\n", i);
	n += snprintf(buf + n, sizeof buf - (size_t)n,
		      "intr 0\nctxt 0\nbtime %lld\nprocesses 0\nprocs_running 1\n"
		      "procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
		      (long long)(real.tv_sec - boot.tv_sec));
	if (!rc)
		rc = write_mask(fd, "stat", buf, (size_t)n);
	if (!rc)
		rc = write_mask(fd, "empty", "", 0);
	if (!rc && mkdirat(fd, "emptydir", 0555) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* ---- the root ----------------------------------------------------------- */

static int bind_run_dirs(const struct sbx_policy *pol)
{
	int rc;

	if (mkdir("work", 0755) < 0 || mkdir("code", 0755) < 0 ||
	    mkdir("tmp", 01777) < 0 || mkdir("proc", 0555) < 0)
		return -errno;
	/* /work and /tmp share the run's bounded tmpfs (--workdir-bytes) */
	if (mount(pol->work, "work", NULL, MS_BIND, NULL) < 0 ||
	    mount(pol->tmp, "tmp", NULL, MS_BIND, NULL) < 0)
		return -errno;
	if ((rc = bind_at(pol->code, "code", 1, ATTR_RO)) < 0)
		return rc;
	if (pol->has_bag) {
		char src[PATH_MAX];

		/* a read-only mount: the bag cannot be changed or removed,
		 * whoever owns the file */
		snprintf(src, sizeof src, "%s/" SBX_BAG_NAME, pol->code);
		if (mount(src, "work/" SBX_BAG_NAME, NULL, MS_BIND, NULL) < 0)
			return -errno;
		if ((rc = set_attr("work/" SBX_BAG_NAME, 0, ATTR_RO)) < 0)
			return rc;
	}
	return 0;
}

int sbx_block_root(const struct sbx_policy *pol, size_t index,
		   const char **ret_layer, unsigned *ret_sys_dirs)
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
	/* Only these exist inside: /run, /var, /home, /sys and every host
	 * unix socket are simply not there (Landlock before ABI 9 does not
	 * cover connect() to a pathname socket). */
	*ret_sys_dirs = 0;
	for (unsigned k = 0; sbx_sys_dirs[k]; k++) {
		char src[PATH_MAX];

		sys_path(pol, sbx_sys_dirs[k], src, sizeof src);
		if ((rc = mirror(src, sbx_sys_dirs[k] + 1, DT_UNKNOWN, ATTR_HOST)) < 0)
			return rc;
		*ret_sys_dirs |= (unsigned)rc << k;
	}
	if ((rc = build_etc(pol)) < 0 || (rc = build_dev(pol)) < 0 ||
	    (rc = bind_run_dirs(pol)) < 0)
		return rc;
	/* A private /proc, mounted while the old root is still attached:
	 * the kernel allows a new proc mount in a user namespace only while
	 * a full one is visible. Read-only: /proc/sys and sysrq-trigger
	 * cannot be written. */
	*ret_layer = "proc";
	if (pol->layers & SBX_BIT(SBX_L_PROC)) {
		if (mount("proc", "proc", "proc",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
			return -errno;
		if ((rc = mask_proc(pol->files.masks)) < 0)
			return rc;
	}
	*ret_layer = "root";
	/* the root itself read-only: /work, /tmp and /dev/shm take writes */
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
