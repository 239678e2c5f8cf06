/* The debug routes (SPEC §8, --debug): the step debugger's page, the
 * blocks a body holds (nothing runs), and the debug face: one block or
 * the whole pipeline run like any other run (slot, sandbox, relay) and
 * answered as one debug object (json/debug.c), with the edges' taps
 * for the pipeline. */
#include <stdlib.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "http/debug-page.h"
#include "http/target.h"
#include "json/debug.h"

int route_page(struct ctx *x)
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
int route_debug_blocks(struct ctx *x)
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

		rc = dbg_parse_query(qrc, md, len, &x->reg, limits(), &r, &e);
		free(md);
	} else
		rc = dbg_parse(x->body, x->body_len, &x->reg, limits(),
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

/* A debug answer: one JSON object once the run ended (as agent mode's,
 * without its stop at the output cap). The face's state is the run
 * block's index in the body. */
static int debug_answer(struct ctx *x, const struct resp_run *rr, int pipeline)
{
	struct dbg_run d = { .id = x->id, .req = rr->req, .res = rr->res,
			     .index = *(const size_t *)x->face_state, .files = rr->files };
	struct jbuf b = {0};
	int status = 200;

	if (pipeline)
		dbg_pipeline_result(&b, &d);
	else
		dbg_block_result(&b, &d);
	jbuf_puts(&b, "\n");
	if (b.oom)
		status = refuse(x, REF_ANSWER_OOM, "x-should-retry: false\r\n",
			      "the answer did not fit in memory; lower --max-tap-bytes");
	else
		respond(x, 200, NULL, &b, 1);
	jbuf_free(&b);
	return status;
}

static int block_answer(struct ctx *x, struct resp_run *rr)
{
	return debug_answer(x, rr, 0);
}

static int pipeline_answer(struct ctx *x, struct resp_run *rr)
{
	return debug_answer(x, rr, 1);
}

static const struct face block_face = { .answer = block_answer };
/* the debug pipeline keeps what crosses each edge */
static const struct face pipeline_face = { .taps = 1, .answer = pipeline_answer };

/* POST /debug/run-block and /debug/run-pipeline: a run like any other
 * (slot, sandbox, relay), answered as one debug object. */
static int route_debug_run(struct ctx *x, int pipeline)
{
	struct chat_request r;
	struct req_error e;
	size_t index = 0;
	int status;

	if (dbg_parse(x->body, x->body_len, &x->reg, limits(),
		      pipeline ? REQ_DEBUG_PIPELINE : REQ_DEBUG_BLOCK, &r, &index, &e) < 0)
		return refuse_request(x, &e);
	audit_request(&x->au, &r, "debug");
	x->face = pipeline ? &pipeline_face : &block_face;
	x->face_state = &index;
	status = take_slot(x);
	if (status == 0)
		status = run_request(x, &r);
	x->face_state = NULL;
	req_free(&r);
	return status;
}

int route_debug_run_block(struct ctx *x)
{
	return route_debug_run(x, 0);
}

int route_debug_run_pipeline(struct ctx *x)
{
	return route_debug_run(x, 1);
}
