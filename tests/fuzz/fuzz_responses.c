/* libFuzzer target for the Responses face's reader (json/responses.c):
 * the input, copied to an exact-size heap buffer, is a POST
 * /v1/responses body; it goes through rsp_translate, then as
 * handler/responses.c takes it: req_parse of the chat body, and
 * rsp_fix_error on a refusal. Besides the sanitizers it checks:
 *  - rsp_translate's success: the chat body NUL-terminated at chat_len,
 *    NUL-free valid UTF-8, a JSON object whose "messages" array has one
 *    entry per map entry; the map -1 (instructions) only first, -2
 *    (input as a string) only once and last, item indexes increasing;
 *    metadata the JSON text of an object;
 *  - its failure: status 400, 413 or 503 (503 only as
 *    server_overloaded), a type and a non-empty NUL-terminated message,
 *    the face left empty;
 *  - req_parse of the chat body: accepted, or refused with 400, 403,
 *    413 or 503 (503 only as server_overloaded) and a message; after
 *    rsp_fix_error the message still non-empty and NUL-terminated, no
 *    longer naming messages[N] for a message the map knows, param never
 *    "messages". */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jstr.h"
#include "json/request.h"
#include "json/responses.h"
#include "tests/fuzz/common.h"

static const struct req_limits lim = {
	.max_blocks = 16, .max_skipped = 4,
	.max_files = 4, .max_file_bytes = 1024, .max_files_bytes = 2048,
};

static void check_error(const struct req_error *e, int translate)
{
	CHECK(e->status == 400 || e->status == 413 || e->status == 503 ||
	      (!translate && e->status == 403));
	CHECK((e->status == 503) == (e->code && !strcmp(e->code, "server_overloaded")));
	CHECK(e->type != NULL);
	CHECK(memchr(e->message, '\0', sizeof e->message) != NULL);
	CHECK(e->message[0] != '\0');
	if (e->status == 403)
		CHECK(e->code != NULL);
}

static void check_face(const struct rsp_face *f)
{
	cJSON *j, *md;

	CHECK(f->chat && f->chat_len == strlen(f->chat));
	CHECK(jstr_utf8_valid(f->chat, f->chat_len));
	j = cJSON_ParseWithLength(f->chat, f->chat_len);
	CHECK(j && cJSON_IsObject(j));
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages")));
	CHECK((size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "messages")) ==
	      f->nmap);
	cJSON_Delete(j);
	CHECK(f->nmap >= 1 && f->map);
	for (size_t i = 0; i < f->nmap; i++) {
		CHECK(f->map[i] >= -2);
		if (f->map[i] == -1)
			CHECK(i == 0);
		if (f->map[i] == -2)
			CHECK(i == f->nmap - 1 && (i == 0 || f->map[0] == -1));
		if (f->map[i] >= 0 && i && f->map[i - 1] >= 0)
			CHECK(f->map[i] > f->map[i - 1]);
	}
	CHECK(f->metadata);
	md = cJSON_Parse(f->metadata);
	CHECK(md && cJSON_IsObject(md));
	cJSON_Delete(md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsp_face f;
	struct chat_request r;
	struct req_error e;
	char *body;
	int rc;

	body = fuzz_copy(data, size);
	rc = rsp_translate(body, size, &f, &e);
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		check_error(&e, 1);
		CHECK(!f.chat && !f.metadata && !f.map && f.nmap == 0);
		rsp_face_free(&f);
		free(body);
		return 0;
	}
	check_face(&f);
	rc = req_parse(f.chat, f.chat_len, fuzz_registry(), &lim, &r, &e);
	CHECK(rc == 0 || rc == -1);
	if (rc == 0) {
		CHECK(r.nblocks >= 1 || r.rerun_guard);
		req_free(&r);
	} else {
		unsigned long n;
		char *end;

		check_error(&e, 0);
		rsp_fix_error(&f, &e);
		check_error(&e, 0);
		CHECK(!e.param || strcmp(e.param, "messages"));
		if (!strncmp(e.message, "messages[", 9)) {
			n = strtoul(e.message + 9, &end, 10);
			CHECK(*end != ']' || n >= f.nmap);
		}
	}
	rsp_face_free(&f);
	free(body);
	return 0;
}
