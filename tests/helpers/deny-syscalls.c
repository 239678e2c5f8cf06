/* deny-syscalls: run a program under a seccomp filter that makes some
 * system calls fail, so the tests can take one sandbox layer away from
 * the handler (and everything it starts) and see it fail closed.
 *
 *   deny-syscalls [--errno N] RULE[,RULE...] -- PROGRAM [ARGS...]
 *
 * Every other call is allowed. A RULE is
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
 * libseccomp does not know. no_new_privs is set first, then the filter is
 * loaded and PROGRAM exec'd (same process, so LISTEN_PID stays right). */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif

static void usage(void)
{
	fprintf(stderr, "usage: deny-syscalls [--errno N] NAME[,NAME...] -- PROGRAM [ARGS...]\n"
		"  NAME: a syscall name or number, NAME:ARG=VALUE, NAME:ARG!=VALUE,\n"
		"        NAME:ARG&MASK, or clone-newuser\n");
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

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	unsigned long long e;
	int err = ENOSYS, i = 1, rc;
	char *rules, *tok, *save = NULL;

	if (i + 1 < argc && !strcmp(argv[i], "--errno")) {
		if (parse_ull(argv[i + 1], &e) < 0 || e < 1 || e > 4095)
			usage();
		err = (int)e;
		i += 2;
	}
	if (i + 2 >= argc || strcmp(argv[i + 1], "--"))
		usage();
	rules = strdup(argv[i]);
	if (!rules)
		return 1;
	/* first, and checked: the filter needs it, and a test must know
	 * the handler runs with it */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		perror("deny-syscalls: no_new_privs");
		return 1;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "deny-syscalls: seccomp_init failed\n");
		return 1;
	}
	for (tok = strtok_r(rules, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (add_rule(ctx, err, tok) < 0)
			return 2;
	rc = seccomp_load(ctx);
	if (rc < 0) {
		fprintf(stderr, "deny-syscalls: seccomp_load: %s\n", strerror(-rc));
		return 1;
	}
	seccomp_release(ctx);
	free(rules);
	execvp(argv[i + 2], argv + i + 2);
	fprintf(stderr, "deny-syscalls: %s: %s\n", argv[i + 2], strerror(errno));
	return 127;
}
