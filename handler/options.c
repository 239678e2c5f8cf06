/* The handler's options: the table, its parser (environment, then
 * flags) and the --help generated from it (options.h). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "handler/handler.h"
#include "handler/options.h"

struct options opt = {
	.sandbox = SBX_NATIVE,
	.timeout_s = 240,
	.max_stdout_bytes = 1048576,
	.max_stderr_bytes = 65536,
	.max_request_bytes = 8388608,
	.max_blocks = 16,
	.max_skipped_fences = 16,
	.max_header_bytes = 16384,
	.header_timeout_s = 10,
	.body_timeout_s = 30,
	.keepalive_s = 15,
	.memory_max = 2ULL << 30,
	.run_memory_max = ULLONG_MAX,
	.address_space_max = 256ULL << 30,
	.workdir_bytes = 256ULL << 20,
	.workdir_inodes = 65536,
	.max_procs = 256,
	.max_file_bytes = 16ULL << 30,
	.max_open_files = 1024,
	.max_concurrent = 4,
	.max_tap_bytes = ULLONG_MAX,
	.shm_bytes = 64ULL << 20,
	.slot_uid_base = 2147352576ULL,	/* 0x7ffe0000 */
	.healthz_cache_s = 1,
	.max_input_files = 16,
	.max_input_file_bytes = 4ULL << 20,
	.max_input_bytes = 6ULL << 20,
	.max_artifacts = 16,
	.max_artifact_bytes = 4ULL << 20,
	.environment_verify_s = 3600,
};

enum opt_kind { K_FLAG, K_STR, K_SIZE, K_SECONDS, K_MODE };

struct opt_def {
	const char *name;
	enum opt_kind kind;
	void *ptr;
	unsigned long long min, max;	/* K_SIZE bounds; K_SECONDS: max ZERO_OK lets 0 (off) through */
	const char *arg;	/* the value's name in --help, "" for a flag */
	const char *help;	/* one line, or more separated by \n; usage() prints it */
};
#define ZERO_OK 1

#define SZ(x) ((unsigned long long)(x))
static const struct opt_def opt_defs[] = {
	{ "api-key-file", K_STR, &opt.api_key_file, 0, 0, "FILE",
	  "bearer key (default $CREDENTIALS_DIRECTORY/api-key)" },
	{ "no-auth", K_FLAG, &opt.no_auth, 0, 0, "",
	  "serve without a key (explicit)" },
	{ "allowed-programs", K_STR, &opt.allowed_programs, 0, 0, "LIST",
	  "e.g. python,bash,node (empty: execution disabled)" },
	{ "interpreters", K_STR, &opt.interpreters, 0, 0, "FILE",
	  "JSON registry merged over the built-ins" },
	{ "sandbox", K_MODE, &opt.sandbox, 0, 0, "MODE",
	  "native (default), besteffort, off" },
	{ "timeout", K_SECONDS, &opt.timeout_s, 0, 0, "S",
	  "wall time of a run (240)" },
	{ "max-stdout-bytes", K_SIZE, &opt.max_stdout_bytes, 1, SZ(1) << 32, "N",
	  "kept stdout of the last block (1M)" },
	{ "max-stderr-bytes", K_SIZE, &opt.max_stderr_bytes, 0, SZ(1) << 30, "N",
	  "kept stderr per block (64K)" },
	{ "max-request-bytes", K_SIZE, &opt.max_request_bytes, 1, SZ(1) << 32, "N",
	  "request body (8M)" },
	{ "max-blocks", K_SIZE, &opt.max_blocks, 1, 256, "N",
	  "runnable blocks per request (16)" },
	{ "max-skipped-fences", K_SIZE, &opt.max_skipped_fences, 0, 4096, "N",
	  "skipped fences an answer lists (16)" },
	{ "max-header-bytes", K_SIZE, &opt.max_header_bytes, 256, SZ(1) << 20, "N",
	  "request line + headers (16K)" },
	{ "header-timeout", K_SECONDS, &opt.header_timeout_s, 0, 0, "S",
	  "headers must arrive within (10)" },
	{ "body-timeout", K_SECONDS, &opt.body_timeout_s, 0, 0, "S",
	  "body must arrive within (30)" },
	{ "keepalive-interval", K_SECONDS, &opt.keepalive_s, 0, 0, "S",
	  "whitespace while a run is quiet (15)" },
	{ "sandbox-network", K_FLAG, &opt.sandbox_network, 0, 0, "",
	  "give blocks the handler's network (off)" },
	{ "share-netns", K_FLAG, &opt.share_netns, 0, 0, "",
	  "blocks share the handler's empty network namespace\n(off: a namespace each)" },
	{ "memory-max", K_SIZE, &opt.memory_max, SZ(16) << 20, SZ(1) << 50, "N",
	  "RLIMIT_DATA per block (2G)" },
	{ "run-memory-max", K_SIZE, &opt.run_memory_max, 0, SZ(1) << 50, "N",
	  "memory.max of each run's own cgroup, where the\nhandler may make one (--memory-max / 2;\n0: none)" },
	{ "address-space-max", K_SIZE, &opt.address_space_max, SZ(64) << 20, SZ(1) << 56, "N",
	  "RLIMIT_AS per block (256G)" },
	{ "workdir-bytes", K_SIZE, &opt.workdir_bytes, SZ(64) << 10, SZ(1) << 40, "N",
	  "the run's workdir tmpfs (256M)" },
	{ "workdir-inodes", K_SIZE, &opt.workdir_inodes, 64, SZ(1) << 32, "N",
	  "files in the workdir (65536)" },
	{ "max-procs", K_SIZE, &opt.max_procs, 1, 1 << 20, "N",
	  "RLIMIT_NPROC per block (256)" },
	{ "max-file-bytes", K_SIZE, &opt.max_file_bytes, 1, SZ(1) << 50, "N",
	  "RLIMIT_FSIZE per block (16G)" },
	{ "max-open-files", K_SIZE, &opt.max_open_files, 16, 1 << 20, "N",
	  "RLIMIT_NOFILE per block (1024)" },
	{ "max-cpu-seconds", K_SECONDS, &opt.max_cpu_seconds, 0, 0, "S",
	  "RLIMIT_CPU per block process, at most the\ndefault (the run's timeout rounded up + 1)" },
	{ "max-concurrent", K_SIZE, &opt.max_concurrent, 1, 4096, "N",
	  "concurrent runs across instances (4)" },
	{ "runtime-dir", K_STR, &opt.runtime_dir, 0, 0, "DIR",
	  "slot files ($RUNTIME_DIRECTORY or /run/codellm)" },
	{ "debug", K_FLAG, &opt.debug, 0, 0, "",
	  "serve the debug routes and page (loopback only)" },
	{ "max-tap-bytes", K_SIZE, &opt.max_tap_bytes, 0, SZ(1) << 32, "N",
	  "kept per pipeline edge by /debug/run-pipeline\n(= --max-stdout-bytes)" },
	{ "shm-bytes", K_SIZE, &opt.shm_bytes, SZ(64) << 10, SZ(1) << 40, "N",
	  "each block's /dev/shm and SysV shared memory (64M)" },
	{ "slot-uid-base", K_SIZE, &opt.slot_uid_base, 0, SZ(4294967294) - 4097, "UID",
	  "a root handler runs slot N's blocks as UID+N\n(2147352576; 0: one uid for all runs)" },
	{ "healthz-cache", K_SECONDS, &opt.healthz_cache_s, 0, ZERO_OK, "S",
	  "/healthz reuses its sandbox check this long (1; 0: off)" },
	{ "max-input-files", K_SIZE, &opt.max_input_files, 0, 4096, "N",
	  "file and image parts per request (16; 0: none)" },
	{ "max-input-file-bytes", K_SIZE, &opt.max_input_file_bytes, 1, SZ(1) << 40, "N",
	  "one input file, decoded (4M)" },
	{ "max-input-bytes", K_SIZE, &opt.max_input_bytes, 1, SZ(1) << 40, "N",
	  "all input files together, decoded (6M; at most\n--max-request-bytes and --workdir-bytes)" },
	{ "max-artifacts", K_SIZE, &opt.max_artifacts, 0, 4096, "N",
	  "files of /work/out an answer carries (16; 0: none)" },
	{ "max-artifact-bytes", K_SIZE, &opt.max_artifact_bytes, 0, SZ(1) << 32, "N",
	  "their bytes together, before base64 (4M)" },
	{ "environments", K_STR, &opt.environments, 0, 0, "DIR",
	  "each subdirectory with a manifest is a model whose\nblocks get its trees (none)" },
	{ "environment-verify", K_SECONDS, &opt.environment_verify_s, 0, ZERO_OK, "S",
	  "an environment's full check is trusted this long\n(3600; 0: every request)" },
};
#define N_OPTS (sizeof opt_defs / sizeof opt_defs[0])

char config_error[512];

/* Sizes take an optional K, M, G or T suffix (powers of 1024). */
static int parse_size(const char *s, unsigned long long *ret)
{
	unsigned long long v, mult = 1;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'K': case 'k': mult = SZ(1) << 10; end++; break;
	case 'M': case 'm': mult = SZ(1) << 20; end++; break;
	case 'G': case 'g': mult = SZ(1) << 30; end++; break;
	case 'T': case 't': mult = SZ(1) << 40; end++; break;
	}
	if (*end == 'i' && mult > 1 && end[1] == 'B')
		end += 2;
	else if (*end == 'B' && mult > 1)
		end++;
	if (*end || __builtin_mul_overflow(v, mult, ret))
		return -1;
	return 0;
}

static int set_option(const struct opt_def *d, const char *val, const char *from)
{
	char *end;
	double secs;

	switch (d->kind) {
	case K_FLAG:
		if (!val || !strcmp(val, "1") || !strcasecmp(val, "yes") ||
		    !strcasecmp(val, "true"))
			*(int *)d->ptr = 1;
		else if (!strcmp(val, "0") || !strcasecmp(val, "no") ||
			 !strcasecmp(val, "false"))
			*(int *)d->ptr = 0;
		else
			goto bad;
		return 0;
	case K_STR:
		free(*(char **)d->ptr);
		*(char **)d->ptr = strdup(val);
		return *(char **)d->ptr ? 0 : -1;
	case K_SIZE: {
		unsigned long long v;

		if (parse_size(val, &v) < 0 || v < d->min || v > d->max)
			goto bad;
		*(unsigned long long *)d->ptr = v;
		return 0;
	}
	case K_SECONDS:
		errno = 0;
		secs = strtod(val, &end);
		if (errno || *end || end == val || !isfinite(secs) || secs < 0 ||
		    (secs == 0 && d->max != ZERO_OK) || secs > 86400)
			goto bad;
		*(double *)d->ptr = secs;
		return 0;
	case K_MODE:
		if (!strcmp(val, "native"))
			opt.sandbox = SBX_NATIVE;
		else if (!strcmp(val, "besteffort"))
			opt.sandbox = SBX_BESTEFFORT;
		else if (!strcmp(val, "off"))
			opt.sandbox = SBX_OFF;
		else
			goto bad;
		return 0;
	}
bad:
	if (config_error[0])
		return -1;	/* the first error is the one to report */
	if (d->kind == K_SIZE)
		snprintf(config_error, sizeof config_error,
			 "%s --%s: \"%s\" is not a size between %llu and %llu",
			 from, d->name, val ? val : "", d->min, d->max);
	else
		snprintf(config_error, sizeof config_error,
			 "%s --%s: invalid value \"%s\"", from, d->name,
			 val ? val : "");
	return -1;
}

/* The commands, beside the options in --help. */
static const struct { const char *name, *arg, *help; } cmd_defs[] = {
	{ "probe", "", "print what this host allows; exit 1 if native cannot run" },
	{ "check", "FILE...", "dry-run fleet role notes (nothing runs); exit 1 if flagged" },
	{ "env-digest", "TREE", "print the digest of an environment's tree (make env)" },
};

static void usage_line(FILE *f, const char *name, const char *arg, const char *help)
{
	int n = fprintf(f, "  --%s%s%s", name, *arg ? " " : "", arg);

	fprintf(f, "%*s", n < 28 ? 28 - n : 1, "");
	for (; *help; help++)
		if (*help == '\n')
			fprintf(f, "\n%28s", "");
		else
			fputc(*help, f);
	fputc('\n', f);
}

/* --help, generated from the option table (tests/lint-man checks the
 * man page and README against it). */
void usage(FILE *f)
{
	fputs("Usage: codellm-handler [OPTIONS]\n"
	      "       codellm-handler --version | --help\n"
	      "Serves one OpenAI chat-completions request on the connection systemd\n"
	      "passes (fd 3 with LISTEN_FDS, or stdin/stdout), then exits.\n\n", f);
	for (size_t i = 0; i < N_OPTS; i++)
		usage_line(f, opt_defs[i].name, opt_defs[i].arg, opt_defs[i].help);
	for (size_t i = 0; i < sizeof cmd_defs / sizeof cmd_defs[0]; i++)
		usage_line(f, cmd_defs[i].name, cmd_defs[i].arg, cmd_defs[i].help);
	fputs("Each option may also be set as CODELLM_<NAME> in the environment\n"
	      "(e.g. CODELLM_MAX_BLOCKS=4); a flag wins. See codellm-handler(8).\n", f);
}

int parse_options(int argc, char **argv, int *cmd)
{
	struct option lopts[N_OPTS + 6];
	int c, idx, bad = 0;

	/* environment first, flags override */
	for (size_t i = 0; i < N_OPTS; i++) {
		char env[64], *p;
		const char *v;

		snprintf(env, sizeof env, "CODELLM_%s", opt_defs[i].name);
		for (p = env; *p; p++)
			*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
		v = getenv(env);
		if (v && set_option(&opt_defs[i], v, env) < 0)
			bad = 1;
	}
	for (size_t i = 0; i < N_OPTS; i++)
		lopts[i] = (struct option){ opt_defs[i].name,
			opt_defs[i].kind == K_FLAG ? no_argument : required_argument,
			NULL, (int)i };
	lopts[N_OPTS] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[N_OPTS + 1] = (struct option){ "version", no_argument, NULL, 'V' };
	lopts[N_OPTS + 2] = (struct option){ "probe", no_argument, NULL, 'P' };
	lopts[N_OPTS + 3] = (struct option){ "check", no_argument, NULL, 'C' };
	lopts[N_OPTS + 4] = (struct option){ "env-digest", no_argument, NULL, 'D' };
	lopts[N_OPTS + 5] = (struct option){ 0 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lopts, &idx)) != -1) {
		if (c == 'h') {
			*cmd = CMD_HELP;
		} else if (c == 'V') {
			*cmd = CMD_VERSION;
		} else if (c == 'P') {
			*cmd = CMD_PROBE;
		} else if (c == 'C') {
			*cmd = CMD_CHECK;
		} else if (c == 'D') {
			*cmd = CMD_ENV_DIGEST;
		} else if (c >= 0 && (size_t)c < N_OPTS) {
			if (set_option(&opt_defs[c], optarg, "option") < 0)
				bad = 1;
		} else if (!bad) {
			snprintf(config_error, sizeof config_error,
				 "unknown or incomplete option \"%s\"",
				 argv[optind - 1]);
			bad = 1;
		}
	}
	/* the whole command line is read even after an error, so --probe,
	 * --help or --version later on it still decide what to do; only
	 * --check and --env-digest take arguments (from optind on:
	 * getopt_long moves them behind the options) */
	if (optind < argc && !bad && *cmd != CMD_CHECK && *cmd != CMD_ENV_DIGEST) {
		snprintf(config_error, sizeof config_error,
			 "unexpected argument \"%s\"", argv[optind]);
		bad = 1;
	}
	if (opt.max_tap_bytes == ULLONG_MAX)
		opt.max_tap_bytes = opt.max_stdout_bytes;
	return bad ? -1 : 0;
}

/* What a request may make the handler run, hold and echo. */
const struct req_limits *limits(void)
{
	static struct req_limits lim;

	unsigned long long total = opt.max_input_bytes;

	lim.max_blocks = (size_t)opt.max_blocks;
	lim.max_skipped = (size_t)opt.max_skipped_fences;
	/* the files ride in the body and land in the workdir: the
	 * smaller bound wins */
	if (total > opt.max_request_bytes)
		total = opt.max_request_bytes;
	if (total > opt.workdir_bytes)
		total = opt.workdir_bytes;
	lim.max_files = (size_t)opt.max_input_files;
	lim.max_files_bytes = (size_t)total;
	lim.max_file_bytes = (size_t)(opt.max_input_file_bytes < total ?
				      opt.max_input_file_bytes : total);
	return &lim;
}

/* The directory of the run slots and the files instances share: found
 * (and made) once per process, as a request asks for it twice. */
int runtime_dir(char *dir, size_t len)
{
	static char found[PATH_MAX];
	static int rc = 1;

	if (rc > 0)
		rc = sbx_slot_dir(opt.runtime_dir, found, sizeof found);
	/* the path also when it is unusable: the caller says which */
	if ((size_t)snprintf(dir, len, "%s", found) >= len && rc == 0)
		return -ENAMETOOLONG;
	return rc;
}
