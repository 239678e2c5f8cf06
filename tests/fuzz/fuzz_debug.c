/* libFuzzer target for the debug surface's readers: the first byte picks
 * dbg_parse (list / block / pipeline), dbg_query_param or
 * http_host_is_loopback; the rest is the input, copied to an exact-size
 * heap buffer. Besides the sanitizers it checks:
 *  - success: blocks with interpreters, NUL-terminated text no longer
 *    than the input, 0 < nblocks <= 3 for the runs, exactly one block
 *    for run-block (allowed), every block allowed for the pipeline; the
 *    list's answer (dbg_blocks) is valid JSON with one entry per block;
 *  - failure: 400/403 with a type and message, the request left zeroed
 *    (503 server_overloaded only when memory ran out);
 *  - a query value is never longer than the target and NUL-terminated;
 *  - a loopback Host never holds a byte outside [0-9A-Za-z.:[\]-]. */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "json/debug.h"
#include "json/jstr.h"
#include "json/request.h"
#include "http/target.h"
#include "tests/fuzz/common.h"

#define MAX_BLOCKS 3

static const struct req_limits lim = {
	.max_blocks = MAX_BLOCKS, .max_skipped = 4,
	.max_files = 4, .max_file_bytes = 1024, .max_files_bytes = 2048,
};

static void check_text(const char *p, size_t len, size_t size)
{
	CHECK(p != NULL);
	CHECK(len <= size);
	CHECK(p[len] == '\0');
}

static void parse(const char *in, size_t n, enum req_debug what)
{
	struct chat_request r;
	struct req_error e;
	size_t block = (size_t)-1;
	int rc = dbg_parse(in, n, fuzz_registry(), &lim, what, &r, &block, &e);

	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(e.status == 400 || e.status == 403 || e.status == 413 || e.status == 503);
		CHECK((e.status == 503) == (e.code && !strcmp(e.code, "server_overloaded")));
		CHECK(e.type && e.message[0]);
		CHECK(r.blocks == NULL && r.nblocks == 0 && r.code_text == NULL &&
		      r.stdin_data == NULL && r.bag == NULL && r.skipped == NULL &&
		      r.files == NULL && r.nfiles == 0);
		return;
	}
	CHECK(r.nfiles <= lim.max_files && r.files_bytes <= lim.max_files_bytes);
	CHECK(what != REQ_DEBUG_LIST || r.nfiles == 0);
	CHECK(r.nblocks <= MAX_BLOCKS);
	CHECK(what == REQ_DEBUG_LIST || r.nblocks >= 1);
	if (what == REQ_DEBUG_BLOCK)
		CHECK(r.nblocks == 1 && block <= MAX_BLOCKS);
	for (size_t i = 0; i < r.nblocks; i++) {
		CHECK(r.blocks[i].interp);
		CHECK(what == REQ_DEBUG_LIST || r.blocks[i].interp->allowed);
		check_text(r.blocks[i].label, strlen(r.blocks[i].label), n);
		check_text(r.blocks[i].code, r.blocks[i].code_len, n);
	}
	check_text(r.code_text, r.code_text_len, n);
	if (r.stdin_data)
		check_text(r.stdin_data, r.stdin_len, n);
	if (r.bag)	/* cJSON prints a raw control byte as \u00XX */
		check_text(r.bag, r.bag_len, 6 * n + 64);
	if (what == REQ_DEBUG_LIST) {
		struct jbuf b = {0};
		cJSON *j;

		dbg_blocks(&b, &r);
		CHECK(!b.oom);
		j = cJSON_ParseWithLength(b.p, b.len);
		CHECK(j != NULL);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "blocks")) == (int)r.nblocks);
		cJSON_Delete(j);
		jbuf_free(&b);
	}
	req_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in, *v = NULL;
	size_t n, len;
	int rc;

	if (size == 0)
		return 0;
	n = size - 1;
	in = fuzz_copy(data + 1, n);
	switch (data[0] % 5) {
	case 0: parse(in, n, REQ_DEBUG_LIST); break;
	case 1: parse(in, n, REQ_DEBUG_BLOCK); break;
	case 2: parse(in, n, REQ_DEBUG_PIPELINE); break;
	case 3:
		rc = http_query_param(in, n, "body", &v, &len);
		CHECK(rc == 0 || rc == -1 || rc == -2 || rc == -3);
		if (rc == 0)
			check_text(v, len, n);
		else
			CHECK(v == NULL);
		free(v);
		break;
	case 4:
		if (http_host_is_loopback(in, n))
			for (size_t i = 0; i < n; i++)
				CHECK(strchr("0123456789abcdefghijklmnopqrstuvwxyz"
					     "ABCDEFGHIJKLMNOPQRSTUVWXYZ.:[]-", in[i]) && in[i]);
		break;
	}
	free(in);
	return 0;
}
