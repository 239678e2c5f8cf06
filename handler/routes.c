/* The route bodies that run nothing (the table is in
 * codellm-handler.c) and the two commands that share their checks:
 * /healthz and --probe, the model list; --check. The routes that run
 * code are the faces' (chat.c, responses.c, mcp.c, debug.c). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "json/rolecheck.h"
#include "sandbox/run.h"
#include "sandbox/sandbox.h"

/* Whether the configured mode can run code here, found by setting up a
 * real block (that never runs), and the host's facts beside it. */
static int sandbox_check(struct jbuf *b, char *memory, size_t len)
{
	struct sbx_config cfg;
	struct sbx_health h;
	int ok;

	sandbox_config(&cfg, -1);
	ok = sbx_self_test(&cfg, &h);
	resp_health_sandbox(b, &h);
	if (memory)
		snprintf(memory, len, "%s", h.memory);
	return ok;
}

/* --probe: the per-host check an operator runs before enabling the
 * socket. The JSON is /healthz's "sandbox" object; the exit status says
 * whether the configured mode can run code here. */
int probe(struct ctx *x)
{
	char memory[512];
	struct jbuf b = {0};
	int ok;

	if (config_error[0]) {
		fprintf(stderr, "codellm: configuration error: %s\n", config_error);
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return 1;
	ok = sandbox_check(&b, memory, sizeof memory);
	printf("%s\n", jbuf_cstr(&b) ? b.p : "{}");
	fprintf(stderr, "codellm: --sandbox %s %s run code on this host\n",
		sbx_mode_name(opt.sandbox), ok ? "can" : "cannot");
	fprintf(stderr, "codellm: %s\n", memory);
	jbuf_free(&b);
	reg_free(&x->reg);
	return ok ? 0 : 1;
}

int check_files(struct ctx *x, int argc, char **argv, int first)
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

	if (opt.healthz_cache_s > 0 && runtime_dir(dir, sizeof dir) == 0)
		fd = sbx_shared_open(dir, "healthz.cache");
	if (fd >= 0 && sbx_shared_read(fd, (long)(opt.healthz_cache_s * 1000), buf, sizeof buf,
				       at) >= 2 && (buf[0] == '0' || buf[0] == '1') &&
	    buf[1] == '\n') {
		close(fd);
		jbuf_puts(sb, buf + 2);
		return buf[0] == '1';
	}
	*at = sbx_wall_ms();
	ok = sandbox_check(sb, NULL, 0);
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

int route_healthz(struct ctx *x)
{
	struct jbuf b = {0}, envs = {0};
	int ok;

	/* the environments first: the sandbox check enters a user
	 * namespace of its own, where root's files are nobody's */
	if (opt.environments)
		env_health(x, &envs);
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
	if (opt.environments) {
		/* a tree that fails its check is reported, not a reason to
		 * take the whole server out of rotation: its requests are
		 * refused, the others run */
		jbuf_puts(&b, ",\"environments\":");
		jbuf_append(&b, envs.p, envs.len);
		jbuf_free(&envs);
	}
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
		struct jbuf envs = {0};

		env_models(x, &envs, created);
		resp_models(&b, &x->reg, created, &envs);
		jbuf_free(&envs);
	} else if (resp_model(&b, &x->reg, id, created) < 0 &&
		   env_model(x, &b, id, created) < 0) {
		jbuf_free(&b);
		return refuse(x, REF_MODEL_NOT_FOUND, NULL,
			    "The model `%.128s` does not exist or you do not have access to it. "
			    "codellm: GET /v1/models lists the models it serves", id);
	}
	respond(x, 200, NULL, &b, 0);
	jbuf_free(&b);
	return 200;
}

int route_model_list(struct ctx *x)
{
	return route_models(x, NULL);
}

int route_model(struct ctx *x)
{
	return route_models(x, x->path + strlen("/v1/models/"));
}
