/* min-sandbox: the sandbox of make bench's sandbox-handler baseline
 * (bare-handler.c built with -DMIN_SANDBOX). The least isolation worth
 * calling a sandbox, written by hand and in one process, so that what
 * codellm's own sandbox costs beyond it can be told apart from what any
 * namespace sandbox costs. No cgroups, no rlimits, no accounting, no init
 * of its own: the program is exec'd as PID 1 of its namespace. Layers:
 *
 *   clone()     new user namespace (the handler's uid/gid are 65534
 *               inside: no capability survives the exec, and no host id
 *               but the handler's own is reachable), and new PID (sees
 *               only its own processes; all die with it), mount (the root
 *               below is its own), network (no interface but a down lo),
 *               IPC and UTS namespaces. A raw clone, no stack: no extra
 *               process, no helper.
 *   root        a read-only tmpfs holding read-only binds of /usr and of
 *               the few /etc entries bash and python read (not all of
 *               /etc: for a root handler the namespace's uid owns root's
 *               files, /etc/shadow included), merged-/usr symlinks, a
 *               fresh read-only /proc of the new PID namespace, the host's
 *               /dev/null and /dev/zero and a writable tmpfs /tmp;
 *               pivot_root and the old root detached.
 *   fds         stdin /dev/null, stdout the caller's pipe, stderr kept;
 *               every other descriptor (the connection's socket among
 *               them) closed at the exec.
 *   no_new_privs  nothing the program runs gains privileges.
 *   Landlock    every file-system right of the kernel's ABI handled;
 *               granted: list /, read+run /usr, read /etc and /proc,
 *               all of /tmp, read+write /dev/null, read /dev/zero. A
 *               second wall should a mount be wrong.
 *   seccomp     raw BPF: not x86_64 (or x32 numbers) kills; a short list
 *               of calls that reach kernel surface the program has no use
 *               for (ptrace, mounts, modules, kexec, bpf, perf, keys, new
 *               namespaces...) fails with EPERM; clone3 with ENOSYS (its
 *               flags are out of a filter's reach; libc falls back to
 *               clone, whose namespace flags fail); anything else runs.
 *
 * Fails closed: a step that fails writes one line naming it to stderr and
 * the child exits 127 without running the program. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "min-sandbox.h"
#include "sandbox/phase.h"

#ifndef __x86_64__
#error "min-sandbox: the seccomp filter is x86_64's"
#endif

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)	/* ABI 5 */
#endif

#define LL_X	LANDLOCK_ACCESS_FS_EXECUTE
#define LL_R	LANDLOCK_ACCESS_FS_READ_FILE
#define LL_W	LANDLOCK_ACCESS_FS_WRITE_FILE
#define LL_DIR	LANDLOCK_ACCESS_FS_READ_DIR
#define LL_DEV	(LL_R | LL_W | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The namespaces the child gets; and those clone() may not make in it */
#define NEW_NS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | \
		CLONE_NEWIPC | CLONE_NEWUTS)
#define DENY_NS (NEW_NS | CLONE_NEWCGROUP)

/* The host's devices bound into the new root (/dev/zero: for the 64 MiB
 * pipeline bench.py sends) */
static const char *const devs[] = { "/dev/null", "/dev/zero", NULL };

/* The step that failed and errno, on one line of stderr. */
static void say(const char *step, const char *what)
{
	char line[256];
	int n = snprintf(line, sizeof line, "min-sandbox: %s %s: %s\n", step, what,
			 strerror(errno));

	if (n > (int)sizeof line - 1)
		n = (int)sizeof line - 1;
	if (n > 0 && write(2, line, (size_t)n) < 0) {
		/* nothing more to say it with */
	}
}

/* A step of the child failed: said, and the child's end. */
static void __attribute__((noreturn)) fail(const char *step, const char *what)
{
	say(step, what);
	_exit(127);
}

/* text into one of the child's own /proc/self files. */
static void write_proc(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		fail("write", file);
	close(fd);
}

/* The handler's uid and gid as 65534 in the new user namespace: the one
 * mapping a process may write for itself without privilege (setgroups
 * denied first, as the kernel requires for gid_map). */
static void map_ids(uid_t uid, gid_t gid)
{
	char line[64];

	snprintf(line, sizeof line, "65534 %u 1\n", (unsigned)uid);
	write_proc("/proc/self/uid_map", line);
	write_proc("/proc/self/setgroups", "deny");
	snprintf(line, sizeof line, "65534 %u 1\n", (unsigned)gid);
	write_proc("/proc/self/gid_map", line);
}

/* One entry of the host's /etc as etc/NAME of the new root: a symlink
 * as the same symlink, a file or directory as a bind mount (made
 * read-only with the whole root); one the host lacks is left out. */
static void mirror_etc(const char *name)
{
	char host[128], dst[128], target[256];
	struct stat st;
	ssize_t n;

	snprintf(host, sizeof host, "/etc/%s", name);
	snprintf(dst, sizeof dst, "etc/%s", name);
	if (lstat(host, &st) < 0) {
		if (errno == ENOENT)
			return;
		fail("stat", host);
	}
	if (S_ISLNK(st.st_mode)) {
		n = readlink(host, target, sizeof target - 1);
		if (n < 0)
			fail("readlink", host);
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			fail("symlink", dst);
		return;
	}
	if (S_ISDIR(st.st_mode) ? mkdir(dst, 0755) < 0 : mknod(dst, S_IFREG | 0644, 0) < 0)
		fail("create", dst);
	if (mount(host, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		fail("bind", host);
}

/* The tree of the new root, in the tmpfs that is the cwd: directories,
 * merged-/usr symlinks, /usr and /etc entries bound, the devices' mount
 * points, /proc mounted (we are PID 1 of its namespace). */
static void fill_root(void)
{
	static const char *const dirs[] = { "usr", "etc", "proc", "dev", "tmp", NULL };
	static const char *const links[][2] = {
		{ "usr/bin", "bin" }, { "usr/sbin", "sbin" },
		{ "usr/lib", "lib" }, { "usr/lib64", "lib64" },
	};
	static const char *const etc[] = {
		"ld.so.cache", "passwd", "group", "nsswitch.conf", "localtime",
		"alternatives", "python3", "python3.11", NULL
	};

	for (const char *const *d = dirs; *d; d++)
		if (mkdir(*d, 0755) < 0)
			fail("mkdir", *d);
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			fail("symlink", links[i][1]);
	if (mount("/usr", "usr", NULL, MS_BIND | MS_REC, NULL) < 0)
		fail("bind", "/usr");
	for (const char *const *e = etc; *e; e++)
		mirror_etc(*e);
	for (const char *const *d = devs; *d; d++)
		if (mknod(*d + 1, S_IFREG | 0644, 0) < 0)
			fail("create", *d);
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("mount", "/proc");
}

/* The minimal root: a tmpfs over the host's /tmp (in our own mount
 * namespace), filled, made read-only with everything bound into it, then
 * the writable /tmp and the devices (nodev would break them), then
 * pivot_root into it and the old root detached. */
static void build_root(void)
{
	struct mount_attr ro = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make private", "/");
	if (mount("msb-root", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		fail("mount root tmpfs on", "/tmp");
	if (chdir("/tmp") < 0)
		fail("chdir", "/tmp");
	fill_root();
	if (mount_setattr(AT_FDCWD, ".", AT_RECURSIVE, &ro, sizeof ro) < 0)
		fail("make read-only", "root");
	if (mount("msb-tmp", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		fail("mount", "/tmp");
	for (const char *const *d = devs; *d; d++)
		if (mount(*d, *d + 1, NULL, MS_BIND, NULL) < 0)
			fail("bind", *d);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		fail("pivot_root", "root");
	if (umount2(".", MNT_DETACH) < 0)
		fail("detach", "old root");
	if (chdir("/") < 0)
		fail("chdir", "/");
}

/* stdin /dev/null, stdout out_fd, stderr as it is; every other
 * descriptor closed at the exec. */
static void set_fds(int out_fd)
{
	int null = open("/dev/null", O_RDONLY);

	if (null < 0)
		fail("open", "/dev/null");
	if (null != 0 && dup2(null, 0) < 0)
		fail("dup2", "stdin");
	if (out_fd != 1 ? dup2(out_fd, 1) < 0 : fcntl(1, F_SETFD, 0) < 0)
		fail("dup2", "stdout");
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail("close_range", "3..");
}

/* The rights of the kernel's Landlock ABI handled, the new root's few
 * paths granted theirs, the child restricted (no_new_privs first). */
static void landlock(void)
{
	static const struct {
		const char *path;
		uint64_t access;
	} rules[] = {
		{ "/", LL_DIR }, { "/usr", LL_X | LL_R | LL_DIR }, { "/etc", LL_R | LL_DIR },
		{ "/proc", LL_R | LL_DIR }, { "/tmp", ~0ULL }, { "/dev/null", LL_DEV },
		{ "/dev/zero", LL_R | LANDLOCK_ACCESS_FS_IOCTL_DEV },
	};
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	struct landlock_ruleset_attr attr = { 0 };
	int rs;

	if (abi < 1)
		fail("landlock", "ABI");
	attr.handled_access_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		fail("landlock", "ruleset");
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		struct landlock_path_beneath_attr pb = {
			.allowed_access = rules[i].access & attr.handled_access_fs,
			.parent_fd = open(rules[i].path, O_PATH | O_CLOEXEC),
		};

		if (pb.parent_fd < 0 ||
		    syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			fail("landlock rule", rules[i].path);
		close(pb.parent_fd);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("prctl", "no_new_privs");
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		fail("landlock", "restrict_self");
	close(rs);
}

#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP(code, k, jt, jf))

/* The seccomp filter, raw BPF. Layout: arch and x32 checks, clone and
 * clone3, the denied numbers, allow; then clone's flag test and the
 * return statements the jumps above land on (BPF jumps only forward). */
static void seccomp(void)
{
	static const int deny[] = {
		SYS_ptrace, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_kexec_load,
		SYS_kexec_file_load, SYS_init_module, SYS_finit_module,
		SYS_delete_module, SYS_bpf, SYS_perf_event_open, SYS_keyctl,
		SYS_add_key, SYS_request_key, SYS_unshare, SYS_setns,
		SYS_userfaultfd, SYS_open_by_handle_at, SYS_reboot, SYS_swapon,
		SYS_swapoff, SYS_open_tree, SYS_move_mount, SYS_fsopen,
		SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr,
	};
	enum { N = sizeof deny / sizeof deny[0], CLONE = 6 + N + 1,
	       ENOSYS_AT = CLONE + 3, EPERM_AT = ENOSYS_AT + 1, KILL_AT = EPERM_AT + 1 };
	struct sock_filter f[KILL_AT + 1];
	struct sock_fprog prog = { .len = KILL_AT + 1, .filter = f };

	f[0] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[1] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, KILL_AT - 2);
	f[2] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	f[3] = JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, KILL_AT - 4, 0);	/* x32 */
	f[4] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, CLONE - 5, 0);
	f[5] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, ENOSYS_AT - 6, 0);
	for (int i = 0; i < N; i++)
		f[6 + i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)deny[i],
				(unsigned char)(EPERM_AT - 7 - i), 0);
	f[6 + N] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* clone's flags: the low half of its first argument */
	f[CLONE] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
	f[CLONE + 1] = JUMP(BPF_JMP | BPF_JSET | BPF_K, DENY_NS, EPERM_AT - CLONE - 2, 0);
	f[CLONE + 2] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[ENOSYS_AT] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	f[EPERM_AT] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	f[KILL_AT] = STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		fail("seccomp", "filter");
}

/* The child, in its new namespaces: ids, root, descriptors, Landlock,
 * seccomp, then the program. */
static void __attribute__((noreturn)) child(const char *path, char *const argv[],
					    int out_fd, uid_t uid, gid_t gid)
{
	sbx_phase_mark(SBX_PH_BLOCK);
	map_ids(uid, gid);
	build_root();
	sbx_phase_mark(SBX_PH_ROOT);
	set_fds(out_fd);
	landlock();
	seccomp();
	sbx_phase_mark(SBX_PH_EXEC);
	execve(path, argv, environ);
	fail("execve", path);
}

/* A raw clone(2) without a stack of its own is a fork into new
 * namespaces: the child runs on a copy of ours, as after fork(). The
 * handler is single-threaded, so libc's state in the child is sound. */
pid_t msb_spawn(const char *path, char *const argv[], int out_fd)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	long pid = syscall(SYS_clone, (unsigned long)NEW_NS | SIGCHLD,
			   NULL, NULL, NULL, 0UL);

	if (pid == 0)
		child(path, argv, out_fd, uid, gid);
	if (pid < 0)
		say("clone", "namespaces");
	return pid < 0 ? -1 : (pid_t)pid;
}
