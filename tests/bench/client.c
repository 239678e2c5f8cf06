/* client: make bench's request timer. One TCP connection to 127.0.0.1
 * per request (codellm answers one request per connection and closes),
 * the raw request bytes from a file sent as is, read until EOF, timed
 * from before connect to EOF with CLOCK_MONOTONIC; the answer is checked
 * after the clock stops (status 200, choices[0].message.content).
 *
 *   client lat --n N --warm W --req FILE (--want TEXT | --want-file F)
 *              ARM...                     ARM: PORT or PORT:PID
 *	W warm-up rounds, then N rounds; each round sends one request to
 *	each arm, in an order shuffled anew each round (a fixed seed: the
 *	same orders every time), so that no arm always follows the same
 *	one and pays for what that one leaves the kernel to do after its
 *	handler exits (a network namespace's teardown, say). With a PID
 *	(systemd-socket-activate's), waits before the request, untimed,
 *	until it has no child left, then 5 ms more, and so once more after
 *	the last round. Prints one line per arm: PORT ms1 ... msN (request
 *	order).
 *
 *   client load --clients C --reqs R --req FILE (--want TEXT | --want-file F)
 *               PORT
 *	C threads, R requests each, released together; prints RATE (req/s)
 *	and then "p50_ms p90_ms" over all requests.
 *
 * --want - checks only the status. Any failed check: the port and the
 * first 400 bytes of the answer on stderr, exit 1. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define MAX_ARMS	64
#define CONNECT_TRIES	4	/* the first try and 3 retries */
#define IO_TIMEOUT_S	300	/* a silent server: give up, the check fails */

struct buf {
	char *p;
	size_t len, cap;
};

struct arm {
	int port;
	int pid;		/* 0: do not wait for quiet */
	double *ms;
};

struct opts {
	long n, warm, clients, reqs;
	const char *req_file, *want, *want_file;
	int nargs;
	char **args;
};

/* What every request shares: the bytes to send, the content wanted. */
static struct {
	char *req;
	size_t req_len;
	const char *want;	/* trimmed, want_len bytes; NULL: status only */
	size_t want_len;
} job;

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/* Prints a message and exits 1. */
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Makes room for at least `more` bytes after b->len (plus a NUL). */
static void buf_reserve(struct buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 65536;
	char *np;

	if (b->len + more + 1 <= b->cap)
		return;
	while (b->len + more + 1 > cap)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np)
		die("client: out of memory (%zu bytes)", cap);
	b->p = np;
	b->cap = cap;
}

/* A whole file, NUL-terminated, in b. */
static void read_file(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("client: %s: %s", path, strerror(errno));
	b->len = 0;
	for (;;) {
		ssize_t r;

		buf_reserve(b, 65536);
		r = read(fd, b->p + b->len, b->cap - b->len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("client: %s: %s", path, strerror(errno));
		if (r == 0)
			break;
		b->len += (size_t)r;
	}
	b->p[b->len] = '\0';
	close(fd);
}

/* CLOCK_MONOTONIC in seconds. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps ms milliseconds, resuming after signals. */
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A TCP socket with TCP_NODELAY and I/O timeouts, not yet connected. */
static int new_socket(void)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("client: socket: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

/* Connects fd (replaced on a retry) to 127.0.0.1:port; *t0 is taken just
 * before the connect that succeeds. Returns 0, or -1 with errno. */
static int connect_timed(int *fd, int port, double *t0)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int try, err = 0;

	for (try = 0; try < CONNECT_TRIES; try++) {
		if (try) {
			close(*fd);
			fprintf(stderr, "client: port %d: connect: %s, retrying (timing restarted)\n",
				port, strerror(err));
			sleep_ms(1);	/* before the clock restarts */
			*fd = new_socket();
		}
		*t0 = now();
		do
			err = connect(*fd, (struct sockaddr *)&sa, sizeof sa) ? errno : 0;
		while (err == EINTR);
		if (!err)
			return 0;
		if (err != ECONNREFUSED && err != EAGAIN && err != EADDRNOTAVAIL)
			break;
	}
	errno = err;
	return -1;
}

/* Sends all of p; stops quietly if the peer is gone (its answer, if any,
 * is still read and checked). */
static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Reads fd until EOF (or a reset) into ans, NUL-terminated. */
static void read_all(int fd, struct buf *ans)
{
	ans->len = 0;
	for (;;) {
		ssize_t r;

		if (ans->cap - ans->len < 16384 + 1)
			buf_reserve(ans, ans->cap ? ans->cap : 65536);
		r = read(fd, ans->p + ans->len, ans->cap - ans->len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ans->len += (size_t)r;
	}
	ans->p[ans->len] = '\0';
}

/* One request to port: connect, send, read to EOF; returns the timed
 * span in milliseconds, the answer in ans. */
static double one_request(int port, struct buf *ans)
{
	int fd = new_socket();
	double t0, t1;

	if (connect_timed(&fd, port, &t0) < 0)
		die("client: port %d: connect: %s", port, strerror(errno));
	send_all(fd, job.req, job.req_len);
	read_all(fd, ans);
	t1 = now();
	close(fd);
	return (t1 - t0) * 1000.0;
}

/* Narrows [*s, *e) to leave out leading and trailing whitespace. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* Whether the answer's content, trimmed, is the wanted text. */
static int content_ok(const char *body, size_t len)
{
	const cJSON *msg, *content;
	const char *s, *e;
	cJSON *root = cJSON_ParseWithLength(body, len);
	int ok = 0;

	msg = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"), 0), "message");
	content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	if (cJSON_IsString(content)) {
		s = content->valuestring;
		e = s + strlen(s);
		trim(&s, &e);
		ok = (size_t)(e - s) == job.want_len && !memcmp(s, job.want, job.want_len);
	}
	cJSON_Delete(root);
	return ok;
}

/* Checks an answer: status 200, and the wanted content unless job.want
 * is NULL. On failure prints the port and the answer's start, exits 1. */
static void check(int port, const struct buf *ans)
{
	const char *body = strstr(ans->p, "\r\n\r\n");
	int ok = ans->len >= 12 && !memcmp(ans->p, "HTTP/1.1 200", 12) &&
		 (ans->len == 12 || ans->p[12] == ' ' || ans->p[12] == '\r');

	if (ok && job.want) {
		ok = body != NULL;
		if (ok) {
			body += 4;
			while (*body && isspace((unsigned char)*body))
				body++;
			ok = content_ok(body, ans->len - (size_t)(body - ans->p));
		}
	}
	if (ok)
		return;
	pthread_mutex_lock(&print_lock);
	fprintf(stderr, "client: request failed on port %d: ", port);
	fwrite(ans->p, 1, ans->len < 400 ? ans->len : 400, stderr);
	fputc('\n', stderr);
	exit(1);
}

/* Waits (1 ms polls, at most 5 s) until pid has no child, then 5 ms. */
static void wait_quiet(int pid)
{
	char path[64], c;
	double give_up = now() + 5.0;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t r;

		if (fd < 0)
			break;
		do
			r = read(fd, &c, 1);
		while (r < 0 && errno == EINTR);
		close(fd);
		if (r <= 0)
			break;
		if (now() > give_up) {
			fprintf(stderr, "client: pid %d still has children after 5 s\n", pid);
			break;
		}
		sleep_ms(1);
	}
	sleep_ms(5);
}

/* A positive integer argument, or exit. */
static long number(const char *name, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s ? s : "", &end, 10);
	if (!s || errno || *end || end == s || v < 0)
		die("client: %s wants a number, got '%s'", name, s ? s : "");
	return v;
}

/* Parses --options into o; the other arguments are left in o->args. */
static void parse_opts(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof *o);
	o->clients = o->reqs = 1;
	o->args = calloc((size_t)argc, sizeof *o->args);
	if (!o->args)
		die("client: out of memory");
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strncmp(a, "--", 2)) {
			o->args[o->nargs++] = argv[i];
			continue;
		}
		if (!v)
			die("client: %s wants a value", a);
		i++;
		if (!strcmp(a, "--n"))
			o->n = number(a, v);
		else if (!strcmp(a, "--warm"))
			o->warm = number(a, v);
		else if (!strcmp(a, "--clients"))
			o->clients = number(a, v);
		else if (!strcmp(a, "--reqs"))
			o->reqs = number(a, v);
		else if (!strcmp(a, "--req"))
			o->req_file = v;
		else if (!strcmp(a, "--want"))
			o->want = v;
		else if (!strcmp(a, "--want-file"))
			o->want_file = v;
		else
			die("client: unknown option %s", a);
	}
}

/* Loads the request and the wanted content (trimmed) into job. */
static void load_job(const struct opts *o)
{
	struct buf b = {0};
	const char *we;

	if (!o->req_file)
		die("client: --req FILE is required");
	read_file(o->req_file, &b);
	job.req = b.p;
	job.req_len = b.len;
	if (o->want_file) {
		struct buf w = {0};

		read_file(o->want_file, &w);
		job.want = w.p;
	} else if (o->want) {
		job.want = strcmp(o->want, "-") ? o->want : NULL;
	} else {
		die("client: --want TEXT or --want-file F is required");
	}
	if (!job.want)
		return;
	we = job.want + strlen(job.want);
	trim(&job.want, &we);
	job.want_len = (size_t)(we - job.want);
}

/* A port number 1..65535 from the start of s, or exit. */
static int port_of(const char *s, char **end)
{
	long v = strtol(s, end, 10);

	if (*end == s || v < 1 || v > 65535)
		die("client: bad port in '%s'", s);
	return (int)v;
}

/* Parses ARM arguments (PORT or PORT:PID). */
static int parse_arms(const struct opts *o, struct arm *arms)
{
	int i;

	if (o->nargs < 1 || o->nargs > MAX_ARMS)
		die("client: lat wants 1 to %d arms (PORT or PORT:PID)", MAX_ARMS);
	for (i = 0; i < o->nargs; i++) {
		char *end;

		arms[i].port = port_of(o->args[i], &end);
		arms[i].pid = 0;
		if (*end == ':')
			arms[i].pid = (int)number("PID", end + 1);
		else if (*end)
			die("client: bad arm '%s' (PORT or PORT:PID)", o->args[i]);
		arms[i].ms = calloc((size_t)(o->n ? o->n : 1), sizeof(double));
		if (!arms[i].ms)
			die("client: out of memory");
	}
	return o->nargs;
}

/* The next number of a xorshift64 sequence: the shuffles' source. */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* order[0..n) shuffled in place (Fisher-Yates). */
static void shuffle(int *order, int n, uint64_t *state)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(next_random(state) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

/* client lat: the arms interleaved request by request, in an order
 * shuffled each round. */
static int cmd_lat(const struct opts *o)
{
	struct arm arms[MAX_ARMS];
	struct buf ans = {0};
	int narms = parse_arms(o, arms), order[MAX_ARMS], i;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	long round, k;

	for (i = 0; i < narms; i++)
		order[i] = i;
	for (round = 0; round < o->warm + o->n; round++) {
		shuffle(order, narms, &seed);
		for (int j = 0; j < narms; j++) {
			struct arm *a = &arms[order[j]];
			double ms;

			if (a->pid)
				wait_quiet(a->pid);
			ms = one_request(a->port, &ans);
			check(a->port, &ans);
			if (round >= o->warm)
				a->ms[round - o->warm] = ms;
		}
	}
	/* every arm's last handler done too (it writes its records, e.g.
	 * make bench-phases' marks, after the answer), whichever came last */
	for (i = 0; i < narms; i++)
		if (arms[i].pid)
			wait_quiet(arms[i].pid);
	for (i = 0; i < narms; i++) {
		printf("%d", arms[i].port);
		for (k = 0; k < o->n; k++)
			printf(" %.3f", arms[i].ms[k]);
		printf("\n");
		free(arms[i].ms);
	}
	free(ans.p);
	return 0;
}

struct loader {
	pthread_t tid;
	pthread_barrier_t *go;
	int port;
	long reqs;
	double *ms;		/* reqs slots */
	double end;
};

/* A load thread: waits for the barrier, sends its requests in turn. */
static void *load_thread(void *arg)
{
	struct loader *l = arg;
	struct buf ans = {0};
	long k;

	pthread_barrier_wait(l->go);
	for (k = 0; k < l->reqs; k++) {
		l->ms[k] = one_request(l->port, &ans);
		check(l->port, &ans);
	}
	l->end = now();
	free(ans.p);
	return NULL;
}

/* qsort's order for doubles. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-quantile (0..1) of sorted v[n], linearly interpolated. */
static double quantile(const double *v, size_t n, double p)
{
	double pos = p * (double)(n - 1);
	size_t lo = (size_t)pos;

	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

/* client load: C threads of R requests each against one port. */
static int cmd_load(const struct opts *o)
{
	size_t c, nc = (size_t)o->clients, total = nc * (size_t)o->reqs;
	struct loader *ls = calloc(nc, sizeof *ls);
	double *ms = calloc(total ? total : 1, sizeof *ms), t0, end = 0;
	pthread_barrier_t go;
	char *e;
	int port;

	if (o->nargs != 1)
		die("client: load wants one PORT");
	port = port_of(o->args[0], &e);
	if (*e || !ls || !ms || !nc || !total)
		die("client: load wants --clients and --reqs above 0, and a PORT");
	pthread_barrier_init(&go, NULL, (unsigned)nc + 1);
	for (c = 0; c < nc; c++) {
		ls[c] = (struct loader){ .go = &go, .port = port, .reqs = o->reqs,
					 .ms = ms + c * (size_t)o->reqs };
		if (pthread_create(&ls[c].tid, NULL, load_thread, &ls[c]))
			die("client: pthread_create failed");
	}
	pthread_barrier_wait(&go);
	t0 = now();
	for (c = 0; c < nc; c++) {
		pthread_join(ls[c].tid, NULL);
		if (ls[c].end > end)
			end = ls[c].end;
	}
	qsort(ms, total, sizeof *ms, cmp_double);
	printf("%.2f\n%.3f %.3f\n", (double)total / (end - t0),
	       quantile(ms, total, 0.5), quantile(ms, total, 0.9));
	pthread_barrier_destroy(&go);
	free(ls);
	free(ms);
	return 0;
}

/* Usage on stderr, exit 2. */
static void __attribute__((noreturn)) usage(void)
{
	fputs("usage: client lat --n N --warm W --req FILE (--want TEXT | --want-file F) ARM...\n"
	      "         ARM: PORT or PORT:PID (wait until PID has no child before each request)\n"
	      "       client load --clients C --reqs R --req FILE (--want TEXT | --want-file F) PORT\n"
	      "       --want - checks the status (200) only\n", stderr);
	exit(2);
}

/* client lat | client load: see the top of this file. */
int main(int argc, char **argv)
{
	struct opts o;

	if (argc < 2)
		usage();
	signal(SIGPIPE, SIG_IGN);
	parse_opts(argc - 2, argv + 2, &o);
	if (!strcmp(argv[1], "lat")) {
		load_job(&o);
		return cmd_lat(&o);
	}
	if (!strcmp(argv[1], "load")) {
		load_job(&o);
		return cmd_load(&o);
	}
	usage();
}
