/* Out of memory while reading a request is the server's condition: the
 * answer is 503 server_error "server_overloaded" (retry), never a 4xx
 * (which tells a client the request itself is wrong), and nothing leaks
 * or crashes on the way out.
 *
 * This executable defines malloc, calloc, realloc, free and strdup: the
 * library's calls, cJSON's (a shared library: it binds to these) and
 * libc's own all land here. Each forwards to the allocator underneath
 * (glibc's, or AddressSanitizer's under make sanitize, so ASan still
 * watches every block), counts the blocks alive, and, when armed with
 * k, makes the k-th allocation from then on fail (only that one).
 *
 * For each reader and a realistic input the sweep runs k = 1, 2, 3, ...
 * until a run sees no failed allocation. Every run where one failed must
 * end in 503 server_overloaded (the agent, whose code already ran, in
 * its invalid_changes error, or with the caller's buffer marked oom), and
 * after req_free every run must leave as many blocks alive as before. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/agent.h"
#include "json/response.h"
#include "json/debug.h"
#include "json/request.h"
#include "tests/tap.h"
#include "http/target.h"
#include "tests/debug-query.h"


#ifdef __SANITIZE_ADDRESS__
void *__interceptor_malloc(size_t n);
void *__interceptor_calloc(size_t n, size_t size);
void *__interceptor_realloc(void *p, size_t n);
void __interceptor_free(void *p);
#define REAL(f) __interceptor_##f
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
#define REAL(f) __libc_##f
#endif

/* volatile: the compiler takes malloc for the builtin, which touches no
 * variable of ours, and would move these across a call of it */
static volatile long countdown;	/* > 0: the countdown-th allocation fails */
static volatile int refused;	/* an allocation was made to fail */
static volatile long alive;	/* blocks handed out and not yet freed */
static volatile long allocs;	/* allocations since the last arm() */

static int fail_now(void)
{
	allocs++;
	if (countdown > 0 && --countdown == 0) {
		refused = 1;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	void *p;

	if (fail_now())
		return NULL;
	p = REAL(malloc)(n);
	if (p)
		alive++;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p;

	if (fail_now())
		return NULL;
	p = REAL(calloc)(n, size);
	if (p)
		alive++;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p;

	if (!old)
		return malloc(n);
	if (n == 0) {
		free(old);
		return NULL;
	}
	if (fail_now())
		return NULL;
	p = REAL(realloc)(old, n);
	return p;
}

void free(void *p)
{
	if (p)
		alive--;
	REAL(free)(p);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

static void arm(long k)
{
	countdown = k;
	refused = 0;
	allocs = 0;
}

static void disarm(void)
{
	countdown = 0;
}

/* ---- the inputs: requests that touch every allocation of a reader ---- */

#define FIN "{\"type\":\"function\",\"function\":{\"name\":\"finish\",\"parameters\":{\"type\":\"object\"}}}"
#define WRITE "{\"type\":\"function\",\"function\":{\"name\":\"write_note\"}}"

/* scalars, tools, system stdin, text parts, a bag, two runnable blocks
 * and a skipped fence, an assistant turn before */
static const char chat_full[] =
	"{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
	"\"n\":1,\"temperature\":0.2,\"codellm\":{\"timeout_s\":5},"
	"\"tools\":[" WRITE "," FIN "],"
	"\"messages\":["
	"{\"role\":\"system\",\"content\":\"You are a runner.\"},"
	"{\"role\":\"user\",\"content\":\"hi\"},"
	"{\"role\":\"assistant\",\"content\":null},"
	"{\"role\":\"user\",\"name\":\"fleet_input\",\"content\":\"{\\\"notes\\\":[1,2]}\"},"
	"{\"role\":\"user\",\"name\":\"stdin\",\"content\":[{\"type\":\"text\",\"text\":\"in\"},"
	"{\"type\":\"text\",\"text\":\"put\\n\"}]},"
	"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Run:\\n```python\\nimport sys\\n"
	"print(sys.stdin.read())\\n```\\n\"},{\"type\":\"text\",\"text\":\"```json\\n{}\\n```\\n"
	"```bash\\ntr a-z A-Z\\n```\\n\\u00e9\\ud83d\\ude00\"}]}]}";

/* model python, no fence: the whole last user message runs */
static const char chat_whole[] =
	"{\"model\":\"python\",\"messages\":[{\"role\":\"system\",\"content\":\"3 4\"},"
	"{\"role\":\"user\",\"content\":\"print(input())\"}]}";

/* no runnable block: the 400 lists the labels seen */
static const char chat_none[] =
	"{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"system\",\"content\":\"```text\\nx\\n```\"},"
	"{\"role\":\"user\",\"content\":\"```json\\n{}\\n```\\n```mermaid\\ngraph\\n```\"}]}";

/* a rerun guard turn */
static const char chat_rerun[] =
	"{\"model\":\"gpt-4o\",\"tools\":[" FIN "],\"messages\":["
	"{\"role\":\"user\",\"content\":\"```sh\\necho hi\\n```\"},"
	"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\","
	"\"function\":{\"name\":\"finish\",\"arguments\":\"{}\"}}]},"
	"{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"done\"}]}";

#define MD "```python\\nprint(1)\\n```\\ntext\\n```text\\nnot code\\n```\\n```bash\\ncat\\n```\\n"

static const char dbg_list[] = "{\"body\":\"" MD "\"}";
static const char dbg_block[] =
	"{\"body\":\"" MD "\",\"block\":1,\"stdin\":\"abc\",\"input\":{\"k\":[1,\"two\",null]}}";
static const char dbg_pipe[] =
	"{\"body\":\"" MD "\",\"stdin\":\"abc\",\"input\":\"a bag as text\"}";
static const char dbg_query[] =
	"/debug/blocks?x=1&body=%60%60%60python%0Aprint(1)%0A%60%60%60%0A%60%60%60json%0A%7B%7D%0A%60%60%60";

static const char agent_out[] =
	"{\"changes\":[{\"path\":\"notes/a.md\",\"content\":\"# A\\n\"},"
	"{\"path\":\"b.md\",\"find\":\"old\",\"replace\":\"new\"}],\"answer\":\"done \\u00e9\"}";

/* ---- one reader, one input ------------------------------------------- */

enum reader { CHAT, DEBUG_LIST, DEBUG_BLOCK, DEBUG_PIPELINE, DEBUG_QUERY };

struct outcome {
	int rc;
	struct req_error e;
	size_t nblocks, nskipped;
};

static struct registry reg;
static const struct req_limits lim = { .max_blocks = 16, .max_skipped = 16 };

static void read_once(enum reader rd, const char *in, struct outcome *o)
{
	struct chat_request r;
	size_t block = 0;

	memset(o, 0, sizeof *o);
	switch (rd) {
	case CHAT:
		o->rc = req_parse(in, strlen(in), &reg, &lim, &r, &o->e);
		break;
	case DEBUG_LIST:
	case DEBUG_BLOCK:
	case DEBUG_PIPELINE:
		o->rc = dbg_parse(in, strlen(in), &reg, &lim,
					rd == DEBUG_LIST ? REQ_DEBUG_LIST :
					rd == DEBUG_BLOCK ? REQ_DEBUG_BLOCK : REQ_DEBUG_PIPELINE,
					&r, &block, &o->e);
		break;
	case DEBUG_QUERY:
		o->rc = parse_query(in, strlen(in), &reg, &lim, &r, &o->e);
		break;
	}
	o->nblocks = r.nblocks;
	o->nskipped = r.nskipped;
	req_free(&r);
}

static int is_overloaded(const struct outcome *o)
{
	return o->rc == -1 && o->e.status == 503 && o->e.type &&
	       !strcmp(o->e.type, "server_error") && o->e.code &&
	       !strcmp(o->e.code, "server_overloaded") &&
	       strstr(o->e.message, "out of memory");
}

/* The sweep over one reader; want_rc and want_status describe the
 * answer with memory to spare. */
static void sweep(const char *name, enum reader rd, const char *in, int want_rc,
		  int want_status)
{
	struct outcome base, o;
	long k, failures = 0, before;
	int ok = 1, leak_ok = 1;

	before = alive;
	read_once(rd, in, &base);
	if (!tap_ok(base.rc == want_rc && (want_rc == 0 || base.e.status == want_status) &&
		    alive == before, "%s: with memory to spare: rc %d%s", name, want_rc,
		    want_rc ? " and its 4xx" : ""))
		tap_diag("rc %d status %d: %s; %ld blocks left alive", base.rc, base.e.status,
			 base.e.message, alive - before);
	for (k = 1;; k++) {
		before = alive;
		arm(k);
		read_once(rd, in, &o);
		disarm();
		if (alive != before) {
			if (leak_ok)
				tap_diag("k %ld: %ld blocks left alive", k, alive - before);
			leak_ok = 0;
		}
		if (!refused)
			break;
		failures++;
		if (!is_overloaded(&o)) {
			if (ok)
				tap_diag("k %ld of %ld allocations: rc %d status %d code %s: %s", k,
					 allocs, o.rc, o.e.status, o.e.code ? o.e.code : "(null)",
					 o.e.message);
			ok = 0;
		}
	}
	tap_ok(failures > 0 && o.rc == base.rc && o.nblocks == base.nblocks &&
	       o.nskipped == base.nskipped,
	       "%s: %ld allocations, each failing once; then the same answer as with memory",
	       name, failures);
	tap_ok(ok, "%s: every failed allocation is 503 server_error server_overloaded, "
	       "never 4xx", name);
	tap_ok(leak_ok, "%s: no run leaves a block alive", name);
}

/* The agent reads the output of code that ran: SPEC §6 never answers
 * 5xx then (a client would retry and run the code again), so out of
 * memory is its invalid_changes error, or the caller's buffer is
 * marked oom (the handler answers that as it does for any answer it
 * could not build). Either way nothing leaks. */
static void sweep_agent(void)
{
	static char w[] = "write_note", p[] = "patch_note", f[] = "finish";
	static char *const tools[] = { w, p, f };
	struct agent_error e;
	long k, failures = 0, rc = 0, before;
	int ok = 1, leak_ok = 1;

	for (k = 1;; k++) {
		struct jbuf b = {0};

		before = alive;
		arm(k);
		rc = agent_tool_calls(agent_out, strlen(agent_out), tools, 3, "chatcmpl-test", &b, &e);
		disarm();
		if (refused) {
			failures++;
			if (!(rc == -1 ? e.code && !strcmp(e.code, "invalid_changes") &&
			      strstr(e.message, "out of memory") && b.len == 0 : b.oom)) {
				if (ok)
					tap_diag("k %ld: rc %ld oom %d: %s", k, rc, b.oom,
						 rc < 0 ? e.message : "");
				ok = 0;
			}
		}
		jbuf_free(&b);
		if (alive != before)
			leak_ok = 0;
		if (!refused)
			break;
	}
	tap_ok(failures > 0 && rc == 2, "agent: %ld allocations, each failing once; then 2 changes",
	       failures);
	tap_ok(ok, "agent: every failed allocation is invalid_changes \"out of memory\" "
	       "or a buffer marked oom");
	tap_ok(leak_ok, "agent: no run leaves a block alive");
}

/* The interposition itself: a failed allocation is NULL and counted, and
 * cJSON's allocations come here too. */
static void check_interposer(void)
{
	struct chat_request r;
	struct req_error e;
	void *volatile p;	/* or the compiler drops the malloc and free pair */

	arm(1);
	p = malloc(16);
	disarm();
	tap_ok(p == NULL && refused, "the armed allocation fails");
	free(p);
	arm(1);
	tap_ok(req_parse("{}", 2, &reg, &lim, &r, &e) == -1 && refused && e.status == 503,
	       "cJSON's first allocation is one of ours: {} → 503");
	disarm();
	req_free(&r);
}

int main(void)
{
	char err[64];

	if (reg_init(&reg) < 0 || reg_allow(&reg, "python,bash", err, sizeof err) < 0)
		abort();
	check_interposer();
	sweep("chat, every field", CHAT, chat_full, 0, 0);
	sweep("chat, whole message", CHAT, chat_whole, 0, 0);
	sweep("chat, no runnable block", CHAT, chat_none, -1, 400);
	sweep("chat, rerun guard", CHAT, chat_rerun, 0, 0);
	sweep("debug list", DEBUG_LIST, dbg_list, 0, 0);
	sweep("debug run-block, input an object", DEBUG_BLOCK, dbg_block, 0, 0);
	sweep("debug run-pipeline, input a string", DEBUG_PIPELINE, dbg_pipe, 0, 0);
	sweep("debug blocks query", DEBUG_QUERY, dbg_query, 0, 0);
	sweep_agent();
	reg_free(&reg);
	return tap_done();
}
