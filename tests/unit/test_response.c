/* Tests for json/response.c's run writers fed plain sandbox/result.h
 * data (no pipeline): the "sandbox" object, the health object, the
 * codellm object and the completion; and the sandbox's side of those
 * facts: the exit status decided once (sbx_result_decide), the layers a
 * run reports (sbx_run_layers) and the layer list as text. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/response.h"
#include "sandbox/internal.h"
#include "sandbox/run.h"
#include "tests/tap.h"

static const char *render_sandbox(const struct sbx_layers *l)
{
	static struct jbuf b;

	b.len = 0;
	resp_sandbox(&b, l);
	return jbuf_cstr(&b);
}

static void test_sandbox_object(void)
{
	struct sbx_layers l = { SBX_NATIVE, SBX_NET_OWN, SBX_ALL_LAYERS, 0, 0 };

	tap_ok(!strcmp(render_sandbox(&l),
		       "{\"mode\":\"native\",\"layers\":[\"userns\",\"pidns\",\"mountns\","
		       "\"netns\",\"ipcns\",\"utsns\",\"cgroupns\",\"workdir\",\"groups\","
		       "\"ucounts\",\"root\",\"proc\",\"init\",\"rlimits\",\"no_new_privs\","
		       "\"caps\",\"landlock\",\"seccomp\"],\"missing\":[],\"net\":\"own\"}"),
	       "sandbox object: native, every layer, in order");
	l = (struct sbx_layers){ SBX_BESTEFFORT, SBX_NET_SHARED,
				 SBX_BIT(SBX_L_ROOT) | SBX_BIT(SBX_L_SECCOMP),
				 SBX_BIT(SBX_L_USERNS) | SBX_BIT(SBX_L_LANDLOCK), 0 };
	tap_ok(!strcmp(render_sandbox(&l),
		       "{\"mode\":\"besteffort\",\"layers\":[\"root\",\"seccomp\"],"
		       "\"missing\":[\"userns\",\"landlock\"],\"net\":\"shared\"}"),
	       "sandbox object: besteffort, some applied, some missing");
}

/* What a run reports, from its policy: applied less what went missing,
 * everything missing under off, a network left out on purpose not. */
static void test_run_layers(void)
{
	struct sbx_run run;
	struct sbx_layers l;

	memset(&run, 0, sizeof run);
	run.pol.mode = SBX_NATIVE;
	run.pol.net = SBX_NET_SHARED;
	run.pol.layers = SBX_ALL_LAYERS & ~SBX_BIT(SBX_L_NETNS);
	sbx_run_layers(&run, 0, &l);
	tap_ok(l.applied == run.pol.layers && l.missing == 0 && l.absent == 0 &&
	       l.net == SBX_NET_SHARED, "shared network: netns neither applied nor missing");
	run.pol.mode = SBX_BESTEFFORT;
	run.missing = SBX_BIT(SBX_L_LANDLOCK);
	sbx_run_layers(&run, SBX_BIT(SBX_L_SECCOMP), &l);
	tap_ok(l.applied == (run.pol.layers & ~(SBX_BIT(SBX_L_LANDLOCK) | SBX_BIT(SBX_L_SECCOMP))) &&
	       l.missing == (SBX_BIT(SBX_L_LANDLOCK) | SBX_BIT(SBX_L_SECCOMP)) &&
	       l.absent == l.missing, "besteffort: the run's and the blocks' missing layers");
	memset(&run, 0, sizeof run);
	run.pol.mode = SBX_OFF;
	run.pol.net = SBX_NET_HOST;
	sbx_run_layers(&run, 0, &l);
	tap_ok(l.applied == 0 && l.missing == SBX_ALL_LAYERS && l.absent == 0,
	       "off: nothing applied, every layer reported missing, none absent");
}

static void test_layer_list(void)
{
	char buf[256], tiny[8];

	sbx_layer_list(buf, sizeof buf, SBX_BIT(SBX_L_NETNS) | SBX_BIT(SBX_L_SECCOMP), ", ");
	tap_ok(!strcmp(buf, "netns, seccomp"), "layer list: joined, in order");
	sbx_layer_list(buf, sizeof buf, 0, ",");
	tap_ok(!strcmp(buf, ""), "layer list: none is empty");
	sbx_layer_list(tiny, sizeof tiny, SBX_ALL_LAYERS, ",");
	tap_ok(strlen(tiny) == sizeof tiny - 1 && !strncmp(tiny, "userns,", 7),
	       "layer list: cut to fit, NUL-terminated");
}

static void test_health(void)
{
	struct sbx_health h;
	struct jbuf b = {0};

	memset(&h, 0, sizeof h);
	h.mode = SBX_NATIVE;
	h.host = (struct sbx_probe){ 1, -1, 1, 0, 1 };
	h.layers = (struct sbx_layers){ SBX_NATIVE, SBX_NET_OWN, 0, 0, 0 };
	h.failed_layer = SBX_L_LANDLOCK;
	snprintf(h.error, sizeof h.error, "landlock: \"ABI\" 2");
	snprintf(h.memory, sizeof h.memory, "memory: unbounded by cgroup (\"x\")");
	resp_health_sandbox(&b, &h);
	tap_ok(!strcmp(jbuf_cstr(&b),
		       "{\"mode\":\"native\",\"available\":false,\"userns\":true,"
		       "\"landlock_abi\":0,\"seccomp\":true,\"cgroup2\":false,\"sandbox\":"
		       "{\"mode\":\"native\",\"layers\":[],\"missing\":[],\"net\":\"own\"},"
		       "\"memory\":\"memory: unbounded by cgroup (\\\"x\\\")\","
		       "\"failed_layer\":\"landlock\",\"error\":\"landlock: \\\"ABI\\\" 2\"}"),
	       "health: unavailable names the layer and escapes the reason");
	b.len = 0;
	h.available = 1;
	h.failed_layer = -1;
	resp_health_sandbox(&b, &h);
	tap_ok(!strstr(jbuf_cstr(&b), "failed_layer") && strstr(jbuf_cstr(&b), "\"available\":true"),
	       "health: available has no failed_layer");
	jbuf_free(&b);
}

/* pipefail: the last failing block decides; 124 after the timeout;
 * the last block when all succeeded. */
static void test_decide(void)
{
	static const struct { int codes[3]; int end; int want; size_t decider; } rows[] = {
		{ { 0, 0, 0 }, SBX_END_NORMAL, 0, 2 },
		{ { 1, 0, 0 }, SBX_END_NORMAL, 1, 0 },
		{ { 141, 2, 0 }, SBX_END_NORMAL, 2, 1 },
		{ { 0, 0, 137 }, SBX_END_TIMEOUT, 124, 2 },
		{ { 0, 0, 0 }, SBX_END_TIMEOUT, 124, 2 },
		{ { 0, 143, 0 }, SBX_END_SIGNAL, 143, 1 },
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct sbx_block_result res[3] = {0};
		struct sbx_result r = { .n = 3, .res = res, .end = rows[i].end };

		for (size_t k = 0; k < 3; k++)
			res[k].exit_code = rows[i].codes[k];
		r.exit_code = -1;
		sbx_result_decide(&r);
		tap_ok(r.exit_code == rows[i].want && r.decider == rows[i].decider,
		       "exit status row %zu: %d from block %zu", i, r.exit_code, r.decider);
	}
}

static cJSON *parse_codellm(const struct resp_run *rr, struct jbuf *b)
{
	b->len = 0;
	resp_completion(b, rr);
	return cJSON_ParseWithLength(b->p, b->len);
}

static void test_codellm(void)
{
	struct interp py = { .name = (char *)(uintptr_t)"python" };
	struct req_block blocks[2] = { { .interp = &py }, { .interp = &py } };
	struct chat_request req = { .model = (char *)(uintptr_t)"codellm", .blocks = blocks,
				    .nblocks = 2 };
	struct sbx_block_result res[2] = {0};
	char err0[] = "first\n", err1[] = "Traceback\n", out[] = "hi\n";
	struct sbx_result r = { .n = 2, .res = res, .out = { out, 3, 0, 0, 0 },
				.out_bytes = 3, .duration_ms = 7 };
	struct resp_run rr = { .id = "chatcmpl-1", .created = 5, .req = &req, .res = &r,
			       .changes = -1 };
	struct jbuf b = {0};
	cJSON *j, *c;

	res[0] = (struct sbx_block_result){ .exit_code = 0, .err = { err0, 6, 0, 0, 0 },
					    .err_bytes = 6, .started = 1 };
	res[1] = (struct sbx_block_result){ .exit_code = 1, .err = { err1, 10, 0, 0, 0 },
					    .err_bytes = 10, .started = 1 };
	r.exit_code = 1;
	r.decider = 1;
	j = parse_codellm(&rr, &b);
	c = cJSON_GetObjectItem(j, "codellm");
	tap_ok(j && cJSON_GetObjectItem(c, "exit_code")->valueint == 1 &&
	       !strcmp(cJSON_GetObjectItem(c, "stderr")->valuestring, "Traceback\n") &&
	       cJSON_GetObjectItem(c, "blocks")->valueint == 2 &&
	       !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "sandbox"), "mode")->valuestring,
		       "native") &&
	       !strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0)->child->next
			       ->child->next->valuestring, "hi\n"),
	       "completion: the decider's stderr, the sandbox object, the content");
	tap_ok(strstr(jbuf_cstr(&b), "\"finish_reason\":\"stop\"") && !strstr(jbuf_cstr(&b), "rerun_guard"),
	       "completion: stop, no rerun_guard");
	cJSON_Delete(j);
	r.end = SBX_END_SIGNAL;
	r.end_signal = 15;
	j = parse_codellm(&rr, &b);
	c = cJSON_GetObjectItem(j, "codellm");
	tap_ok(j && cJSON_GetObjectItem(c, "terminated_by_signal")->valueint == 15 &&
	       strstr(jbuf_cstr(&b), "\"finish_reason\":\"length\""),
	       "completion: a signal-ended run is length and names the signal");
	cJSON_Delete(j);
	rr.res = NULL;
	j = parse_codellm(&rr, &b);
	c = cJSON_GetObjectItem(j, "codellm");
	tap_ok(j && cJSON_IsNull(cJSON_GetObjectItem(c, "sandbox")) &&
	       cJSON_IsTrue(cJSON_GetObjectItem(c, "rerun_guard")) &&
	       cJSON_GetObjectItem(c, "blocks")->valueint == 0 &&
	       strstr(jbuf_cstr(&b), "\"stderr\":\"\",\"sandbox\":null"),
	       "completion: nothing ran is sandbox null, rerun_guard");
	cJSON_Delete(j);
	jbuf_free(&b);
}

int main(void)
{
	test_sandbox_object();
	test_run_layers();
	test_layer_list();
	test_health();
	test_decide();
	test_codellm();
	return tap_done();
}
