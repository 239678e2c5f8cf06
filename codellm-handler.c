/* codellm-handler: one HTTP request on one connection, then exit.
 *
 * systemd (Accept=yes) or systemd-socket-activate starts one process per
 * connection, the connection arriving as fd 3 (LISTEN_FDS) or as
 * stdin/stdout (inetd). The request's life is a short list of checked
 * steps: read, route, authenticate, parse, run, answer; main() below
 * numbers them. Its parts live in handler/ and none calls back here:
 * the option table (options.c), the answer's head and the refusals
 * (answer.c), the route bodies (routes.c, and each face's: chat.c,
 * responses.c, mcp.c, debug.c), a run (run.c). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handler/handler.h"
#include "handler/journal.h"
#include "handler/options.h"
#include "http/reader.h"
#include "http/reply.h"
#include "http/target.h"
#include "sandbox/phase.h"
#include "sandbox/sandbox.h"

/* ---- the request -------------------------------------------------------- */

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
			     "This model's maximum context length is %llu bytes. However, your "
			     "request is %llu bytes. Please reduce the length of the messages. "
			     "codellm: the request body exceeds --max-request-bytes",
			     opt.max_request_bytes, (unsigned long long)x->fr.length);
		else
			refuse(x, REF_TOO_LARGE, NULL,
			     "This model's maximum context length is %llu bytes. However, your "
			     "request is longer. Please reduce the length of the messages. "
			     "codellm: the request body exceeds --max-request-bytes",
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
	/* worded as OpenAI words them: clients match on the text */
	if (!http_find_header(&x->hr, "authorization", &(size_t){0}))
		return refuse(x, REF_BAD_KEY, "WWW-Authenticate: Bearer\r\n",
			      "You didn't provide an API key. You need to provide your API key "
			      "in an Authorization header using Bearer auth (i.e. Authorization: "
			      "Bearer YOUR_KEY). codellm: no Authorization header was sent");
	return refuse(x, REF_BAD_KEY, "WWW-Authenticate: Bearer\r\n",
		      "Incorrect API key provided. codellm: the Authorization header does not "
		      "carry this server's API key as Bearer KEY");
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

/* Sends the record (handler/journal.c). Where no journal takes it (no
 * socket: a container; or a send that failed) the same fields go to
 * standard error as one JSON line, in one write: the record never
 * vanishes. 0 when the journal took it, 1 for the line, -errno when
 * neither went out. */
static int audit_send(const struct audit *a)
{
	struct audit_fields f;
	struct jbuf b = { 0 };
	int rc;

	audit_fields(a, &f);
	rc = journal_send(f.iov, f.n);
	if (rc < 0) {
		audit_fields_json(&f, &b);
		if (jbuf_cstr(&b) && journal_line(STDERR_FILENO, b.p, b.len) == 0)
			rc = 1;
		jbuf_free(&b);
	}
	audit_fields_free(&f);
	return rc;
}

/* ---- who may ask: no web page, loopback names, a JSON body ------------ */

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

/* ---- the routes --------------------------------------------------------- */

/* The routes (codellm(7)); their bodies are in handler/routes.c and in
 * each face's file (chat.c, responses.c, mcp.c, debug.c). A '*' takes
 * one non-empty path segment. */
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
	const char *face;	/* the journal's CODELLM_FACE */
};

static const struct route routes[] = {
	{ "/",                    "GET",       RT_DEBUG,          route_page,               "debug" },
	{ "/debug/blocks",        "GET, POST", RT_DEBUG,          route_debug_blocks,       "debug" },
	{ "/debug/run-block",     "POST",      RT_DEBUG | RT_KEY, route_debug_run_block,    "debug" },
	{ "/debug/run-pipeline",  "POST",      RT_DEBUG | RT_KEY, route_debug_run_pipeline, "debug" },
	{ "/healthz",             "GET",       RT_QUIET,          route_healthz,            "health" },
	{ "/health",              "GET",       RT_QUIET,          route_healthz,            "health" },
	{ "/v1/models",           "GET",       RT_KEY,            route_model_list,         "models" },
	{ "/v1/models/*",         "GET",       RT_KEY,            route_model,              "models" },
	{ "/v1/chat/completions", "POST",      RT_KEY,            route_chat,               "chat" },
	{ "/v1/responses",        "POST",      RT_KEY,            route_responses,          "responses" },
	/* stateless: nothing to get, delete, cancel or list (a 400 that says so) */
	{ "/v1/responses/*",      "GET, POST, DELETE", RT_KEY,    route_responses_stateless, "responses" },
	{ "/v1/responses/*/*",    "GET, POST, DELETE", RT_KEY,    route_responses_stateless, "responses" },
	{ "/mcp",                 "POST",      RT_KEY,            route_mcp,                "mcp" },
};

static int path_matches(const char *pattern, const char *path)
{
	for (; *pattern; pattern++) {
		size_t n = strcspn(path, "/");

		if (*pattern == '*' && n)
			path += n;
		else if (*pattern == '*' || *pattern != *path++)
			return 0;
	}
	return !*path;
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
		x->au.face = rt->face;
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
	case CMD_ENV_DIGEST:
		return env_digest_command(argc, argv, optind);
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

/* The heap beside the other mappings, before the first malloc. This
 * handler is a static PIE: the kernel maps it among the shared
 * mappings but starts its brk far from them (at ELF_ET_DYN_BASE), so
 * the first touch of a brk heap builds a branch of page tables of its
 * own, measured at 0.05-0.5 ms a request on a paravirtualized machine,
 * where a first page beside the binary costs some 15 us. A PROT_NONE
 * page where the brk begins makes brk fail, and malloc (musl's, or
 * glibc's) then takes its memory from mmap, next to the rest. Nothing
 * else here uses brk; a kernel that cannot place the page (before
 * MAP_FIXED_NOREPLACE, 4.17) leaves the heap where it was. */
static void heap_beside_mappings(void)
{
	long brk0 = syscall(SYS_brk, 0);
	void *g;

	if (brk0 <= 0 || (brk0 & 4095))
		return;
	g = mmap((void *)brk0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0);
	if (g != MAP_FAILED && g != (void *)brk0)
		munmap(g, 4096);
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
	jbuf_free(&x->au.files_in);
	jbuf_free(&x->au.files_out);
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
	free(opt.environments);
	if (x->slot_fd >= 0)
		close(x->slot_fd);
}

int main(int argc, char **argv)
{
	/* static, not on the stack: its 32 KiB start as zero pages the
	 * kernel maps on first write, where an initializer would clear
	 * (and so fault in) every one of them, some 20 us a page on a
	 * paravirtualized machine */
	static struct ctx x;
	int cmd = CMD_SERVE;

	heap_beside_mappings();					/*  0 before any malloc */
	sbx_phase_open();				/*    make bench-phases only */
	x.c.in = x.c.out = x.c.sig_fd = -1;
	x.slot_fd = x.slot = -1;
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
		ctx_free(&x);
		return 1;
	}
	load_key(&x);						/*  5 the key */
	if (refuse_if_misconfigured(&x) == 0 &&			/*  6 503 */
	    read_request_head(&x) == 0 &&			/*  7 head, target, framing */
	    route_request(&x) == 0 &&				/*  8 404, 405 */
	    admit(&x) == 0 &&					/*  9 browser, Host, key, JSON */
	    read_request_body(&x) == 0) {			/* 10 the body */
		sbx_phase_mark(SBX_PH_REQUEST);
		x.route->serve(&x);				/* 11 serve */
	}
	conn_end_answer(&x.c);					/* 12 the answer's end */
	if (x.au.enabled && x.au.status)			/* 13 the journal record */
		audit_send(&x.au);
	/* A request read whole has nothing in flight (unless bytes after
	 * it were left unread): no wait then (nor after a SIGTERM mid-run). */
	conn_close_lingering(&x.c, !x.request_read || x.unread);	/* 14 close */
	ctx_free(&x);
	sbx_phase_mark(SBX_PH_EXIT);
	sbx_phase_dump();
	return x.exit;						/* 15 */
}
