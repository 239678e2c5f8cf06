/* The journal record of a request (SPEC §9): one per request but
 * /healthz, sent by the handler itself through sd_journal_send, with a
 * fixed MESSAGE_ID per kind (units/codellm.catalog documents them).
 * Never the key, a presented bearer, note content or code. */
#ifndef CODELLM_AUDIT_H
#define CODELLM_AUDIT_H

#include "json/jstr.h"

#define AUDIT_ID_RAN     "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
#define AUDIT_ID_REFUSED "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"
#define AUDIT_ID_NOTHING "2c7e9a1b4d3f4a8c9e6d1b0a5f3c7e92"

enum audit_kind {
	AUDIT_REFUSED,		/* answered without running code */
	AUDIT_RAN,		/* code ran */
	AUDIT_NOTHING,		/* runs nothing by design: models, the guard */
};

struct audit {
	int enabled;
	enum audit_kind kind;
	const char *request_id;
	const char *peer;
	char route[192];	/* "POST /v1/chat/completions", audit_text() */
	int status;
	const char *mode;	/* "run" / "agent", NULL when unknown */
	char model[300];	/* audit_text() */
	unsigned blocks;
	char langs[256];
	char code_sha256[65];
	int has_result;
	int exit_code;
	int timed_out;
	long duration_ms;
	char sandbox[256];
	struct jbuf write_paths;	/* agent mode: one path per line, each audit_text() */
	char retry_count[16];
};

/* Client input made safe for a log line or a journal field: bytes below
 * 0x20, DEL, C1 controls (U+0080..U+009F), invalid UTF-8 and '\\' come
 * out as \xNN (a backslash as \\), so no value can end a line, start
 * an escape sequence or forge a field. When anything was escaped or
 * the result had to be cut to fit outlen, " [N bytes]" follows with
 * the input's original length. Always NUL-terminates (outlen >= 32). */
void audit_text(char *out, size_t outlen, const char *v, size_t n);

/* Sends the record; returns sd_journal_sendv's result (which is 0 also
 * when no journal listens: tests read the journal back). */
int audit_send(const struct audit *a);

#endif
