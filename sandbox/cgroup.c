/* A run's own memory cgroup (issue 32): the inner wall that bounds
 * everything a run's processes hold in memory (their heaps, shared
 * anonymous mappings, memfd and tmpfs pages, SysV segments), which no
 * per-process rlimit does. The unit's MemoryMax= stays the outer wall.
 *
 * Where the handler may write one:
 * - cgroup v2 with the memory controller: below the handler's own
 *   cgroup (Delegate=yes gives a unit's handler its cgroup). Controllers
 *   are enabled in a cgroup's subtree only while it holds no process,
 *   so a handler alone in its cgroup moves itself into a leaf first
 *   (codellm-handler-PID); one that shares its cgroup (systemd-socket-
 *   activate beside it) cannot, and gets no run cgroup.
 * - cgroup v1's memory hierarchy (hybrid hosts), where the handler may
 *   make a directory below its own memory cgroup: a root handler.
 * Runs' cgroups are OWN/codellm/slot-DEV-INO-N on v1 (one per run slot,
 * kept between its runs) and OWN/codellm/run-PID otherwise (removed at
 * the run's end). OWN/codellm is made once, mode 01777 like /tmp: a
 * root handler becomes its slot's uid before the run (THREATS.md #17)
 * and gives the run's cgroup to that uid, which may then remove it at
 * the end and nobody else's (the files inside, the limits among them,
 * stay root's). The handler moves itself into the
 * run's cgroup (v1: through its tasks file, see move_self) while it
 * creates the blocks, so that every block process
 * is born there (none runs a moment outside), and back before the
 * blocks' code runs (but a lone block's, released at once). What a
 * handler killed before its end leaves (an empty cgroup) the next one
 * removes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"

/* Whether `word` is one of the words of s (separated by any of sep). */
static int word_in(const char *s, const char *sep, const char *word)
{
	size_t wl = strlen(word);

	while (*s) {
		size_t n = strcspn(s, sep);

		if (n == wl && !strncmp(s, word, wl))
			return 1;
		s += n;
		s += strspn(s, sep);
	}
	return 0;
}

/* This process's path in each hierarchy from /proc/self/cgroup:
 * path[1] in v2's (the "0::" line), path[0] in v1's memory one; ""
 * where there is none. 0, or -errno. */
static int own_paths(char path[2][PATH_MAX])
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");

	path[0][0] = path[1][0] = '\0';
	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		int v2;

		if (!c2)
			continue;
		*c2 = '\0';
		/* "0::PATH": hierarchy 0, no controllers named */
		v2 = c1 == line + 1 && line[0] == '0' && c1[1] == '\0';
		if (path[v2][0] || !(v2 || word_in(c1 + 1, ",", "memory")))
			continue;
		snprintf(path[v2], PATH_MAX, "%s", c2 + 1);
		path[v2][strcspn(path[v2], "\n")] = '\0';
	}
	fclose(f);
	return 0;
}

/* The mount table's answer: where each hierarchy is mounted (the first
 * mount of fstype cgroup2; the first of fstype cgroup with the memory
 * option), joined with path, the part below a mount of a subtree (a
 * container's) taken off. One read of /proc/self/mountinfo: some 0.08
 * ms here, the kernel writes out every mount. */
static void dirs_from_mounts(char path[2][PATH_MAX], char dir[2][PATH_MAX])
{
	char line[4096], mnt[2][PATH_MAX] = { "", "" }, mroot[2][PATH_MAX] = { "", "" };
	FILE *f = fopen("/proc/self/mountinfo", "re");

	dir[0][0] = dir[1][0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof line, f) && !(mnt[0][0] && mnt[1][0])) {
		char root[PATH_MAX], point[PATH_MAX], fstype[64], super[1024];
		const char *dash = strstr(line, " - ");
		int v2;

		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		v2 = !strcmp(fstype, "cgroup2");
		if (!v2 && (strcmp(fstype, "cgroup") != 0 || !word_in(super, ",", "memory")))
			continue;
		if (mnt[v2][0])
			continue;
		snprintf(mnt[v2], sizeof mnt[v2], "%s", point);
		snprintf(mroot[v2], sizeof mroot[v2], "%s", root);
	}
	fclose(f);
	for (int v = 0; v < 2; v++) {
		size_t rl = strlen(mroot[v]);
		char *p = path[v];

		if (!mnt[v][0] || !p[0])
			continue;
		/* a mount of a subtree (a container's) shows the path below it */
		if (strcmp(mroot[v], "/") && !strncmp(p, mroot[v], rl) && (p[rl] == '/' || !p[rl]))
			p += rl;
		if ((size_t)snprintf(dir[v], PATH_MAX, "%s%s", mnt[v], strcmp(p, "/") ? p : "") >=
		    PATH_MAX)
			dir[v][0] = '\0';
	}
}

/* Where systemd mounts the hierarchies, tried before the mount table:
 * v2 at /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid),
 * v1's memory one at /sys/fs/cgroup/memory. A place counts only when
 * its file system is the hierarchy's (statfs) and path is a directory
 * there (v1: one with the memory controller's files); a mount of a
 * subtree (a container without a cgroup namespace) has no such
 * directory, and an unusual layout none of these places: both take
 * the mount table. 1 when every hierarchy this process is in was found
 * (dir set), else 0 (dir all ""). */
static int dirs_from_usual(char path[2][PATH_MAX], char dir[2][PATH_MAX])
{
	static const struct { const char *mnt, *mark; long magic; int v; } usual[] = {
		{ "/sys/fs/cgroup", "cgroup.procs", CGROUP2_SUPER_MAGIC, 1 },
		{ "/sys/fs/cgroup/unified", "cgroup.procs", CGROUP2_SUPER_MAGIC, 1 },
		{ "/sys/fs/cgroup/memory", "memory.limit_in_bytes", CGROUP_SUPER_MAGIC, 0 },
	};

	dir[0][0] = dir[1][0] = '\0';
	for (size_t i = 0; i < sizeof usual / sizeof usual[0]; i++) {
		int v = usual[i].v;
		const char *p = path[v];
		char mark[PATH_MAX + 64];
		struct statfs fs;

		if (!p[0] || dir[v][0] || statfs(usual[i].mnt, &fs) < 0 ||
		    (long)fs.f_type != usual[i].magic)
			continue;
		if ((size_t)snprintf(dir[v], PATH_MAX, "%s%s", usual[i].mnt,
				     strcmp(p, "/") ? p : "") >= PATH_MAX)
			break;
		snprintf(mark, sizeof mark, "%s/%s", dir[v], usual[i].mark);
		if (access(mark, F_OK) < 0)
			dir[v][0] = '\0';
	}
	if ((!path[0][0] || dir[0][0]) && (!path[1][0] || dir[1][0]))
		return 1;
	dir[0][0] = dir[1][0] = '\0';
	return 0;
}

void sbx_cgroup_dirs(enum sbx_cgroup_find how, char dir[2][PATH_MAX])
{
	char path[2][PATH_MAX];

	dir[0][0] = dir[1][0] = '\0';
	if (own_paths(path) < 0 || (!path[0][0] && !path[1][0]))
		return;
	if (how != SBX_CGROUP_BY_MOUNTS && dirs_from_usual(path, dir))
		return;
	if (how != SBX_CGROUP_BY_USUAL)
		dirs_from_mounts(path, dir);
}

/* The directory a run's cgroup calls go to, opened once (O_PATH) and
 * kept: a cgroup file's full path walks some eight kernfs components
 * on every call (each revalidated under the hierarchy's lock, which
 * eight handlers at once wait on), relative to the directory one. A
 * request's cgroup calls, repeated in a loop here: 27 us against 36.
 * Forgotten whenever a cgroup directory is removed. */
static struct {
	int fd;
	char path[PATH_MAX];
} dir_kept = { -1, "" };

static int dir_fd(const char *dir)
{
	if (dir_kept.fd >= 0 && !strcmp(dir_kept.path, dir))
		return dir_kept.fd;
	if (dir_kept.fd >= 0)
		close(dir_kept.fd);
	dir_kept.fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(dir_kept.path, sizeof dir_kept.path, "%s", dir_kept.fd >= 0 ? dir : "");
	return dir_kept.fd;
}

static void dir_forget(void)
{
	if (dir_kept.fd >= 0)
		close(dir_kept.fd);
	dir_kept.fd = -1;
	dir_kept.path[0] = '\0';
}

static int open_path(const char *dir, const char *file, int flags)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof p, "%s/%s", dir, file);
	return open(p, flags | O_CLOEXEC);
}

/* dir/file opened relative to the kept directory (by its full path
 * where the directory cannot be opened) */
static int open_in(const char *dir, const char *file, int flags)
{
	int dfd = dir_fd(dir);

	return dfd >= 0 ? openat(dfd, file, flags | O_CLOEXEC) : open_path(dir, file, flags);
}

static int write_at(const char *dir, const char *file, const char *val)
{
	int fd, rc = 0;
	size_t n = strlen(val);

	fd = open_in(dir, file, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, n) != (ssize_t)n)
		rc = -errno;
	close(fd);
	return rc;
}

static int read_at(const char *dir, const char *file, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open_in(dir, file, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

static int has_file(const char *dir, const char *file)
{
	char p[PATH_MAX + 64];
	int dfd = dir_fd(dir);

	if (dfd >= 0)
		return faccessat(dfd, file, F_OK, 0) == 0;
	snprintf(p, sizeof p, "%s/%s", dir, file);
	return access(p, F_OK) == 0;
}

/* The value after `key ` in a flat-keyed file (memory.events,
 * memory.oom_control), or -1. */
static long long keyed(const char *dir, const char *file, const char *key)
{
	char buf[2048], *p;
	size_t kl = strlen(key);

	if (read_at(dir, file, buf, sizeof buf) < 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return strtoll(p + kl + 1, NULL, 10);
	return -1;
}

static int pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Empty cgroups of handlers that are gone (killed before their end):
 * in `dir`, entries PREFIX-PID whose PID is no more. */
static void sweep(const char *dir, const char *prefix)
{
	size_t pl = strlen(prefix);
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[PATH_MAX + 300];

		if (strncmp(e->d_name, prefix, pl) || pid_alive((pid_t)atol(e->d_name + pl)))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (rmdir(p) == 0)
			dir_forget();
	}
	closedir(d);
}

/* OWN/codellm: where the runs' cgroups are, 01777 (see the top). */
static int runs_parent(int v, const char *own, char *dir, size_t len)
{
	struct stat st;

	if ((size_t)snprintf(dir, len, "%s/codellm", own) >= len)
		return -ENAMETOOLONG;
	/* made once: a look before the mkdir, which would lock the
	 * directory above on every request to say it exists */
	if (stat(dir, &st) < 0 && (errno != ENOENT || (mkdir(dir, 0755) < 0 && errno != EEXIST) ||
				   stat(dir, &st) < 0))
		return -errno;
	if ((st.st_mode & 07777) != 01777 && chmod(dir, 01777) < 0)
		return -errno;
	if (v == 2) {
		char buf[512];

		if (read_at(dir, "cgroup.subtree_control", buf, sizeof buf) < 0 ||
		    !word_in(buf, " \n", "memory")) {
			int rc = write_at(dir, "cgroup.subtree_control", "+memory +pids");

			if (rc < 0 && (rc = write_at(dir, "cgroup.subtree_control", "+memory")) < 0)
				return rc;
		}
	}
	return 0;
}

/* Moves this process into the cgroup whose cgroup.procs fd (pid
 * written) or v1 tasks fd ("0": this thread, the handler's only one)
 * is given. A process moved through cgroup.procs takes the kernel's
 * thread-group lock for writing, which waits out an RCU grace period
 * whenever no migration came just before: 7 to 16 ms here, on every
 * request that follows a pause. v1's tasks file moving the caller's own
 * thread skips that lock (cgroup_procs_write_start): 10 to 40 us. */
static int move_self(int fd, int by_tid)
{
	char pid[24];
	int n = by_tid ? snprintf(pid, sizeof pid, "0") :
			 snprintf(pid, sizeof pid, "%d", (int)getpid());

	if (fd < 0)
		return -EBADF;
	return pwrite(fd, pid, (size_t)n, 0) == n ? 0 : -errno;
}

/* v1: the tasks file where it may be written, else cgroup.procs;
 * relative to the kept directory (the run's) or by its full path (the
 * handler's own, opened once). */
static int open_mover(const char *dir, int v1, int kept, int *by_tid)
{
	int (*op)(const char *, const char *, int) = kept ? open_in : open_path;
	int fd = v1 ? op(dir, "tasks", O_WRONLY) : -1;

	*by_tid = fd >= 0;
	return fd >= 0 ? fd : op(dir, "cgroup.procs", O_WRONLY);
}

/* v2: the handler's cgroup must list memory in its subtree_control. */
static int v2_ready(struct sbx_cgroup *cg, const char *own)
{
	char buf[512], leaf[PATH_MAX];
	int rc, fd;

	if (read_at(own, "cgroup.controllers", buf, sizeof buf) < 0 ||
	    !word_in(buf, " \n", "memory"))
		return -ENOTSUP;
	if (read_at(own, "cgroup.subtree_control", buf, sizeof buf) >= 0 &&
	    word_in(buf, " \n", "memory"))
		return 0;
	rc = write_at(own, "cgroup.subtree_control", "+memory +pids");
	if (rc != -EBUSY)
		return rc < 0 ? write_at(own, "cgroup.subtree_control", "+memory") : 0;
	/* processes in it: only this one may be moved out, into a leaf */
	if (read_at(own, "cgroup.procs", buf, sizeof buf) < 0 ||
	    strtol(buf, NULL, 10) != getpid() || strchr(buf, '\n') != buf + strlen(buf) - 1)
		return -EBUSY;
	if ((size_t)snprintf(leaf, sizeof leaf, "%s/codellm-handler-%d", own, (int)getpid()) >=
	    sizeof leaf)
		return -ENAMETOOLONG;
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open_in(leaf, "cgroup.procs", O_WRONLY);
	rc = fd < 0 ? -errno : move_self(fd, 0);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return rc;
	snprintf(cg->home, sizeof cg->home, "%s", leaf);
	rc = write_at(own, "cgroup.subtree_control", "+memory +pids");
	return rc < 0 ? write_at(own, "cgroup.subtree_control", "+memory") : 0;
}

void sbx_cgroup_init(struct sbx_cgroup *cg)
{
	memset(cg, 0, sizeof *cg);
	cg->run_fd = -1;
	cg->home_fd = -1;
}

/* Kills what a reused cgroup still holds (a killed handler's blocks on
 * their way out, or the inits of the slot's last run, which let the
 * slot go while they were still exiting: a fraction of a millisecond):
 * 0 once it is empty, -EBUSY if it does not empty within about 1 s. */
static int empty_v1(const char *dir)
{
	for (int tries = 0; tries < 220; tries++) {
		char buf[4096], *p;

		if (read_at(dir, "cgroup.procs", buf, sizeof buf) < 0)
			return -errno;
		if (!buf[0])
			return 0;
		for (p = buf; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
			if (atoi(p) > 0 && atoi(p) != getpid())
				kill(atoi(p), SIGKILL);
		/* 0.2 ms at first (an exiting init), then 5 ms */
		nanosleep(&(struct timespec){ 0, (tries < 25 ? 200 : 5000) * 1000L }, NULL);
	}
	return -EBUSY;
}

/* v1's limit, and memory+swap as much (nothing of the run goes to swap
 * instead); a reused cgroup may hold a memsw limit below the new one,
 * which limit_in_bytes may not exceed: then memsw first. */
static int limit_v1(const char *dir, const char *val)
{
	int memsw = has_file(dir, "memory.memsw.limit_in_bytes");
	int rc = write_at(dir, "memory.limit_in_bytes", val);

	if (rc == -EINVAL && memsw) {
		if ((rc = write_at(dir, "memory.memsw.limit_in_bytes", val)) < 0)
			return rc;
		return write_at(dir, "memory.limit_in_bytes", val);
	}
	return rc || !memsw ? rc : write_at(dir, "memory.memsw.limit_in_bytes", val);
}

/* Removes the run's cgroup, killing what is left in it: 0 or -errno. */
static int remove_dir(const char *run, int version)
{
	int rc = 0;

	if (version == 2 && has_file(run, "cgroup.kill"))
		write_at(run, "cgroup.kill", "1");
	/* what is still dying leaves within moments; a process outside a
	 * PID namespace (--sandbox off) is killed by its pid */
	for (int tries = 0; tries < 200; tries++) {
		char buf[4096], *p;

		if (rmdir(run) == 0 || errno == ENOENT) {
			dir_forget();
			return 0;
		}
		rc = -errno;
		if (rc != -EBUSY)
			break;
		if (version == 1 && read_at(run, "cgroup.procs", buf, sizeof buf) > 0)
			for (p = buf; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
				if (atoi(p) > 0 && atoi(p) != getpid())
					kill(atoi(p), SIGKILL);
		nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	}
	return rc;
}

/* The run cgroup's bounds; a kept v1 slot cgroup also starts its peak
 * and its OOM count afresh for this run. */
static int set_limits(struct sbx_cgroup *cg, unsigned long long memory_max,
		      unsigned long long pids_max)
{
	char val[32];
	int rc;

	snprintf(val, sizeof val, "%llu", memory_max);
	if (cg->version == 2) {
		rc = write_at(cg->run, "memory.max", val);
		if (!rc && has_file(cg->run, "memory.swap.max"))
			rc = write_at(cg->run, "memory.swap.max", "0");
		if (!rc && pids_max && has_file(cg->run, "pids.max")) {
			snprintf(val, sizeof val, "%llu", pids_max);
			rc = write_at(cg->run, "pids.max", val);
		}
		return rc;
	}
	rc = cg->reused ? empty_v1(cg->run) : 0;
	if (!rc)
		rc = limit_v1(cg->run, val);
	/* the peak from this run on; the OOM kills counted from here */
	if (!rc && cg->reused)
		rc = write_at(cg->run, "memory.max_usage_in_bytes", "0");
	cg->oom_base = cg->reused ? keyed(cg->run, "memory.oom_control", "oom_kill") : 0;
	return rc;
}

int sbx_cgroup_create(struct sbx_cgroup *cg, unsigned long long memory_max,
		      unsigned long long pids_max, uid_t owner, const char *slot)
{
	char dirs[2][PATH_MAX], parent[PATH_MAX];
	int rc;

	sbx_cgroup_init(cg);
	sbx_cgroup_dirs(SBX_CGROUP_BY_ANY, dirs);
	for (int v = 2; v >= 1; v--) {
		const char *own = dirs[v - 1];

		if (!own[0] ||
		    (size_t)snprintf(cg->home, sizeof cg->home, "%s", own) >= sizeof cg->home)
			continue;
		rc = v == 2 ? v2_ready(cg, own) : 0;
		if (rc < 0) {
			snprintf(cg->why, sizeof cg->why, "cgroup v2 %.200s: %s", own, strerror(-rc));
			continue;
		}
		if (v == 2)
			sweep(own, "codellm-handler-");
		if ((rc = runs_parent(v, own, parent, sizeof parent)) < 0) {
			snprintf(cg->why, sizeof cg->why, "cgroup v%d %.200s: %s", v, own, strerror(-rc));
			continue;
		}
		/* v1: a slot's cgroup is kept and used again by the slot's next
		 * run (a fresh memory cgroup costs python about 5 ms here, a
		 * kept one nothing); v2's memory.peak cannot be reset for the
		 * next run, so each v2 run has a cgroup of its own */
		cg->reused = v == 1 && slot;
		/* what killed handlers left: swept by the runs that make such
		 * cgroups (reading the directory costs some 0.1 ms a run) */
		if (!cg->reused)
			sweep(parent, "run-");
		if (cg->reused ? (size_t)snprintf(cg->run, sizeof cg->run, "%s/%s", parent, slot) >=
				 sizeof cg->run :
				 (size_t)snprintf(cg->run, sizeof cg->run, "%s/run-%d", parent,
						  (int)getpid()) >= sizeof cg->run)
			continue;
		/* a slot's is there but for its first run */
		if ((!cg->reused || dir_fd(cg->run) < 0) && mkdir(cg->run, 0755) < 0 &&
		    errno != EEXIST) {
			snprintf(cg->why, sizeof cg->why, "cgroup v%d %.200s: %s", v, parent,
				 strerror(errno));
			continue;
		}
		cg->version = v;
		rc = set_limits(cg, memory_max, pids_max);
		/* the uid the handler becomes removes it at the end (the
		 * directory is there: set_limits wrote in it) */
		if (!rc && owner != (uid_t)-1 && owner != geteuid() &&
		    fchownat(dir_fd(cg->run), "", owner, (gid_t)-1, AT_EMPTY_PATH) < 0)
			rc = -errno;
		if (!rc) {
			cg->run_fd = open_mover(cg->run, v == 1, 1, &cg->run_by_tid);
			cg->home_fd = open_mover(cg->home, v == 1, 0, &cg->home_by_tid);
			rc = cg->run_fd < 0 || cg->home_fd < 0 ? -errno : 0;
		}
		if (rc < 0) {
			snprintf(cg->why, sizeof cg->why, "cgroup v%d %.200s: %s", v, cg->run,
				 strerror(-rc));
			sbx_cgroup_remove(cg);
			continue;
		}
		cg->limit = memory_max;
		return 0;
	}
	if (!cg->why[0])
		snprintf(cg->why, sizeof cg->why, "no cgroup v2 with the memory controller "
			 "and no cgroup v1 memory hierarchy");
	return -ENOTSUP;
}

int sbx_cgroup_enter(struct sbx_cgroup *cg)
{
	return cg && cg->version ? move_self(cg->run_fd, cg->run_by_tid) : 0;
}

int sbx_cgroup_leave(struct sbx_cgroup *cg)
{
	return cg && cg->version ? move_self(cg->home_fd, cg->home_by_tid) : 0;
}

void sbx_cgroup_stats(const struct sbx_cgroup *cg, struct sbx_usage *u)
{
	char buf[64];
	long long v;

	u->memory_peak_kib = -1;
	u->oom_kills = -1;
	u->cgroup = cg ? cg->version : 0;
	if (!cg || !cg->version)
		return;
	if (read_at(cg->run, cg->version == 2 ? "memory.peak" : "memory.max_usage_in_bytes",
		    buf, sizeof buf) > 0)
		u->memory_peak_kib = strtoll(buf, NULL, 10) / 1024;
	v = keyed(cg->run, cg->version == 2 ? "memory.events" : "memory.oom_control", "oom_kill");
	u->oom_kills = v >= 0 && cg->oom_base > 0 ? v - cg->oom_base : v;
}

int sbx_cgroup_remove(struct sbx_cgroup *cg)
{
	int rc = 0;

	if (cg->version && cg->run[0]) {
		sbx_cgroup_leave(cg);
		/* a slot's is kept for its next run */
		rc = cg->reused ? 0 : remove_dir(cg->run, cg->version);
	}
	sbx_cgroup_close(cg);
	cg->version = 0;
	return rc;
}

void sbx_cgroup_close(struct sbx_cgroup *cg)
{
	if (cg->run_fd >= 0)
		close(cg->run_fd);
	if (cg->home_fd >= 0)
		close(cg->home_fd);
	cg->run_fd = cg->home_fd = -1;
}
