/* GET /debug/blocks?body=…, decoded as the handler does it: the query
 * parameter by http/, the markdown by json/ (the tests' shared helper). */
#ifndef CODELLM_TESTS_DEBUG_QUERY_H
#define CODELLM_TESTS_DEBUG_QUERY_H

#include <stdlib.h>

#include "http/target.h"
#include "json/debug.h"

static inline int parse_query(const char *t, size_t n, const struct registry *reg,
			      const struct req_limits *lim, struct chat_request *r,
			      struct req_error *e)
{
	char *md = NULL;
	size_t len = 0;
	int qrc = http_query_param(t, n, "body", &md, &len), rc;

	rc = dbg_parse_query(qrc, md, len, reg, lim, r, e);
	free(md);
	return rc;
}

#endif
