/* Namespaces.
 *
 * Per request the handler enters its own user + mount namespace and
 * mounts a size- and inode-capped tmpfs on /tmp there: the run's code,
 * its workdir, its /tmp and the blocks' root mount points live in it,
 * nothing touches the host's disk, and removal is an unmount (no link
 * can be followed). That user namespace is also where the run's own
 * share of the per-user kernel limits is set. Per block the handler
 * makes an IPC namespace with bounded SysV limits, and the block's
 * first process, created with new user, PID, mount, network, UTS and
 * cgroup namespaces, builds its root (root.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"

/* ---- the handler's own namespace for the request ----------------------- */

/* One write of `text` to an existing file (a /proc or /proc/sys entry,
 * which takes it whole or not at all). */
static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	errno = 0;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	else
		snprintf(path, sizeof path, "/proc/self/%s", file);
	return write_text(path, text);
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

int sbx_write_block_maps(pid_t pid, uid_t uid, gid_t gid)
{
	char umap[48], gmap[48];

	snprintf(umap, sizeof umap, "%d %u 1\n", SBX_BLOCK_ID, (unsigned)uid);
	snprintf(gmap, sizeof gmap, "%d %u 1\n", SBX_BLOCK_ID, (unsigned)gid);
	return sbx_write_maps(pid, umap, gmap);
}

/* The unprivileged way: a one-id map of our own uid, which a process
 * may write for itself once inside (user_namespaces(7): a single line
 * mapping the writer's own effective id), so no helper process is
 * forked for it. A root handler that kept its uid maps two ids, 0 and
 * 65534: that needs CAP_SETUID in the parent namespace, which a process
 * that just entered a user namespace no longer has, so a helper of the
 * same uid writes it from outside. */
static int enter_user_ns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char umap[64], gmap[64];
	int sync[2], status, rc;
	pid_t helper, self = getpid();
	char c = 0;

	if (uid == 0) {
		snprintf(umap, sizeof umap, "0 0 1\n%d %d 1\n", SBX_BLOCK_ID, SBX_BLOCK_ID);
		snprintf(gmap, sizeof gmap, "0 0 1\n%d %d 1\n", SBX_BLOCK_ID, SBX_BLOCK_ID);
	} else {
		snprintf(umap, sizeof umap, "0 %u 1\n", (unsigned)uid);
		snprintf(gmap, sizeof gmap, "0 %u 1\n", (unsigned)gid);
	}
	if (uid != 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return -errno;
		return sbx_write_maps(self, umap, gmap);
	}
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
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
	return rc;
}

/* Whether `id` is mapped in our user namespace's uid_map or gid_map
 * (a root handler inside a container's namespace may not have it). */
static int id_mapped(const char *map, unsigned long id)
{
	unsigned long in, out, count;
	int found = 0;
	FILE *f = fopen(map, "re");

	if (!f)
		return 0;
	while (!found && fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3)
		found = id >= in && id - in < count;
	fclose(f);
	return found;
}

/* The initial user namespace maps every id: one readlink instead of
 * reading both maps (ten system calls) on every request. Its inode
 * number is fixed (PROC_USER_INIT_INO). */
static int in_initial_userns(void)
{
	static const char want[] = "user:[4026531837]";
	char link[64];
	ssize_t n = readlink("/proc/self/ns/user", link, sizeof link);

	return n == (ssize_t)sizeof want - 1 && !memcmp(link, want, sizeof want - 1);
}

int sbx_can_become(uid_t uid)
{
	if (in_initial_userns())
		return 1;
	return id_mapped("/proc/self/uid_map", uid) && id_mapped("/proc/self/gid_map", uid);
}

int sbx_become(uid_t uid)
{
	int rc;

	/* groups first: setgroups needs the CAP_SETGID the uid change
	 * takes away */
	if ((rc = sbx_drop_groups()) < 0)
		return rc;
	if (setresgid(uid, uid, uid) < 0)
		return -errno;
	if (setresuid(uid, uid, uid) < 0) {
		rc = -errno;
		/* still root: back to where we were, whole, or nothing
		 * may go on */
		if (setresgid(0, 0, 0) < 0)
			return -ENOTRECOVERABLE;
		return rc;
	}
	if (getuid() != uid || geteuid() != uid || sbx_has_groups() != 0)
		return -EPERM;
	/* a uid change leaves us undumpable, and our /proc/self/uid_map
	 * would then belong to root: the helper that writes it is us */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

int sbx_has_groups(void)
{
	gid_t g[256], own = getegid();
	int n = getgroups(256, g);

	if (n < 0)
		return errno == EINVAL ? 1 : -errno;
	for (int i = 0; i < n; i++)
		if (g[i] != own)
			return 1;
	return 0;
}

int sbx_drop_groups(void)
{
	int rc = sbx_has_groups();

	/* nothing to drop (setgroups may be denied in our namespace) */
	if (rc <= 0)
		return rc;
	if (setgroups(0, NULL) < 0)
		return -errno;
	return getgroups(0, NULL) == 0 ? 0 : -EPERM;
}

static unsigned long long read_ull(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n > 0 ? strtoull(buf, NULL, 10) : 0;
}

static int write_sys(const char *path, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%llu", v);
	return write_text(path, buf);
}

/* Per-user kernel limits count per user namespace up to the initial one,
 * where every run of this uid meets (THREATS.md #17): the user
 * namespace limits of the run's own namespace (its inotify instances and
 * watches) and the rlimits its blocks' namespaces inherit as their total
 * (queued signals, POSIX message queue bytes) are cut to 1/share, so
 * `share` concurrent runs together never reach the uid's limit and one
 * run cannot starve another. */
int sbx_share_ucounts(unsigned share)
{
	static const struct { const char *global, *own; } lim[] = {
		{ "/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances" },
		{ "/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches" },
	};
	static const int rl[] = { RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE };
	int rc;

	if (share < 1)
		share = 1;
	for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
		unsigned long long g = read_ull(lim[i].global);

		if (g == 0)
			return -ENOENT;
		if ((rc = write_sys(lim[i].own, g / share ? g / share : 1)) < 0)
			return rc;
	}
	for (size_t i = 0; i < sizeof rl / sizeof rl[0]; i++) {
		struct rlimit r;

		if (getrlimit(rl[i], &r) < 0)
			return -errno;
		if (r.rlim_cur != RLIM_INFINITY)
			r.rlim_cur /= share;
		if (r.rlim_cur > r.rlim_max)
			r.rlim_cur = r.rlim_max;
		r.rlim_max = r.rlim_cur;
		if (setrlimit(rl[i], &r) < 0)
			return -errno;
	}
	return 0;
}

/* The run's tmpfs on /tmp (code, mask files, root mount points) and
 * inside it the data tmpfs that holds the blocks' /work and /tmp,
 * bounded together by --workdir-bytes and --workdir-inodes. */
/* dir (opened before the tmpfs hides it, when below /tmp) bound at at */
static int bind_held(int fd, const char *at)
{
	char src[32];

	snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
	if (mkdir(at, 0755) < 0 || mount(src, at, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	return 0;
}

static int mount_run(struct sbx_rundir *d, unsigned long long work_bytes,
		     unsigned long long work_inodes, unsigned long long run_bytes,
		     const char *sysroot, const char *etc_kept, uid_t uid, gid_t gid)
{
	char opts[160];
	int tree = -1, etc = -1, rc = 0;

	/* an environment's tree below /tmp (a checkout there) would be
	 * hidden by the tmpfs: held open across the mount, then bound at
	 * /tmp/sysroot (opened in this namespace, so it may be bound) */
	if (sysroot && (tree = open(sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	/* so would the slot's kept /etc (sandbox/etc.c): missing, the run
	 * makes its own */
	if (etc_kept)
		etc = open(etc_kept, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%d,mode=0755", run_bytes, 4096);
	if (mount("codellm-run", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		rc = -errno;
	if (!rc && tree >= 0) {
		snprintf(d->sysroot, sizeof d->sysroot, "/tmp/sysroot");
		rc = bind_held(tree, d->sysroot);
	}
	if (!rc && etc >= 0 && bind_held(etc, "/tmp/etc") == 0)
		snprintf(d->etc, sizeof d->etc, "/tmp/etc");
	if (tree >= 0)
		close(tree);
	if (etc >= 0)
		close(etc);
	if (rc < 0)
		return rc;
	snprintf(d->root, sizeof d->root, "/tmp");
	snprintf(d->data, sizeof d->data, "/tmp/data");
	snprintf(d->work, sizeof d->work, "/tmp/data/work");
	snprintf(d->tmp, sizeof d->tmp, "/tmp/data/tmp");
	snprintf(d->code, sizeof d->code, "/tmp/code");
	snprintf(d->roots, sizeof d->roots, "/tmp/roots");
	snprintf(d->masks, sizeof d->masks, "/tmp/masks");
	if (mkdir(d->data, 0755) < 0 || mkdir(d->code, 0755) < 0 ||
	    mkdir(d->roots, 0755) < 0 || mkdir(d->masks, 0755) < 0)
		return -errno;
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=0755,uid=%u,gid=%u",
		 work_bytes, work_inodes, (unsigned)uid, (unsigned)gid);
	if (mount("codellm-work", d->data, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	d->tmpfs = 1;
	if (mkdir(d->work, 0700) < 0 || mkdir(d->tmp, 0700) < 0 ||
	    chmod(d->tmp, 01777) < 0 || lchown(d->work, uid, gid) < 0 ||
	    lchown(d->tmp, uid, gid) < 0)
		return -errno;
	d->root_fd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->root_fd < 0 ? -errno : 0;
}

int sbx_request_ns(struct sbx_rundir *d, unsigned long long work_bytes,
		   unsigned long long work_inodes, unsigned long long run_bytes,
		   const char *sysroot, const char *etc_kept, uid_t *ret_uid, gid_t *ret_gid)
{
	int root = geteuid() == 0, rc;

	memset(d, 0, sizeof *d);
	d->root_fd = -1;
	if ((rc = enter_user_ns()) < 0)
		return rc;
	/* nothing mounted below may propagate back to the host */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	/* the ids the blocks map to, and own their /work and /tmp */
	*ret_uid = root ? SBX_BLOCK_ID : 0;
	*ret_gid = root ? SBX_BLOCK_ID : 0;
	return mount_run(d, work_bytes, work_inodes, run_bytes, sysroot, etc_kept, *ret_uid,
			 *ret_gid);
}

/* SysV IPC memory is no process's: without these limits a block could
 * fill memory with segments and queues nobody maps. A namespace made by
 * the handler belongs to the run's user namespace, where the handler is
 * root and may set them (a block's own one would belong to a namespace
 * whose root is not mapped). */
int sbx_block_ipc_ns(unsigned long long shm_bytes)
{
	unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
	int rc;

	if (unshare(CLONE_NEWIPC) < 0)
		return -errno;
	if ((rc = write_sys("/proc/sys/kernel/shmmax", shm_bytes)) < 0 ||
	    (rc = write_sys("/proc/sys/kernel/shmall", shm_bytes / page)) < 0 ||
	    (rc = write_sys("/proc/sys/kernel/msgmni",
			    shm_bytes / 16384 < 32000 ? shm_bytes / 16384 + 1 : 32000)) < 0)
		return rc;
	/* semaphore arrays: SEMMSL SEMMNS SEMOPM SEMMNI, a few hundred KiB */
	return write_text("/proc/sys/kernel/sem", "250 32000 32 128");
}

/* In the block's own network namespace, loopback up: a server and its
 * client in one block talk as on any host; nothing else is there. */
int sbx_net_lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		rc = -errno;
	} else {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

/* ---- the shared, empty network namespace -------------------------------- */

/* A child can create a user namespace (one fork, one unshare): the
 * run's policy asks (besteffort mode) and the probe reports it. */
int sbx_userns_works(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) < 0 ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

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
