/* The journal record of a request (SPEC §9): one per request but
 * /healthz, with a fixed MESSAGE_ID per kind (units/codellm.catalog
 * documents them). Never the key, a presented bearer, note content or
 * code. Pure: this builds the record's fields; the handler sends them
 * (sd_journal_sendv). */
#ifndef CODELLM_AUDIT_H
#define CODELLM_AUDIT_H

#include <sys/uio.h>

#include "json/jstr.h"
#include "json/request.h"
#include "sandbox/result.h"

#define AUDIT_ID_RAN     "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
#define AUDIT_ID_REFUSED "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"
#define AUDIT_ID_NOTHING "2c7e9a1b4d3f4a8c9e6d1b0a5f3c7e92"

/* an environment's name (at most 63 bytes), a space and its digest */
#define AUDIT_ENV_LEN 144

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
	const char *face;	/* the protocol asked: "chat", "debug", "models"...;
				 * NULL before the route is known */
	char model[300];	/* audit_text() */
	unsigned blocks;
	char langs[256];
	char code_sha256[65];
	int has_result;
	int exit_code;
	int timed_out;
	long duration_ms;
	long cpu_user_ms, cpu_sys_ms, max_rss_kib;	/* the run's usage */
	int cgroup;			/* the run's cgroup version, 0: none */
	long memory_peak_kib, oom_kills;	/* with a cgroup (-1: unknown) */
	char sandbox[256];
	char environment[AUDIT_ENV_LEN];	/* "NAME sha256:HEX", "" for the host's trees */
	struct jbuf write_paths;	/* agent mode: one path per line, each audit_text() */
	struct jbuf files_in;	/* "SHA256 BYTES NAME" per line, never content */
	struct jbuf files_out;	/* the same, or "- BYTES NAME (omitted: why)" */
	char retry_count[16];
};

/* Client input made safe for a log line or a journal field: bytes below
 * 0x20, DEL, C1 controls (U+0080..U+009F), invalid UTF-8 and '\\' come
 * out as \xNN (a backslash as \\), so no value can end a line, start
 * an escape sequence or forge a field. When anything was escaped or
 * the result had to be cut to fit outlen, " [N bytes]" follows with
 * the input's original length. Always NUL-terminates (outlen >= 32). */
void audit_text(char *out, size_t outlen, const char *v, size_t n);

/* What the record says of a parsed request: the mode, the model, the
 * blocks and their languages, and the code's SHA-256 (never the code). */
void audit_request(struct audit *a, const struct chat_request *r, const char *mode);
/* The artifacts' names, sizes and SHA-256 (never their content). */
void audit_files_out(struct audit *a, const struct sbx_artifacts *f);

#define AUDIT_MAX_FIELDS 44

/* The record as journald fields, in order: each iov_base is a
 * malloc'd, NUL-terminated "NAME=value" (iov_len leaves the NUL out;
 * CODELLM_WRITE_PATHS holds newlines, which the native protocol
 * carries). A field whose allocation failed is left out. */
struct audit_fields {
	struct iovec iov[AUDIT_MAX_FIELDS];
	int n;
};

void audit_fields(const struct audit *a, struct audit_fields *ret);
void audit_fields_free(struct audit_fields *f);

/* The same fields as one JSON object on one line, each NAME a key and
 * its value a string (as journalctl -o json shows a text field), in
 * order, ended by a newline: the record where no journal listens (a
 * container's log is its standard error). */
void audit_fields_json(const struct audit_fields *f, struct jbuf *b);

#endif
