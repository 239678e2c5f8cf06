/* codellm-handler: one HTTP request on one connection, then exit.
 *
 * systemd (Accept=yes) or systemd-socket-activate starts one process per
 * connection, the connection arriving as fd 3 (LISTEN_FDS) or as
 * stdin/stdout (inetd). The request's life is a short list of checked
 * steps: read, route, authenticate, parse, run, answer. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "http/conn.h"
#include "http/debug-page.h"
#include "http/http.h"
#include "http/reader.h"
#include "http/reply.h"
#include "http/target.h"
#include "json/agent.h"
#include "json/audit.h"
#include "json/debug.h"
#include "json/jstr.h"
#include "json/registry.h"
#include "json/request.h"
#include "json/response.h"
#include "json/rolecheck.h"
#include "sandbox/run.h"
#include "sandbox/sandbox.h"

#ifndef CODELLM_VERSION
#define CODELLM_VERSION "0.1.0"
#endif

/* ---- options ---------------------------------------------------------- */

struct options {
	char *api_key_file;
	int no_auth;
	char *allowed_programs;
	char *interpreters;
	enum sbx_mode sandbox;
	double timeout_s;
	unsigned long long max_stdout_bytes;
	unsigned long long max_stderr_bytes;
	unsigned long long max_request_bytes;
	unsigned long long max_blocks;
	unsigned long long max_skipped_fences;
	unsigned long long max_header_bytes;
	double header_timeout_s;
	double body_timeout_s;
	double keepalive_s;
	int sandbox_network;
	unsigned long long memory_max;
	unsigned long long address_space_max;
	unsigned long long workdir_bytes;
	unsigned long long workdir_inodes;
	unsigned long long max_procs;
	unsigned long long max_file_bytes;
	unsigned long long max_open_files;
	double max_cpu_seconds;			/* 0: from the run's timeout */
	unsigned long long max_concurrent;
	char *runtime_dir;
	int debug;
	unsigned long long max_tap_bytes;	/* ULLONG_MAX: = max_stdout_bytes */
	unsigned long long shm_bytes;
	unsigned long long slot_uid_base;	/* 0: runs of a root handler share a uid */
	double healthz_cache_s;	/* 0: every /healthz checks the sandbox */
};

static struct options opt = {
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
	{ "memory-max", K_SIZE, &opt.memory_max, SZ(16) << 20, SZ(1) << 50, "N",
	  "RLIMIT_DATA per block (2G)" },
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
};
#define N_OPTS (sizeof opt_defs / sizeof opt_defs[0])

static char config_error[512];

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
static void usage(FILE *f)
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

enum { CMD_SERVE, CMD_HELP, CMD_VERSION, CMD_PROBE, CMD_CHECK };

static int parse_options(int argc, char **argv, int *cmd)
{
	struct option lopts[N_OPTS + 5];
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
	lopts[N_OPTS + 4] = (struct option){ 0 };
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
	 * --check takes arguments (the files, from optind on: getopt_long
	 * moves them behind the options) */
	if (optind < argc && !bad && *cmd != CMD_CHECK) {
		snprintf(config_error, sizeof config_error,
			 "unexpected argument \"%s\"", argv[optind]);
		bad = 1;
	}
	if (opt.max_tap_bytes == ULLONG_MAX)
		opt.max_tap_bytes = opt.max_stdout_bytes;
	return bad ? -1 : 0;
}

/* ---- the request -------------------------------------------------------- */

struct ctx {
	struct conn c;
	struct registry reg;
	char id[48];
	long t_start;
	char *key;		/* configured bearer key, NULL when none */
	char key_why[256];	/* why there is none */
	char *head;		/* request line + headers (+ early body bytes) */
	size_t head_used;
	struct http_request hr;
	struct http_framing fr;	/* the body's, from the head */
	char path[1024];
	char path_log[200];	/* path, audit_text(): for log lines */
	char *body;
	size_t body_len;
	int unread;		/* bytes after the request were left unread */
	int slot_fd;		/* the run slot held, or -1 */
	int slot;		/* its index, or -1 */
	struct audit au;	/* the journal record, sent at exit */
	const char *ctype;	/* Content-Type of the answer, JSON when NULL */
	/* a stream (SSE) in progress */
	const struct resp_run *st_rr;
	char st_pend[4];	/* the start of a UTF-8 sequence still arriving */
	size_t st_npend;
	long st_last;		/* when the last event went out */
	/* a debug route's run (SPEC §8) instead of a chat completion */
	enum { RUN_CHAT, RUN_DEBUG_BLOCK, RUN_DEBUG_PIPELINE } run_kind;
	size_t dbg_index;	/* run-block: the block's index in the body */
	const struct route *route;	/* the request's route, once routed */
	int head_bytes;		/* the head's length in head[] */
	int request_read;	/* the whole request was read */
	int exit;		/* the process's exit status */
};

static long write_deadline(struct ctx *x)
{
	return conn_now_ms() + (long)(opt.body_timeout_s * 1000);
}

/* Response head; Content-Length when the body is known, otherwise the
 * body runs to the close (run mode's early headers). after_run: 1 says
 * x-should-retry: false (code ran, or retrying cannot help), 2 says
 * x-should-retry: true (the server was short of memory). */
static void send_head(struct ctx *x, int status, const char *extra,
		      long content_length, int after_run)
{
	const struct http_reply r = {
		.status = status, .server = "codellm/" CODELLM_VERSION,
		.content_type = x->ctype, .request_id = x->id, .retry = after_run,
		.extra = extra, .content_length = content_length,
	};

	http_reply_head(&x->c, &r, write_deadline(x));
	if (!x->au.status)
		x->au.status = status;
}

static void respond(struct ctx *x, int status, const char *extra,
		    const struct jbuf *body, int after_run)
{
	send_head(x, status, extra, (long)body->len, after_run);
	conn_write(&x->c, body->p, body->len, write_deadline(x));
}

/* Every refusal the handler answers itself, with its status, type and
 * code in one table (json/ reports its own in struct req_error). */
enum refusal {
	REF_BAD_REQUEST,
	REF_INCOMPLETE,
	REF_TIMEOUT,
	REF_LENGTH_REQUIRED,
	REF_TOO_LARGE,
	REF_HEADERS_TOO_LARGE,
	REF_TE_UNSUPPORTED,
	REF_BAD_KEY,
	REF_CROSS_ORIGIN,
	REF_CROSS_SITE,
	REF_HOST,
	REF_LOOPBACK,
	REF_NOT_FOUND,
	REF_MODEL_NOT_FOUND,
	REF_METHOD,
	REF_MEDIA_TYPE,
	REF_SLOTS_BUSY,
	REF_NO_KEY,
	REF_MISCONFIGURED,
	REF_SANDBOX,
	REF_WORKDIR,
	REF_OVERLOADED,
	REF_ANSWER_OOM,
};

static const struct { int status; const char *type, *code; } refusals[] = {
	[REF_BAD_REQUEST] = { 400, "invalid_request_error", "bad_request" },
	[REF_INCOMPLETE] = { 400, "invalid_request_error", "incomplete_request" },
	[REF_TIMEOUT] = { 408, "invalid_request_error", "request_timeout" },
	[REF_LENGTH_REQUIRED] = { 411, "invalid_request_error", "length_required" },
	[REF_TOO_LARGE] = { 413, "invalid_request_error", "request_too_large" },
	[REF_HEADERS_TOO_LARGE] = { 431, "invalid_request_error", "headers_too_large" },
	[REF_TE_UNSUPPORTED] = { 501, "invalid_request_error", "unsupported_transfer_coding" },
	[REF_BAD_KEY] = { 401, "invalid_request_error", "invalid_api_key" },
	[REF_CROSS_ORIGIN] = { 403, "permission_error", "cross_origin_request" },
	[REF_CROSS_SITE] = { 403, "permission_error", "cross_site_request" },
	[REF_HOST] = { 403, "permission_error", "host_not_allowed" },
	[REF_LOOPBACK] = { 403, "permission_error", "loopback_only" },
	[REF_NOT_FOUND] = { 404, "invalid_request_error", "not_found" },
	[REF_MODEL_NOT_FOUND] = { 404, "invalid_request_error", "model_not_found" },
	[REF_METHOD] = { 405, "invalid_request_error", "method_not_allowed" },
	[REF_MEDIA_TYPE] = { 415, "invalid_request_error", "unsupported_media_type" },
	[REF_SLOTS_BUSY] = { 429, "rate_limit_error", "rate_limit_exceeded" },
	[REF_NO_KEY] = { 503, "server_error", "api_key_not_configured" },
	[REF_MISCONFIGURED] = { 503, "server_error", "server_misconfigured" },
	[REF_SANDBOX] = { 503, "server_error", "sandbox_unavailable" },
	[REF_WORKDIR] = { 503, "server_error", "workdir_unavailable" },
	[REF_OVERLOADED] = { 503, "server_error", "server_overloaded" },
	[REF_ANSWER_OOM] = { 500, "server_error", "out_of_memory" },
};

/* What a refusal says of retrying (send_head's after_run): every 501
 * and 503 says x-should-retry: false (a retry cannot help), but
 * server_overloaded, which says true (the server was short of memory;
 * nothing ran); other refusals leave it to the client. */
static int retry_rule(int status, const char *code)
{
	if (code && !strcmp(code, "server_overloaded"))
		return 2;
	return status == 503 || status == 501;
}

/* A refusal: the OpenAI error object. */
__attribute__((format(printf, 4, 5)))
static int refuse(struct ctx *x, enum refusal why, const char *extra, const char *fmt, ...)
{
	const int status = refusals[why].status;
	struct jbuf b = {0};
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	resp_error(&b, msg, refusals[why].type, NULL, refusals[why].code);
	respond(x, status, extra, &b, retry_rule(status, refusals[why].code));
	jbuf_free(&b);
	return status;
}

static int fail_req(struct ctx *x, const struct req_error *e)
{
	struct jbuf b = {0};

	resp_error(&b, e->message, e->type, e->param, e->code);
	respond(x, e->status, NULL, &b, retry_rule(e->status, e->code));
	jbuf_free(&b);
	return e->status;
}

/* A request its parser refused: the error object, and the journal
 * line an operator needs when the refusal is the server's setting. */
static int refuse_request(struct ctx *x, const struct req_error *e)
{
	if (e->status == 403 && e->code && !strcmp(e->code, "execution_disabled"))
		fprintf(stderr, "codellm: %s: code execution is disabled: "
			"--allowed-programs is empty\n", x->id);
	return fail_req(x, e);
}

static void make_id(struct ctx *x)
{
	unsigned char r[12];
	char *p;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
		long t = conn_now_ms() ^ (long)getpid() << 20;

		memcpy(r, &t, sizeof t);
		memset(r + sizeof t, 0, sizeof r - sizeof t);
	}
	p = x->id + sprintf(x->id, "chatcmpl-");
	for (size_t i = 0; i < sizeof r; i++)
		p += sprintf(p, "%02x", r[i]);
}

static struct http_limits read_limits(const struct ctx *x)
{
	return (struct http_limits){
		.max_header_bytes = opt.max_header_bytes,
		.max_body_bytes = opt.max_request_bytes,
		.header_deadline_ms = x->t_start + (long)(opt.header_timeout_s * 1000),
		.body_timeout_ms = (long)(opt.body_timeout_s * 1000),
		.write_timeout_ms = (long)(opt.body_timeout_s * 1000),
	};
}

enum read_step { READ_HEAD, READ_FRAMING, READ_BODY };

/* The reader's results as answers, one line each: (status, type,
 * code, message). -1 always: answered, or nobody to answer. */
static int refuse_read(struct ctx *x, enum read_step step, int rc)
{

	switch (rc) {
	case HTTP_R_NOMEM:
		refuse(x, REF_OVERLOADED, NULL,
		     "the server is out of memory reading this request; retry");
		break;
	case HTTP_R_TIMEOUT:
		if (step == READ_HEAD)
			refuse(x, REF_TIMEOUT, NULL,
			     "the request headers did not arrive within %g s (--header-timeout)",
			     opt.header_timeout_s);
		else
			refuse(x, REF_TIMEOUT, NULL,
			     "the request body did not arrive within %g s (--body-timeout)",
			     opt.body_timeout_s);
		break;
	case HTTP_R_EOF:
		refuse(x, REF_INCOMPLETE, NULL, "the connection ended inside the %s",
		     step == READ_HEAD ? "request headers" : "request body");
		break;
	case HTTP_R_BAD:
		refuse(x, REF_BAD_REQUEST, NULL, "%s",
		     step == READ_HEAD ? "malformed HTTP request line or header" :
		     step == READ_FRAMING ?
		     "invalid message framing (Content-Length, Transfer-Encoding or Expect)" :
		     "malformed chunked body");
		break;
	case HTTP_R_TOO_MANY:
		refuse(x, REF_HEADERS_TOO_LARGE, NULL, "more than %d header fields",
		     HTTP_MAX_HEADERS);
		break;
	case HTTP_R_TOO_LARGE:
		if (step == READ_HEAD)
			refuse(x, REF_HEADERS_TOO_LARGE, NULL,
			     "request line and headers exceed %llu bytes (--max-header-bytes)",
			     opt.max_header_bytes);
		else if (step == READ_FRAMING)
			refuse(x, REF_TOO_LARGE, NULL,
			     "request body of %llu bytes exceeds %llu bytes (--max-request-bytes)",
			     (unsigned long long)x->fr.length, opt.max_request_bytes);
		else
			refuse(x, REF_TOO_LARGE, NULL,
			     "request body exceeds %llu bytes (--max-request-bytes)",
			     opt.max_request_bytes);
		break;
	case HTTP_R_LENGTH_REQUIRED:
		refuse(x, REF_LENGTH_REQUIRED, NULL,
		     "POST needs Content-Length or Transfer-Encoding: chunked");
		break;
	case HTTP_R_TE_UNSUPPORTED:
		refuse(x, REF_TE_UNSUPPORTED, NULL,
		     "only the chunked transfer coding is supported");
		break;
	}
	return -1;	/* HTTP_R_GONE: nobody to answer */
}

/* Step 1: request line and headers, within --header-timeout of the
 * connection's start and --max-header-bytes. Returns the head's length,
 * or -1 (answered, or nobody to answer). */
static int read_head(struct ctx *x)
{
	const struct http_limits l = read_limits(x);
	size_t len = 0;
	int rc = http_read_head(&x->c, &l, &x->head, &x->head_used, &x->hr, &len);

	return rc ? refuse_read(x, READ_HEAD, rc) : (int)len;
}

/* Step 2: how the body is framed, from the head alone: refused
 * before routing (a body too large by its Content-Length is refused
 * whoever sends it, wherever). */
static int check_framing(struct ctx *x, int is_post)
{
	const struct http_limits l = read_limits(x);
	int rc = http_check_framing(&x->hr, &l, is_post, &x->fr);

	return rc ? refuse_read(x, READ_FRAMING, rc) : 0;
}

/* Step 5: the body, once the request may be served, within
 * --body-timeout and --max-request-bytes. */
static int read_body(struct ctx *x, size_t head_bytes)
{
	const struct http_limits l = read_limits(x);
	struct http_body b = {0};
	int rc = http_read_body(&x->c, &l, x->hr.minor_version, &x->fr, x->head + head_bytes,
				x->head_used - head_bytes, &b);

	x->body = b.p;
	x->body_len = b.len;
	x->unread = b.unread;
	return rc ? refuse_read(x, READ_BODY, rc) : 0;
}

/* Step 4: Authorization: Bearer KEY, compared in constant time. */
static int authenticate(struct ctx *x)
{
	if (opt.no_auth)
		return 0;
	if (!x->key) {
		fprintf(stderr, "codellm: %s: refusing %s: no API key configured (%s); "
			"set --api-key-file or LoadCredential=api-key, or pass --no-auth\n",
			x->id, x->path_log, x->key_why);
		return refuse(x, REF_NO_KEY, NULL,
			      "this server has no API key configured; see the server's journal");
	}
	if (http_bearer_matches(&x->hr, x->key))
		return 0;
	return refuse(x, REF_BAD_KEY, "WWW-Authenticate: Bearer\r\n",
		      "missing or incorrect API key: send Authorization: Bearer KEY");
}

/* After authentication: neither the key nor the bearer the client
 * presented (in the head buffer, which x->head owns) stays in memory. */
static void forget_key(struct ctx *x)
{
	size_t count = 0;
	const struct http_header *h = x->head ?
		http_find_header(&x->hr, "authorization", &count) : NULL;

	if (h && h->value >= x->head && h->value + h->value_len <= x->head + x->head_used)
		explicit_bzero(x->head + (h->value - x->head), h->value_len);
	if (x->key) {
		explicit_bzero(x->key, strlen(x->key));
		free(x->key);
		x->key = NULL;
	}
}

static void load_key(struct ctx *x)
{
	char path[PATH_MAX], buf[4097];
	const char *file = opt.api_key_file;
	const char *cred = getenv("CREDENTIALS_DIRECTORY");
	size_t len = 0, start = 0;
	ssize_t r;
	int fd;

	if (!file) {
		if (!cred) {
			snprintf(x->key_why, sizeof x->key_why,
				 "no --api-key-file and no $CREDENTIALS_DIRECTORY");
			return;
		}
		snprintf(path, sizeof path, "%s/api-key", cred);
		file = path;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(x->key_why, sizeof x->key_why, "%.160s: %s", file, strerror(errno));
		return;
	}
	while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	while (start < len && isspace((unsigned char)buf[start]))
		start++;
	while (len > start && isspace((unsigned char)buf[len - 1]))
		buf[--len] = '\0';
	if (len == start || strlen(buf + start) != len - start) {
		snprintf(x->key_why, sizeof x->key_why, "%.160s is empty", file);
		explicit_bzero(buf, sizeof buf);
		return;
	}
	x->key = strdup(buf + start);
	explicit_bzero(buf, sizeof buf);
}

/* ---- routes ------------------------------------------------------------ */

static int method_is(const struct ctx *x, const char *m)
{
	return x->hr.method_len == strlen(m) && !memcmp(x->hr.method, m, x->hr.method_len);
}

/* A root handler's run takes its slot's own uid (THREATS.md #17); the
 * checks without a slot (/healthz, --probe) take the one after them. */
static void sandbox_config(struct sbx_config *c, int slot)
{
	memset(c, 0, sizeof *c);
	c->run_uid = (uid_t)-1;
	if (geteuid() == 0 && opt.slot_uid_base)
		c->run_uid = (uid_t)(opt.slot_uid_base +
				     (slot >= 0 ? (unsigned long long)slot : opt.max_concurrent));
	c->share = (unsigned)opt.max_concurrent;
	c->shm_bytes = opt.shm_bytes;
	c->mode = opt.sandbox;
	c->allow_network = opt.sandbox_network;
	c->lim.memory = opt.memory_max;
	c->lim.address_space = opt.address_space_max;
	c->lim.file_bytes = opt.max_file_bytes;
	c->lim.procs = opt.max_procs;
	c->lim.open_files = opt.max_open_files;
	/* RLIMIT_CPU follows each run's own timeout (sbx_cpu_rlimit) */
	c->lim.cpu_s = opt.max_cpu_seconds;
	c->workdir_bytes = opt.workdir_bytes;
	c->workdir_inodes = opt.workdir_inodes;
	c->run_bytes = 2 * opt.max_request_bytes + (4u << 20);
	c->tmp_parent = getenv("TMPDIR");
	if (!c->tmp_parent || c->tmp_parent[0] != '/')
		c->tmp_parent = "/tmp";
}

/* Whether the configured mode can run code here, found by setting up a
 * real block (that never runs), and the host's facts beside it. */
static int sandbox_check(struct jbuf *b)
{
	struct sbx_config cfg;
	struct sbx_health h;
	int ok;

	sandbox_config(&cfg, -1);
	ok = sbx_self_test(&cfg, &h);
	resp_health_sandbox(b, &h);
	return ok;
}

/* --probe: the per-host check an operator runs before enabling the
 * socket. The JSON is /healthz's "sandbox" object; the exit status says
 * whether the configured mode can run code here. */
static int probe(struct ctx *x)
{
	struct jbuf b = {0};
	int ok;

	if (config_error[0]) {
		fprintf(stderr, "codellm: configuration error: %s\n", config_error);
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return 1;
	ok = sandbox_check(&b);
	printf("%s\n", jbuf_cstr(&b) ? b.p : "{}");
	fprintf(stderr, "codellm: --sandbox %s %s run code on this host\n",
		sbx_mode_name(opt.sandbox), ok ? "can" : "cannot");
	jbuf_free(&b);
	reg_free(&x->reg);
	return ok ? 0 : 1;
}

static int check_files(struct ctx *x, int argc, char **argv, int first)
{
	int rc;

	if (!config_error[0] && first >= argc)
		snprintf(config_error, sizeof config_error, "--check needs at least one file");
	if (config_error[0]) {
		fprintf(stderr, "codellm: configuration error: %s\n", config_error);
		reg_free(&x->reg);
		return 2;
	}
	rc = rc_check_files(argv + first, argc - first, &x->reg, opt.max_blocks, stdout);
	if (rc < 0)
		fprintf(stderr, "codellm: --check: out of memory or output failed\n");
	reg_free(&x->reg);
	return rc < 0 ? 2 : rc;
}

/* The directory of the run slots (and /healthz's shared check). */
static int slot_dir(char *dir, size_t len)
{
	return sbx_slot_dir(opt.runtime_dir, dir, len);
}

/* /healthz's sandbox check, shared by every instance for
 * --healthz-cache seconds through a file in the slot directory
 * (sbx_shared_*), so a stream of probes costs one sandbox setup per
 * interval: "1\n" or "0\n" (the verdict), then the JSON. The file is
 * opened before the check: a root handler's check leaves it running as
 * the slot uid, which cannot create files there. *at is when the check
 * ran (ms since the epoch). */
static int healthz_check(struct jbuf *sb, long *at)
{
	char dir[PATH_MAX], buf[16384];
	int fd = -1, ok;

	if (opt.healthz_cache_s > 0 && slot_dir(dir, sizeof dir) == 0)
		fd = sbx_shared_open(dir, "healthz.cache");
	if (fd >= 0 && sbx_shared_read(fd, (long)(opt.healthz_cache_s * 1000), buf, sizeof buf,
				       at) >= 2 && (buf[0] == '0' || buf[0] == '1') &&
	    buf[1] == '\n') {
		close(fd);
		jbuf_puts(sb, buf + 2);
		return buf[0] == '1';
	}
	*at = sbx_wall_ms();
	ok = sandbox_check(sb);
	if (fd >= 0 && jbuf_cstr(sb)) {
		struct jbuf data = {0};

		jbuf_printf(&data, "%d\n", ok);
		jbuf_append(&data, sb->p, sb->len);
		if (!data.oom)
			sbx_shared_write(fd, *at, data.p, data.len);
		jbuf_free(&data);
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

static int route_healthz(struct ctx *x)
{
	struct jbuf b = {0};
	int ok;

	jbuf_puts(&b, "{\"status\":\"");
	{
		struct jbuf sb = {0};
		long at;

		ok = healthz_check(&sb, &at);
		jbuf_printf(&b, "%s\",\"version\":\"" CODELLM_VERSION "\",\"mode\":\"%s\","
			    "\"checked_at_ms\":%ld,\"sandbox\":", ok ? "ok" : "unavailable",
			    sbx_mode_name(opt.sandbox), at);
		jbuf_append(&b, sb.p, sb.len);
		jbuf_free(&sb);
	}
	jbuf_puts(&b, ",\"interpreters\":");
	resp_interpreters(&b, &x->reg);
	jbuf_puts(&b, "}");
	respond(x, ok ? 200 : 503, ok ? NULL : "x-should-retry: false\r\n", &b, 0);
	jbuf_free(&b);
	return ok ? 200 : 503;
}

static int route_models(struct ctx *x, const char *id)
{
	struct jbuf b = {0};
	long created = (long)time(NULL);

	x->au.kind = AUDIT_NOTHING;
	if (!id) {
		resp_models(&b, &x->reg, created);
	} else if (resp_model(&b, &x->reg, id, created) < 0) {
		jbuf_free(&b);
		return refuse(x, REF_MODEL_NOT_FOUND, NULL,
			    "the model \"%.128s\" does not exist", id);
	}
	respond(x, 200, NULL, &b, 0);
	jbuf_free(&b);
	return 200;
}

static int keepalive(void *ctx)
{
	struct ctx *x = ctx;

	return conn_write_nb(&x->c, " ", 1);
}

static void say_layers(const char *id, const char *what, unsigned bits)
{
	char names[256];

	sbx_layer_list(names, sizeof names, bits, ", ");
	fprintf(stderr, "codellm: %s: %s: %s\n", id, what, names);
}

/* Sends the record; returns sd_journal_sendv's result (which is 0 also
 * when no journal listens: tests read the journal back). */
static int audit_send(const struct audit *a)
{
	struct audit_fields f;
	int rc;

	audit_fields(a, &f);
	rc = sd_journal_sendv(f.iov, f.n);
	audit_fields_free(&f);
	return rc;
}

static void audit_result(struct audit *a, const struct sbx_result *res)
{
	const struct sbx_layers *l = &res->layers;
	size_t n;

	a->has_result = 1;
	a->exit_code = res->exit_code;
	a->timed_out = res->end == SBX_END_TIMEOUT;
	a->duration_ms = res->duration_ms;
	n = (size_t)snprintf(a->sandbox, sizeof a->sandbox, "%s net=%s%s",
			     sbx_mode_name(l->mode), sbx_net_name(l->net),
			     l->absent ? " missing=" : "");
	if (n < sizeof a->sandbox)
		sbx_layer_list(a->sandbox + n, sizeof a->sandbox - n, l->absent, ",");
}

/* Agent mode's audit: the paths the tool calls write, one per line,
 * each made safe for the journal (the block's output chose them). */
static void audit_paths(struct audit *a, const struct agent_output *o)
{
	for (size_t i = 0; i < o->n; i++) {
		char shown[PATH_MAX];

		audit_text(shown, sizeof shown, o->changes[i].path, strlen(o->changes[i].path));
		if (a->write_paths.len)
			jbuf_puts(&a->write_paths, "\n");
		jbuf_puts(&a->write_paths, shown);
	}
}

/* Agent mode after the run: tool calls, or 422 execution_error with the
 * block, its stderr's tail and the codellm object. Never 5xx: the SDKs
 * retry those, and a retry runs the code again. */
static int agent_answer(struct ctx *x, struct resp_run *rr)
{
	struct jbuf b = {0}, calls = {0};
	struct agent_output o = AGENT_OUTPUT_NONE;
	char msg[2048];
	const char *code = agent_outcome(rr->res, rr->req, &o, msg, sizeof msg);

	if (!code) {
		resp_tool_calls(&calls, &o);
		if (calls.oom) {
			code = "invalid_changes";
			agent_refusal(rr->res, "out of memory building the tool calls", msg,
				      sizeof msg);
		}
	}
	if (code) {
		fprintf(stderr, "codellm: %s: agent run refused (%s)\n", x->id, code);
		resp_execution_error(&b, code, msg, rr);
		respond(x, 422, NULL, &b, 1);
	} else {
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		resp_agent_completion(&b, rr, calls.p, calls.len);
		respond(x, 200, NULL, &b, 1);
	}
	jbuf_free(&b);
	jbuf_free(&calls);
	agent_output_free(&o);
	return code ? 422 : 200;
}

/* ---- streaming: server-sent events, as the OpenAI SDKs parse them ---- */

static int sse_send(struct ctx *x, struct jbuf *b)
{
	int rc = b->len ? conn_write(&x->c, b->p, b->len, write_deadline(x)) : 0;

	b->len = 0;
	x->st_last = conn_now_ms();
	return rc;
}

static void sse_start(struct ctx *x, const struct resp_run *rr)
{
	struct jbuf ev = {0};

	x->ctype = "text/event-stream";
	send_head(x, 200, "Cache-Control: no-cache\r\n", -1, 1);
	x->st_rr = rr;
	resp_sse_role(&ev, rr);
	sse_send(x, &ev);
	jbuf_free(&ev);
}

/* The last block's stdout as content deltas, as it is produced; a UTF-8
 * sequence split between two reads waits for its end. */
static int stream_output(void *ctx, const char *data, size_t len)
{
	struct ctx *x = ctx;
	struct jbuf all = {0}, ev = {0};
	size_t n;
	int rc = 0;

	jbuf_append(&all, x->st_pend, x->st_npend);
	jbuf_append(&all, data, len);
	if (all.oom)
		rc = -1;
	n = rc ? 0 : jstr_utf8_prefix(all.p, all.len);
	x->st_npend = rc ? 0 : all.len - n;
	if (x->st_npend)
		memcpy(x->st_pend, all.p + n, x->st_npend);
	if (n) {
		resp_sse_content(&ev, x->st_rr, all.p, n);
		rc = sse_send(x, &ev);
	}
	jbuf_free(&all);
	jbuf_free(&ev);
	return rc;
}

/* ": ping" while the stream is quiet: a comment every client ignores */
static int stream_ping(void *ctx)
{
	struct ctx *x = ctx;
	static const char ping[] = ": ping\n\n";

	if (conn_now_ms() - x->st_last < (long)(opt.keepalive_s * 1000) - 100)
		return 0;
	x->st_last = conn_now_ms();
	return conn_write(&x->c, ping, sizeof ping - 1, write_deadline(x));
}

/* The end of a stream: run mode's rest and final chunk, or agent mode's
 * tool calls (or its execution_error event, with no tool call before
 * it); usage when asked; [DONE]. */
static void stream_end(struct ctx *x, struct resp_run *rr)
{
	const struct chat_request *r = rr->req;
	const struct sbx_result *p = rr->res;
	struct jbuf ev = {0};
	struct agent_output o = AGENT_OUTPUT_NONE;

	if (!r->agent) {
		if (x->st_npend)
			resp_sse_content(&ev, rr, x->st_pend, x->st_npend);
		resp_sse_final(&ev, rr, p && (p->out_truncated || p->end != SBX_END_NORMAL) ?
			       "length" : "stop");
	} else if (p) {
		char msg[2048];
		const char *code = agent_outcome(p, r, &o, msg, sizeof msg);

		if (code) {
			fprintf(stderr, "codellm: %s: agent run refused (%s), in the stream\n",
				x->id, code);
			resp_sse_error(&ev, code, "execution_error", msg, rr);
			sse_send(x, &ev);
			goto out;
		}
		rr->changes = (long)o.n;
		audit_paths(&x->au, &o);
		resp_sse_tool_calls(&ev, rr, &o);
		resp_sse_final(&ev, rr, "tool_calls");
	} else {
		/* a follow-up turn: finish alone */
		resp_sse_tool_calls(&ev, rr, &o);
		resp_sse_final(&ev, rr, "tool_calls");
	}
	if (r->include_usage)
		resp_sse_usage(&ev, rr);
	resp_sse_done(&ev);
	sse_send(x, &ev);
out:
	jbuf_free(&ev);
	agent_output_free(&o);
}

/* What the pipeline takes from the request and the options; the mode's
 * own settings (callbacks, the stop at the cap) follow once it started. */
static void pipeline_inputs(struct ctx *x, const struct chat_request *r,
			    struct sbx_run *run, struct sbx_pipeline *p, char **names)
{
	p->n = r->nblocks;
	p->pol = &run->pol;
	p->files = (const char *const *)names;
	p->stdin_data = r->stdin_data;
	p->stdin_len = r->stdin_len;
	p->timeout_s = r->timeout_s > 0 && r->timeout_s < opt.timeout_s ?
		       r->timeout_s : opt.timeout_s;
	p->max_stdout = opt.max_stdout_bytes;
	p->max_stderr = opt.max_stderr_bytes;
	/* the debug pipeline keeps what crosses each edge; the relay counts
	 * and taps on the same path in every run */
	p->tap = x->run_kind == RUN_DEBUG_PIPELINE;
	p->max_tap = opt.max_tap_bytes;
	p->unbuffered = r->stream;	/* python output flows as printed */
	p->client_fd = x->c.in;
	p->probe_client = 1;	/* the 200 head goes out before the run */
	p->sig_fd = x->c.sig_fd;
	p->keepalive_ms = (long)(opt.keepalive_s * 1000);
	p->cb.keepalive = keepalive;
	p->cb.ctx = x;
}

/* One run's parts, from the sandbox's preparation to its cleanup. */
struct run_parts {
	struct sbx_run run;
	struct sbx_pipeline p;
	char **names;		/* each block's file in the run directory */
	char *const **argv;	/* each block's interpreter */
	int prepared;		/* run was prepared (maybe in part): finish it */
};

static int refuse_sandbox(struct ctx *x, int layer, const char *why)
{
	return refuse(x, REF_SANDBOX, NULL,
		    "the sandbox layer \"%s\" cannot be applied (%s); nothing ran",
		    sbx_layer_name(layer), why);
}

/* The run directory with each block's file and the bag, the pipeline's
 * inputs and each block's argv. 0, or the status of the refusal sent. */
static int prepare_run(struct ctx *x, struct chat_request *r, struct run_parts *rp)
{
	struct sbx_config cfg;
	char msg[256];
	int rc, layer;

	sandbox_config(&cfg, x->slot);
	/* finished however it ends: a failed preparation may hold mounts */
	rp->prepared = 1;
	if (sbx_run_prepare(&rp->run, &cfg, r->nblocks, &layer, msg, sizeof msg) < 0) {
		fprintf(stderr, "codellm: %s: sandbox unavailable: %s\n", x->id, msg);
		return refuse_sandbox(x, layer, msg);
	}
	rp->names = calloc(r->nblocks, sizeof *rp->names);
	rp->argv = calloc(r->nblocks, sizeof *rp->argv);
	if (!rp->names || !rp->argv)
		goto oom;
	for (size_t i = 0; i < r->nblocks; i++) {
		struct jbuf code = {0};

		if (req_block_file(r, i, &rp->names[i], &code) < 0)
			goto oom;
		rc = code.oom ? -ENOMEM : sbx_run_add_file(&rp->run, rp->names[i],
							   code.p ? code.p : "", code.len);
		jbuf_free(&code);
		if (rc < 0)
			goto io_fail;
		rp->argv[i] = r->blocks[i].interp->argv;
	}
	if (r->bag && (rc = sbx_run_add_bag(&rp->run, r->bag, r->bag_len)) < 0)
		goto io_fail;
	pipeline_inputs(x, r, &rp->run, &rp->p, rp->names);
	rp->p.argv = (char *const *const *)rp->argv;
	return 0;
oom:
	/* before any block started: nothing ran, a retry may find memory */
	return refuse(x, REF_OVERLOADED, NULL,
		    "the server is out of memory preparing this run; retry");
io_fail:
	return refuse(x, REF_WORKDIR, NULL,
		    "cannot write the run's files: %s", strerror(-rc));
}

/* Phase one: every block set up, nothing run. A failure here is still
 * a clean refusal; after it, code runs. */
static int start_run(struct ctx *x, struct run_parts *rp)
{
	if (sbx_pipeline_start(&rp->p) < 0) {
		fprintf(stderr, "codellm: %s: sandbox setup failed: %s\n", x->id, rp->p.error);
		return refuse_sandbox(x, rp->p.error_layer, rp->p.error);
	}
	x->au.kind = AUDIT_RAN;
	if (opt.sandbox == SBX_OFF)
		fprintf(stderr, "codellm: %s: --sandbox off: blocks run without confinement\n",
			x->id);
	else if (rp->run.missing | rp->p.missing)
		say_layers(x->id, "--sandbox besteffort: running without",
			   rp->run.missing | rp->p.missing);
	return 0;
}

/* What the answer mode needs before the run. Run mode: the status is
 * fixed once code runs, so it goes out now and whitespace keeps the
 * connection alive until the object is ready. Agent mode's status (200
 * or 422) is known only at the end: no early head, no keep-alive, and
 * end of input means gone. A stream starts once every block is set up,
 * so a refusal before this point is still a plain HTTP error. A debug
 * answer is one JSON object once the run ended (as agent mode's,
 * without its stop at the output cap). */
static void begin_answer(struct ctx *x, const struct chat_request *r, struct sbx_pipeline *p,
			 struct resp_run *rr)
{
	if (x->run_kind != RUN_CHAT) {
		p->cb.keepalive = NULL;
		p->probe_client = 0;
	} else if (r->stream) {
		sse_start(x, rr);
		p->cb.keepalive = stream_ping;
		if (!r->agent)
			p->cb.output = stream_output;
		else
			p->stop_at_cap = 1;
	} else if (!r->agent) {
		send_head(x, 200, NULL, -1, 1);
	} else {
		p->cb.keepalive = NULL;
		p->probe_client = 0;
		p->stop_at_cap = 1;
	}
}

static int debug_answer(struct ctx *x, const struct chat_request *r, const struct resp_run *rr)
{
	struct dbg_run d = { .id = x->id, .req = r, .res = rr->res, .index = x->dbg_index };
	struct jbuf b = {0};
	int status = 200;

	if (x->run_kind == RUN_DEBUG_BLOCK)
		dbg_block_result(&b, &d);
	else
		dbg_pipeline_result(&b, &d);
	jbuf_puts(&b, "\n");
	if (b.oom)
		status = refuse(x, REF_ANSWER_OOM, "x-should-retry: false\r\n",
			      "the answer did not fit in memory; lower --max-tap-bytes");
	else
		respond(x, 200, NULL, &b, 1);
	jbuf_free(&b);
	return status;
}

/* After the run: the answer in the request's mode. */
static int end_answer(struct ctx *x, const struct chat_request *r, struct run_parts *rp,
		      struct resp_run *rr)
{
	struct jbuf b = {0};

	if (rp->p.r.end == SBX_END_CLIENT) {
		fprintf(stderr, "codellm: %s: client went away; run ended\n", x->id);
		return 200;
	}
	rr->res = sbx_run_result(&rp->run, &rp->p);
	audit_result(&x->au, rr->res);
	if (rr->res->end == SBX_END_SIGNAL)
		fprintf(stderr, "codellm: %s: run ended by signal %d\n", x->id,
			rr->res->end_signal);
	if (x->run_kind != RUN_CHAT)
		return debug_answer(x, r, rr);
	if (r->stream) {
		stream_end(x, rr);
		return 200;
	}
	if (r->agent)
		return agent_answer(x, rr);
	resp_completion(&b, rr);
	jbuf_puts(&b, "\n");
	conn_write(&x->c, b.p, b.len, write_deadline(x));
	jbuf_free(&b);
	return 200;
}

/* A run and its answer: prepare, start, begin the answer, run, end it. */
static int run_request(struct ctx *x, struct chat_request *r)
{
	struct run_parts rp = {0};
	struct resp_run rr = {
		.id = x->id, .created = (long)time(NULL), .req = r, .changes = -1,
	};
	int rc, status = prepare_run(x, r, &rp);

	if (status == 0)
		status = start_run(x, &rp);
	if (status == 0) {
		begin_answer(x, r, &rp.p, &rr);
		sbx_pipeline_run(&rp.p);
		status = end_answer(x, r, &rp, &rr);
	}
	sbx_pipeline_abort(&rp.p);
	sbx_pipeline_free(&rp.p);
	if (rp.prepared && (rc = sbx_run_finish(&rp.run)) < 0)
		fprintf(stderr, "codellm: %s: removing the run directory: %s\n", x->id,
			strerror(-rc));
	for (size_t i = 0; rp.names && i < r->nblocks; i++)
		free(rp.names[i]);
	free(rp.names);
	free(rp.argv);
	return status;
}

/* A run slot (SPEC §9), shared by all instances through flock on files
 * in the runtime directory; taken only now that the request is read,
 * authenticated and valid, held until exit. */
static int take_slot(struct ctx *x)
{
	char dir[PATH_MAX];
	unsigned idx;
	int fd;

	if (slot_dir(dir, sizeof dir) < 0)
		goto unusable;
	fd = slot_take(dir, (unsigned)opt.max_concurrent, &idx);
	if (fd == -EBUSY) {
		fprintf(stderr, "codellm: %s: all %llu run slots are busy: 429\n", x->id,
			opt.max_concurrent);
		return refuse(x, REF_SLOTS_BUSY, "Retry-After: 1\r\n",
			    "all %llu run slots are busy (--max-concurrent); retry in a second",
			    opt.max_concurrent);
	}
	if (fd < 0) {
		errno = -fd;
		goto unusable;
	}
	x->slot_fd = fd;
	x->slot = (int)idx;
	return 0;
unusable:
	fprintf(stderr, "codellm: %s: the run slot directory %s is unusable: %s\n", x->id,
		dir, strerror(errno));
	return refuse(x, REF_MISCONFIGURED, NULL,
		    "the server cannot take a run slot; see its journal");
}

/* What a request may make the handler run, hold and echo. */
static const struct req_limits *limits(void)
{
	static struct req_limits lim;

	lim.max_blocks = (size_t)opt.max_blocks;
	lim.max_skipped = (size_t)opt.max_skipped_fences;
	return &lim;
}

static int route_chat(struct ctx *x)
{
	struct chat_request r;
	struct req_error e;
	int status;

	if (req_parse(x->body, x->body_len, &x->reg, limits(), &r, &e) < 0)
		return refuse_request(x, &e);
	audit_request(&x->au, &r, r.agent ? "agent" : "run");
	if (r.rerun_guard) {
		/* A follow-up turn: running again would repeat every effect.
		 * Agent mode answers with finish alone, run mode with an
		 * empty content. */
		struct jbuf b = {0}, calls = {0};
		struct resp_run rr = {
			.id = x->id, .created = (long)time(NULL), .req = &r, .res = NULL,
			.changes = r.agent ? 0 : -1,
		};

		x->au.kind = AUDIT_NOTHING;
		if (r.stream) {
			sse_start(x, &rr);
			stream_end(x, &rr);
		} else if (r.agent) {
			agent_finish_only(&calls);
			resp_agent_completion(&b, &rr, calls.p, calls.len);
			jbuf_free(&calls);
		} else {
			resp_completion(&b, &rr);
		}
		if (!r.stream)
			respond(x, 200, NULL, &b, 0);
		jbuf_free(&b);
		status = 200;
	} else if ((status = take_slot(x)) == 0) {
		status = run_request(x, &r);
	}
	req_free(&r);
	return status;
}

/* ---- the debug surface (SPEC §8) ------------------------------------- */

/* The peer and the Host header: loopback only. A non-loopback peer
 * reaching the debug socket is a misconfiguration; a Host naming
 * another machine is a browser led here by DNS rebinding. The debug
 * routes want both; with --no-auth every route wants the Host rule. */
static int loopback_allowed(struct ctx *x, int is_debug)
{
	size_t count = 0;
	const struct http_header *h = http_find_header(&x->hr, "host", &count);
	const char *what = is_debug ? "the debug routes answer" :
			   "with --no-auth this server answers";

	if (is_debug && !x->c.loopback) {
		fprintf(stderr, "codellm: %s: refusing %s from %s: debug routes answer "
			"loopback peers only\n", x->id, x->path_log, x->c.peer);
		return refuse(x, REF_LOOPBACK, NULL,
			    "the debug routes answer loopback clients only");
	}
	if (count != 1 || !http_host_is_loopback(h->value, h->value_len)) {
		fprintf(stderr, "codellm: %s: refusing %s: %s\n", x->id, x->path_log,
			count == 1 ? "Host names no loopback address" : "not exactly one Host");
		return refuse(x, REF_HOST, NULL,
			    "%s only a request with one Host header that names loopback "
			    "(localhost, 127.0.0.1, [::1])", what);
	}
	return 0;
}

/* A web page's request is refused on every route (http_browser_check;
 * codellm(7), Browsers), but the debug page's own calls on the debug
 * routes. */
static int browser_allowed(struct ctx *x, int is_debug)
{
	const struct http_header *bad = NULL;
	int why = http_browser_check(&x->hr, is_debug, &bad);
	const char *name = why == HTTP_BROWSER_CROSS_SITE ? "Sec-Fetch-Site" : "Origin";
	char shown[96] = "given twice";

	if (why == HTTP_BROWSER_OK)
		return 0;
	if (bad)
		audit_text(shown, sizeof shown, bad->value, bad->value_len);
	fprintf(stderr, "codellm: %s: refusing %s: %s: %s (a web page's request)\n", x->id,
		x->path_log, name, shown);
	if (why == HTTP_BROWSER_CROSS_SITE)
		return refuse(x, REF_CROSS_SITE, NULL,
			      "this server does not answer requests a web page makes "
			      "(Sec-Fetch-Site: %s); call it from a program", shown);
	return refuse(x, REF_CROSS_ORIGIN, NULL,
		      "this server does not answer requests from a web page's origin "
		      "(Origin: %s); call it from a program", shown);
}

/* Every POST body is JSON and must say so: a web page can send
 * text/plain, form or multipart bodies to any origin without a CORS
 * preflight, but not application/json. */
static int content_type_allowed(struct ctx *x)
{
	const struct http_header *h;
	size_t count = 0;
	char shown[96] = "none";

	if (http_body_is_json(&x->hr, &h, &count))
		return 0;
	if (h)
		audit_text(shown, sizeof shown, h->value, h->value_len);
	return refuse(x, REF_MEDIA_TYPE, NULL,
		      "a POST body must be sent as Content-Type: application/json (got %s%s)",
		      count > 1 ? "several, the first " : "", shown);
}

static int route_page(struct ctx *x)
{
	static const char headers[] =
		"Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
		"style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
		"X-Content-Type-Options: nosniff\r\n"
		"Referrer-Policy: no-referrer\r\n"
		"Cache-Control: no-store\r\n";

	x->au.kind = AUDIT_NOTHING;
	x->ctype = "text/html; charset=utf-8";
	send_head(x, 200, headers, (long)debug_page_len(), 0);
	conn_write(&x->c, debug_page, debug_page_len(), write_deadline(x));
	return 200;
}

/* GET /debug/blocks?body=… or POST {"body": …}: parses, runs nothing. */
static int route_debug_blocks(struct ctx *x)
{
	struct chat_request r;
	struct req_error e;
	struct jbuf b = {0};
	size_t unused;
	int rc;

	if (method_is(x, "GET")) {
		char *md = NULL;
		size_t len = 0;
		int qrc = http_query_param(x->hr.target, x->hr.target_len, "body", &md, &len);

		rc = req_parse_debug_query(qrc, md, len, &x->reg, limits(), &r, &e);
		free(md);
	} else
		rc = req_parse_debug(x->body, x->body_len, &x->reg, limits(),
				     REQ_DEBUG_LIST, &r, &unused, &e);
	if (rc < 0)
		return fail_req(x, &e);
	audit_request(&x->au, &r, "debug");
	x->au.kind = AUDIT_NOTHING;
	dbg_blocks(&b, &r);
	jbuf_puts(&b, "\n");
	respond(x, 200, NULL, &b, 0);
	jbuf_free(&b);
	req_free(&r);
	return 200;
}

/* POST /debug/run-block and /debug/run-pipeline: a run like any other
 * (slot, sandbox, relay), answered as one debug object. */
static int route_debug_run(struct ctx *x, int pipeline)
{
	struct chat_request r;
	struct req_error e;
	int status;

	if (req_parse_debug(x->body, x->body_len, &x->reg, limits(),
			    pipeline ? REQ_DEBUG_PIPELINE : REQ_DEBUG_BLOCK, &r,
			    &x->dbg_index, &e) < 0)
		return refuse_request(x, &e);
	audit_request(&x->au, &r, "debug");
	x->run_kind = pipeline ? RUN_DEBUG_PIPELINE : RUN_DEBUG_BLOCK;
	status = take_slot(x);
	if (status == 0)
		status = run_request(x, &r);
	req_free(&r);
	return status;
}

static int route_debug_run_block(struct ctx *x)
{
	return route_debug_run(x, 0);
}

static int route_debug_run_pipeline(struct ctx *x)
{
	return route_debug_run(x, 1);
}

static int route_model_list(struct ctx *x)
{
	return route_models(x, NULL);
}

static int route_model(struct ctx *x)
{
	return route_models(x, x->path + strlen("/v1/models/"));
}

/* The routes (codellm(7)). A path ending in '*' takes one more
 * non-empty segment. */
enum {
	RT_KEY = 1,	/* needs the bearer key */
	RT_DEBUG = 2,	/* only with --debug, for loopback peers and Host names */
	RT_QUIET = 4,	/* no journal record when served (a probe) */
};

struct route {
	const char *path;
	const char *allow;	/* its methods, as a 405's Allow header says them */
	unsigned flags;
	int (*serve)(struct ctx *x);
};

static const struct route routes[] = {
	{ "/",                    "GET",       RT_DEBUG,          route_page },
	{ "/debug/blocks",        "GET, POST", RT_DEBUG,          route_debug_blocks },
	{ "/debug/run-block",     "POST",      RT_DEBUG | RT_KEY, route_debug_run_block },
	{ "/debug/run-pipeline",  "POST",      RT_DEBUG | RT_KEY, route_debug_run_pipeline },
	{ "/healthz",             "GET",       RT_QUIET,          route_healthz },
	{ "/health",              "GET",       RT_QUIET,          route_healthz },
	{ "/v1/models",           "GET",       RT_KEY,            route_model_list },
	{ "/v1/models/*",         "GET",       RT_KEY,            route_model },
	{ "/v1/chat/completions", "POST",      RT_KEY,            route_chat },
};

static int path_matches(const char *pattern, const char *path)
{
	size_t n = strlen(pattern);

	if (n && pattern[n - 1] == '*')
		return !strncmp(path, pattern, n - 1) && path[n - 1] &&
		       !strchr(path + n - 1, '/');
	return !strcmp(path, pattern);
}

/* Whether the request's method is one of a row's ("GET, POST"). */
static int method_allowed(const struct ctx *x, const char *allow)
{
	for (const char *m = allow; *m; m += strspn(m, ", ")) {
		size_t n = strcspn(m, ", ");

		if (n == x->hr.method_len && !memcmp(m, x->hr.method, n))
			return 1;
		m += n;
	}
	return 0;
}

/* Step: the route, by path then method: 404, or 405 with Allow. */
static int route_request(struct ctx *x)
{
	char allow[64];

	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *rt = &routes[i];

		if ((rt->flags & RT_DEBUG && !opt.debug) || !path_matches(rt->path, x->path))
			continue;
		if (!method_allowed(x, rt->allow)) {
			snprintf(allow, sizeof allow, "Allow: %s\r\n", rt->allow);
			refuse(x, REF_METHOD, allow,
			     "%.*s is not allowed on %.200s", (int)x->hr.method_len,
			     x->hr.method, x->path);
			return -1;
		}
		x->route = rt;
		return 0;
	}
	refuse(x, REF_NOT_FOUND, NULL, "no route for %.200s", x->path);
	return -1;
}

/* The client's retry count (the official SDKs' x-stainless-retry-count),
 * digits only, for the record. */
static void audit_retry_count(struct ctx *x)
{
	const struct http_header *rc = http_find_header(&x->hr, "x-stainless-retry-count", NULL);

	if (rc && rc->value_len && rc->value_len < sizeof x->au.retry_count &&
	    strspn(rc->value, "0123456789") >= rc->value_len)
		snprintf(x->au.retry_count, sizeof x->au.retry_count, "%.*s",
			 (int)rc->value_len, rc->value);
}

/* ---- the life of one connection ---------------------------------------- */

/* The interpreter registry: built-ins, --interpreters, --allowed-programs.
 * A mistake is the operator's: every request then answers 503. */
static void load_registry(struct ctx *x)
{
	char err[512];

	if (reg_init(&x->reg) < 0)
		snprintf(config_error, sizeof config_error, "out of memory");
	else if (opt.interpreters && reg_load_file(&x->reg, opt.interpreters, err, sizeof err) < 0)
		snprintf(config_error, sizeof config_error, "--interpreters %.400s", err);
	else if (opt.allowed_programs && reg_allow(&x->reg, opt.allowed_programs, err, sizeof err) < 0)
		snprintf(config_error, sizeof config_error, "%s", err);
}

/* --help, --version, --probe, --check: no connection. */
static int run_command(struct ctx *x, int cmd, int argc, char **argv)
{
	switch (cmd) {
	case CMD_HELP:
		usage(stdout);
		return 0;
	case CMD_VERSION:
		printf("codellm-handler " CODELLM_VERSION "\n");
		return 0;
	case CMD_PROBE:
		return probe(x);
	default:
		return check_files(x, argc, argv, optind);
	}
}

/* The process around a request: anything it starts, however detached,
 * stays its own to kill (orphans re-parent to it, not to PID 1); each
 * block costs four descriptors, so take the hard limit of open files;
 * the signals a run watches. */
static int process_setup(struct ctx *x)
{
	struct rlimit nofile;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("codellm: PR_SET_CHILD_SUBREAPER");
		return -1;
	}
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	x->c.sig_fd = sbx_signals_init();
	return x->c.sig_fd < 0 ? -1 : 0;
}

/* The operator's mistake: say so to the client, not just reset. */
static int refuse_if_misconfigured(struct ctx *x)
{
	if (!config_error[0])
		return 0;
	fprintf(stderr, "codellm: configuration error: %s\n", config_error);
	refuse(x, REF_MISCONFIGURED, NULL,
	     "the server's configuration is invalid; see its journal");
	x->exit = 2;
	return -1;
}

/* The request line and headers, the target's path and how the body is
 * framed: everything the later steps decide on, from the head alone. */
static int read_request_head(struct ctx *x)
{
	size_t ml;

	x->head_bytes = read_head(x);
	if (x->head_bytes <= 0)
		return -1;
	if (http_target_path(x->hr.target, x->hr.target_len, x->path, sizeof x->path) < 0)
		return refuse(x, REF_BAD_REQUEST, NULL,
			    "invalid request target"), -1;
	if (check_framing(x, method_is(x, "POST")) != 0)
		return -1;
	audit_text(x->path_log, sizeof x->path_log, x->path, strlen(x->path));
	ml = x->hr.method_len > 16 ? 16 : x->hr.method_len;
	memcpy(x->au.route, x->hr.method, ml);
	x->au.route[ml] = ' ';
	audit_text(x->au.route + ml + 1, sizeof x->au.route - ml - 1, x->path, strlen(x->path));
	return 0;
}

/* Who may ask, from the head alone: no web page; loopback names where
 * no key guards (and on the debug routes, loopback peers); the key; a
 * JSON body. A refusal here reads no body and is recorded, also on a
 * quiet route. */
static int admit(struct ctx *x)
{
	int debug = x->route->flags & RT_DEBUG;

	x->au.enabled = !(x->route->flags & RT_QUIET);
	audit_retry_count(x);
	if (browser_allowed(x, debug) != 0 ||
	    ((debug || opt.no_auth) && loopback_allowed(x, debug) != 0) ||
	    (x->route->flags & RT_KEY && authenticate(x) != 0) ||
	    (method_is(x, "POST") && content_type_allowed(x) != 0)) {
		x->au.enabled = 1;
		return -1;
	}
	/* nothing after this needs the key: no copy of it lives on in the
	 * process whose memory the blocks' first processes start from */
	forget_key(x);
	return 0;
}

static int read_request_body(struct ctx *x)
{
	if (read_body(x, (size_t)x->head_bytes) != 0)
		return -1;
	x->request_read = 1;
	return 0;
}

static void ctx_free(struct ctx *x)
{
	jbuf_free(&x->au.write_paths);
	free(x->head);
	free(x->body);
	if (x->key) {
		explicit_bzero(x->key, strlen(x->key));
		free(x->key);
	}
	reg_free(&x->reg);
	free(opt.api_key_file);
	free(opt.allowed_programs);
	free(opt.interpreters);
	free(opt.runtime_dir);
	if (x->slot_fd >= 0)
		close(x->slot_fd);
}

int main(int argc, char **argv)
{
	struct ctx x = { .c = { .in = -1, .out = -1, .sig_fd = -1 }, .slot_fd = -1,
			 .slot = -1 };
	int cmd = CMD_SERVE;

	x.t_start = conn_now_ms();				/*  1 the request's id */
	x.au.request_id = x.id;
	x.au.peer = x.c.peer;
	signal(SIGPIPE, SIG_IGN);
	make_id(&x);
	if (parse_options(argc, argv, &cmd) == 0 && cmd != CMD_HELP &&
	    cmd != CMD_VERSION)
		load_registry(&x);				/*  2 options, registry */
	if (cmd != CMD_SERVE)
		return run_command(&x, cmd, argc, argv);	/*  3 or a command */
	if (process_setup(&x) < 0 || conn_open(&x.c) < 0) {	/*  4 process, connection */
		fprintf(stderr, "codellm: no connection: pass one as fd 3 (LISTEN_FDS=1) "
			"or as stdin/stdout (inetd)\n");
		return 1;
	}
	load_key(&x);						/*  5 the key */
	if (refuse_if_misconfigured(&x) == 0 &&			/*  6 503 */
	    read_request_head(&x) == 0 &&			/*  7 head, target, framing */
	    route_request(&x) == 0 &&				/*  8 404, 405 */
	    admit(&x) == 0 &&					/*  9 browser, Host, key, JSON */
	    read_request_body(&x) == 0)				/* 10 the body */
		x.route->serve(&x);				/* 11 serve */
	if (x.au.enabled && x.au.status)			/* 12 the journal record */
		audit_send(&x.au);
	/* A request read whole has nothing in flight (unless bytes after
	 * it were left unread): no wait then (nor after a SIGTERM mid-run). */
	conn_close_lingering(&x.c, !x.request_read || x.unread);	/* 13 close */
	ctx_free(&x);						/* 14 */
	return x.exit;						/* 15 */
}
