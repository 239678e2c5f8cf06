/* libFuzzer target for req_parse. Besides letting the sanitizers watch
 * for out-of-bounds reads (the input is copied to an exact-size heap
 * buffer, so the replay driver catches them too), it checks what any
 * answer must satisfy:
 *  - success: 1..16 blocks, each with an interpreter from the registry, a
 *    NUL-terminated label and code no longer than the body, code that is
 *    valid UTF-8 without NUL (the body was valid UTF-8 and \u0000 is
 *    refused); every interpreter allowed unless the rerun guard is set;
 *    stdin and bag no longer than the body, stdin never empty-but-set;
 *    at most MAX_SKIPPED skipped fences kept, each label at most
 *    REQ_MAX_LABEL bytes of valid UTF-8, a count of the rest only when
 *    the list is full;
 *    timeout_s 0 or positive and finite;
 *  - failure: status 400 or 403 with a type and a non-empty message, 403
 *    with a code, and the request left zeroed; 503 server_overloaded
 *    only when memory ran out. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/request.h"
#include "tests/fuzz/common.h"

#define MAX_BLOCKS 16
#define MAX_SKIPPED 4

static const struct req_limits lim = {
	.max_blocks = MAX_BLOCKS, .max_skipped = MAX_SKIPPED,
	.max_files = 4, .max_file_bytes = 1024, .max_files_bytes = 2048,
};

static int in_registry(const struct interp *it)
{
	const struct registry *g = fuzz_registry();

	return it >= g->v && it < g->v + g->n;
}

static void check_text(const char *p, size_t len, size_t size)
{
	CHECK(p != NULL);
	CHECK(len <= size);
	CHECK(p[len] == '\0');
	CHECK(memchr(p, '\0', len) == NULL);
	CHECK(jstr_utf8_valid(p, len));
}

static void check_ok(const struct chat_request *r, size_t size)
{
	CHECK(r->model && r->model[0] && strlen(r->model) <= 256);
	CHECK(!r->model_interp || in_registry(r->model_interp));
	CHECK(r->nblocks >= 1 && r->nblocks <= MAX_BLOCKS);
	CHECK(r->blocks != NULL);
	for (size_t i = 0; i < r->nblocks; i++) {
		const struct req_block *b = &r->blocks[i];

		CHECK(b->interp && in_registry(b->interp));
		CHECK(b->interp->allowed || r->rerun_guard);
		CHECK(b->label && strlen(b->label) <= size);
		CHECK(b->label[0] || b->interp == r->model_interp);
		check_text(b->code, b->code_len, size);
		CHECK(b->start_line >= 1 && b->start_line <= b->end_line);
		if (i)
			CHECK(b->start_line > r->blocks[i - 1].end_line);
	}
	/* at most MAX_SKIPPED kept, labels cut to REQ_MAX_LABEL bytes of
	 * whole characters; the rest only counted */
	CHECK(r->nskipped <= MAX_SKIPPED);
	CHECK(!r->skipped_truncated || r->nskipped == MAX_SKIPPED);
	for (size_t i = 0; i < r->nskipped; i++)
		CHECK(r->skipped[i].label && strlen(r->skipped[i].label) <= REQ_MAX_LABEL &&
		      jstr_utf8_valid(r->skipped[i].label, strlen(r->skipped[i].label)) &&
		      r->skipped[i].line >= 1);
	CHECK(r->code_text && r->code_text_len <= size);
	if (r->stdin_data) {
		CHECK(r->stdin_len > 0);
		check_text(r->stdin_data, r->stdin_len, size);
	} else {
		CHECK(r->stdin_len == 0);
	}
	if (r->bag)
		check_text(r->bag, r->bag_len, size);
	else
		CHECK(r->bag_len == 0);
	CHECK(r->timeout_s == 0 || (r->timeout_s > 0 && isfinite(r->timeout_s)));
	CHECK(r->ntools <= REQ_MAX_TOOLS);
	for (size_t i = 0; i < r->ntools; i++)
		CHECK(r->tools[i] && r->tools[i][0]);
	CHECK(r->stream == 0 || r->stream == 1);
	CHECK(r->agent == 0 || r->agent == 1);
	/* files: within every bound, plain unique names */
	{
		size_t total = 0;

		CHECK(r->nfiles <= lim.max_files && (r->nfiles == 0) == (r->files == NULL));
		for (size_t i = 0; i < r->nfiles; i++) {
			const char *n = r->files[i].name;
			size_t nl = strlen(n);

			/* "out" is a name like any (issue 30): the bag's is the
			 * only one the run takes */
			CHECK(nl > 0 && nl <= 255 && n[0] != '.' && !strchr(n, '/') &&
			      strcmp(n, "fleet_input.json") && jstr_utf8_valid(n, nl));
			for (size_t k = 0; k < nl; k++)
				CHECK((unsigned char)n[k] >= 0x20 && n[k] != 0x7f);
			for (size_t k = 0; k < i; k++)
				CHECK(strcmp(n, r->files[k].name));
			CHECK(r->files[i].data && r->files[i].len <= lim.max_file_bytes &&
			      r->files[i].data[r->files[i].len] == '\0');
			total += r->files[i].len;
		}
		CHECK(total == r->files_bytes && total <= lim.max_files_bytes);
	}
}

static void check_fail(const struct chat_request *r, const struct req_error *e)
{
	CHECK(e->status == 400 || e->status == 403 || e->status == 413 || e->status == 503);
	/* 503 is memory running out, never the input's fault */
	CHECK((e->status == 503) == (e->code && !strcmp(e->code, "server_overloaded")));
	CHECK(e->type != NULL);
	CHECK(e->message[0] != '\0');
	CHECK(memchr(e->message, '\0', sizeof e->message) != NULL);
	if (e->status == 403)
		CHECK(e->code != NULL);
	CHECK(r->blocks == NULL && r->nblocks == 0 && r->model == NULL &&
	      r->stdin_data == NULL && r->bag == NULL && r->tools == NULL &&
	      r->code_text == NULL && r->skipped == NULL && r->files == NULL &&
	      r->nfiles == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chat_request r;
	struct req_error e;
	char *body;
	int rc;

	body = fuzz_copy(data, size);
	rc = req_parse(body, size, fuzz_registry(), &lim, &r, &e);
	CHECK(rc == 0 || rc == -1);
	if (rc == 0)
		check_ok(&r, size);
	else
		check_fail(&r, &e);
	req_free(&r);
	free(body);
	return 0;
}
