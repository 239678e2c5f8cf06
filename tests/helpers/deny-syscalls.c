/* deny-syscalls: run a program under a seccomp filter that makes some
 * system calls fail, so the tests can take one sandbox layer away from
 * the handler (and everything it starts) and see it fail closed; and,
 * with --landlock-abi, make the handler see an older Landlock.
 *
 *   deny-syscalls [--errno N] [--landlock-abi N] [RULE[,RULE...]] -- PROGRAM [ARGS...]
 *
 * At least one of RULE and --landlock-abi. Every call no RULE names is
 * allowed. A RULE is
 *   NAME or NR        the call always fails with errno N (default ENOSYS)
 *   NAME:ARG=VALUE    only when argument ARG (0-5) equals VALUE,
 *                     e.g. prctl:0=22 (PR_SET_SECCOMP)
 *   NAME:ARG!=VALUE   only when argument ARG is not VALUE
 *   NAME:ARG&MASK     only when argument ARG has every bit of MASK set
 *   clone-newuser     unshare and clone fail when their flags hold
 *                     CLONE_NEWUSER (fork keeps working); clone3, whose
 *                     flags a filter cannot read, fails with ENOSYS so
 *                     libc falls back to clone
 * NAME is resolved with seccomp_syscall_resolve_name; NR is a raw number
 * of the native architecture (444 landlock_create_ruleset, 445
 * landlock_add_rule, 446 landlock_restrict_self on x86-64), for calls
 * libseccomp does not know.
 *
 * --landlock-abi N (N >= 1): the Landlock ABI version query,
 * landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION),
 * answers N in PROGRAM and everything it starts (also in other PID and
 * user namespaces, as the handler's blocks are); every real Landlock call
 * (a ruleset with an attr, add_rule, restrict_self) still reaches the
 * kernel unchanged. The handler then behaves as on a kernel of ABI N.
 * N above the kernel's own ABI is no real kernel: the handler would ask
 * for rights the kernel rejects (EINVAL).
 *   How: a second seccomp filter whose one rule is SCMP_ACT_NOTIFY for
 * exactly that query (attr 0, size 0, the low 32 bits of flags 1), loaded
 * with a listener (seccomp user notification), and a supervisor process
 * that answers each notification with N (error 0). The two filters
 * compose by the kernel's precedence: a RULE's ERRNO beats NOTIFY, so a
 * denied landlock_create_ruleset stays denied. The notify filter is
 * loaded first, and the deny filter last, so RULEs never get in the way
 * of the set-up itself (as before, the deny filter is the last call but
 * execve).
 *   The supervisor: forked twice before any filter is loaded (it must not
 * carry the notify filter itself: the listener reports POLLHUP only when
 * no task uses the filter any more), so this process keeps its pid and
 * execs PROGRAM (LISTEN_PID stays right). The middle process exits at
 * once and is reaped here before the exec; the supervisor is reparented
 * to init (or the nearest child subreaper above this process), which
 * reaps it — PROGRAM, e.g. systemd-socket-activate, never sees an
 * unknown child. It gets the listener over a socketpair (SCM_RIGHTS),
 * keeps no other descriptor (stdin and stdout are /dev/null; stderr, for
 * its diagnostics, only when it is a regular file or a terminal, else
 * /dev/null: holding a pipe would keep whoever reads PROGRAM's stderr to
 * EOF waiting before reaping PROGRAM, and where a task keeps its filter
 * until it is reaped — older kernels, Debian 12's 6.1 among them; newer
 * ones drop it at exit — that is a deadlock), renames its command line
 * to "ARGV0 landlock-abi-supervisor" so it never looks like PROGRAM,
 * stays in the caller's process group (a group kill ends it too), and
 * exits when the listener reports no more users: once PROGRAM and every
 * descendant have exited (or been reaped, on older kernels). Should it
 * die first, the query fails with ENOSYS (the kernel's answer without a
 * listener), never with a wrong ABI.
 *
 * no_new_privs is set first, then the filters are loaded and PROGRAM
 * exec'd (same process, so LISTEN_PID stays right). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#define LANDLOCK_CREATE_RULESET_VERSION 1

static void usage(void)
{
	fprintf(stderr, "usage: deny-syscalls [--errno N] [--landlock-abi N] [RULE[,RULE...]] -- PROGRAM [ARGS...]\n"
		"  RULE: a syscall name or number, NAME:ARG=VALUE, NAME:ARG!=VALUE,\n"
		"        NAME:ARG&MASK, or clone-newuser; fails with errno N (default ENOSYS)\n"
		"  --landlock-abi N: the Landlock ABI version query answers N (>= 1)\n"
		"  at least one of RULE and --landlock-abi\n");
	exit(2);
}

static int parse_ull(const char *s, unsigned long long *ret)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*ret = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

static int resolve(const char *name)
{
	unsigned long long v;
	int nr;

	if (parse_ull(name, &v) == 0)
		return v > 4095 ? -1 : (int)v;
	nr = seccomp_syscall_resolve_name(name);
	return nr == __NR_SCMP_ERROR ? -1 : nr;
}

static int add(scmp_filter_ctx ctx, uint32_t action, const char *name, int nr,
	       unsigned arg_cnt, const struct scmp_arg_cmp *cmp)
{
	int rc = seccomp_rule_add_array(ctx, action, nr, arg_cnt, cmp);

	if (rc < 0) {
		fprintf(stderr, "deny-syscalls: %s (%d): %s\n", name, nr, strerror(-rc));
		return -1;
	}
	return 0;
}

static int add_rule(scmp_filter_ctx ctx, int err, char *rule)
{
	uint32_t deny = SCMP_ACT_ERRNO((uint32_t)err);
	struct scmp_arg_cmp cmp;
	unsigned long long arg, val;
	char *sep, *op;
	int nr;

	if (!strcmp(rule, "clone-newuser")) {
		cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
		if ((nr = resolve("clone3")) < 0)
			nr = 435;
		return add(ctx, deny, "unshare", resolve("unshare"), 1, &cmp) ||
		       add(ctx, deny, "clone", resolve("clone"), 1, &cmp) ||
		       add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", nr, 0, NULL) ? -1 : 0;
	}
	sep = strchr(rule, ':');
	if (sep)
		*sep++ = '\0';
	if ((nr = resolve(rule)) < 0) {
		fprintf(stderr, "deny-syscalls: unknown system call \"%s\"\n", rule);
		return -1;
	}
	if (!sep)
		return add(ctx, deny, rule, nr, 0, NULL);
	op = sep + strcspn(sep, "=&!");
	if (!*op || (*op == '!' && op[1] != '=')) {
		fprintf(stderr, "deny-syscalls: \"%s:%s\": want ARG=VALUE, ARG!=VALUE or ARG&MASK\n",
			rule, sep);
		return -1;
	}
	{
		char kind = *op;

		*op = '\0';
		if (kind == '!')
			op++;
		if (parse_ull(sep, &arg) < 0 || arg > 5 || parse_ull(op + 1, &val) < 0) {
			fprintf(stderr, "deny-syscalls: \"%s\": bad argument condition\n", rule);
			return -1;
		}
		cmp = (struct scmp_arg_cmp){
			.arg = (unsigned)arg,
			.op = kind == '=' ? SCMP_CMP_EQ : kind == '!' ? SCMP_CMP_NE : SCMP_CMP_MASKED_EQ,
			.datum_a = val,
			.datum_b = kind == '&' ? val : 0,
		};
	}
	return add(ctx, deny, rule, nr, 1, &cmp);
}

/* ---- --landlock-abi: the supervisor ------------------------------------ */

/* Its command line becomes "ARGV0 landlock-abi-supervisor": still the
 * helper's path (a test finds it), never PROGRAM's (a test looking for
 * PROGRAM must not count it). */
static void rename_supervisor(int argc, char **argv)
{
	static const char label[] = "landlock-abi-supervisor";
	char *p = argv[0] + strlen(argv[0]) + 1;
	char *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	size_t room;

	if (argc < 2 || argv[1] != p || end <= p)
		return;	/* not the usual contiguous block: leave it */
	room = (size_t)(end - p);
	memset(p, 0, room);
	memcpy(p, label, room - 1 < sizeof label - 1 ? room - 1 : sizeof label - 1);
}

/* stdin and stdout to /dev/null; stderr stays only where holding it
 * delays nobody (a file, a terminal); every other descriptor but sock
 * closed. Returns sock's new number (3), or -1. */
static int supervisor_fds(int sock)
{
	struct stat st;
	/* out of the way first: with stdio closed by the caller, sock
	 * may be 0, 1 or 2 */
	int high = fcntl(sock, F_DUPFD_CLOEXEC, 64);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (high < 0 || null < 0)
		return -1;
	if (fstat(2, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
		if (dup2(null, 2) < 0)
			return -1;
	if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup3(high, 3, O_CLOEXEC) < 0)
		return -1;
	/* high, null (unless it is 0-3) and whatever the caller left open */
	if (close_range(4, ~0U, 0) < 0)
		for (int fd = 4, max = (int)sysconf(_SC_OPEN_MAX); fd < max; fd++)
			close(fd);
	return 3;
}

static int recv_fd(int sock)
{
	char byte, buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof buf,
	};
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;	/* EOF: the set-up failed, and says so itself */
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static int send_fd(int sock, int fd)
{
	char byte = 0, buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof buf,
	};
	struct cmsghdr *c;
	ssize_t n;

	memset(buf, 0, sizeof buf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/* Answers every version query with abi until no task uses the filter. */
static int supervise(int sock, int abi)
{
	struct pollfd pfd = { .events = POLLIN };
	int listener = recv_fd(sock);

	close(sock);
	if (listener < 0)
		return 1;
	pfd.fd = listener;
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;

		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("deny-syscalls supervisor: poll");
			return 1;
		}
		if (!(pfd.revents & POLLIN)) {
			if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
				return 0;	/* no task left with the filter */
			continue;
		}
		memset(&req, 0, sizeof req);	/* the kernel wants it zeroed */
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			/* EINTR; ENOENT: the caller was gone (a signal)
			 * before it was read */
			if (errno == EINTR || errno == ENOENT)
				continue;
			perror("deny-syscalls supervisor: SECCOMP_IOCTL_NOTIF_RECV");
			return 1;
		}
		/* nothing of the caller's is read (the filter matched the
		 * whole query), so no pid to translate across namespaces;
		 * the id is checked as seccomp_unotify(2) says */
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0)
			continue;	/* ENOENT: the caller is gone */
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.val = abi;
		resp.error = 0;
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT) {
			perror("deny-syscalls supervisor: SECCOMP_IOCTL_NOTIF_SEND");
			return 1;
		}
	}
}

/* Forks the supervisor twice (it is reparented to init or a subreaper,
 * never a child of PROGRAM) and returns this side's end of the
 * socketpair the listener goes over, or -1. */
static int start_supervisor(int argc, char **argv, int abi)
{
	int sv[2], status;
	pid_t mid, r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("deny-syscalls: socketpair");
		return -1;
	}
	mid = fork();
	if (mid < 0) {
		perror("deny-syscalls: fork");
		return -1;
	}
	if (mid == 0) {
		pid_t sup = fork();

		if (sup != 0)
			_exit(sup < 0 ? 1 : 0);
		close(sv[0]);
		rename_supervisor(argc, argv);
		sv[1] = supervisor_fds(sv[1]);
		_exit(sv[1] < 0 ? 1 : supervise(sv[1], abi));
	}
	close(sv[1]);
	do
		r = waitpid(mid, &status, 0);
	while (r < 0 && errno == EINTR);
	/* ECHILD: SIGCHLD ignored by the caller, the kernel reaped it */
	if (r < 0 ? errno != ECHILD : !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "deny-syscalls: could not start the supervisor\n");
		close(sv[0]);
		return -1;
	}
	return sv[0];
}

/* The notify filter: only the version query (attr NULL, size 0, flags
 * 1; flags is 32 bits wide in the kernel) goes to the supervisor. */
static scmp_filter_ctx abi_filter(void)
{
	struct scmp_arg_cmp cmp[] = {
		SCMP_A0_64(SCMP_CMP_EQ, 0),
		SCMP_A1_64(SCMP_CMP_EQ, 0),
		SCMP_A2_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, LANDLOCK_CREATE_RULESET_VERSION),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx) {
		fprintf(stderr, "deny-syscalls: seccomp_init failed\n");
		return NULL;
	}
	if (add(ctx, SCMP_ACT_NOTIFY, "landlock_create_ruleset", __NR_landlock_create_ruleset,
		3, cmp) < 0) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx = NULL, abi_ctx = NULL;
	unsigned long long e;
	int err = ENOSYS, abi = 0, i = 1, rc, sock, listener;
	char *rules = NULL, *tok, *save = NULL;

	/* the options, and at most one RULE list, in any order up to "--" */
	while (i < argc && strcmp(argv[i], "--")) {
		int is_errno = !strcmp(argv[i], "--errno");

		if (is_errno || !strcmp(argv[i], "--landlock-abi")) {
			if (i + 1 >= argc || parse_ull(argv[i + 1], &e) < 0 || e < 1 ||
			    e > (is_errno ? 4095 : INT_MAX))
				usage();
			*(is_errno ? &err : &abi) = (int)e;
			i += 2;
		} else if (!rules && strncmp(argv[i], "--", 2)) {
			rules = strdup(argv[i]);
			if (!rules)
				return 1;
			i++;
		} else {
			usage();
		}
	}
	if (i + 1 >= argc || (!rules && !abi))
		usage();
	/* first, and checked: the filters need it, and a test must know
	 * the handler runs with it */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		perror("deny-syscalls: no_new_privs");
		return 1;
	}
	/* both filters are built (and the rules checked) before anything
	 * is forked or loaded */
	if (rules) {
		ctx = seccomp_init(SCMP_ACT_ALLOW);
		if (!ctx) {
			fprintf(stderr, "deny-syscalls: seccomp_init failed\n");
			return 1;
		}
		for (tok = strtok_r(rules, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (add_rule(ctx, err, tok) < 0)
				return 2;
	}
	if (abi) {
		abi_ctx = abi_filter();
		if (!abi_ctx)
			return 1;
		/* before the filter: the supervisor must not carry it */
		sock = start_supervisor(argc, argv, abi);
		if (sock < 0)
			return 1;
		rc = seccomp_load(abi_ctx);
		if (rc < 0) {
			fprintf(stderr, "deny-syscalls: seccomp_load (notify): %s\n", strerror(-rc));
			return 1;	/* the supervisor reads EOF and exits */
		}
		listener = seccomp_notify_fd(abi_ctx);
		if (listener < 0 || send_fd(sock, listener) < 0) {
			fprintf(stderr, "deny-syscalls: cannot hand the listener to the supervisor\n");
			return 1;
		}
		/* PROGRAM must not hold the listener: it could answer itself */
		close(listener);
		close(sock);
		seccomp_release(abi_ctx);
	}
	if (ctx) {
		rc = seccomp_load(ctx);
		if (rc < 0) {
			fprintf(stderr, "deny-syscalls: seccomp_load: %s\n", strerror(-rc));
			return 1;
		}
		seccomp_release(ctx);
	}
	free(rules);
	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "deny-syscalls: %s: %s\n", argv[i + 1], strerror(errno));
	return 127;
}
