#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <syslog.h>

#include <systemd/sd-journal.h>

#include "ops/audit.h"

#define MAX_FIELDS 24

struct fields {
	struct iovec iov[MAX_FIELDS];
	char *mem[MAX_FIELDS];
	int n;
};

__attribute__((format(printf, 2, 3)))
static void add(struct fields *f, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int len;

	if (f->n >= MAX_FIELDS)
		return;
	va_start(ap, fmt);
	len = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	f->mem[f->n] = s;
	f->iov[f->n].iov_base = s;
	f->iov[f->n].iov_len = (size_t)len;
	f->n++;
}

/* A value that may hold any byte but NUL (paths): the journal's native
 * protocol carries newlines, so no escaping is needed. */
static void add_bytes(struct fields *f, const char *name, const char *v, size_t len)
{
	size_t nl = strlen(name);
	char *s;

	if (f->n >= MAX_FIELDS || !(s = malloc(nl + 1 + len)))
		return;
	memcpy(s, name, nl);
	s[nl] = '=';
	memcpy(s + nl + 1, v, len);
	f->mem[f->n] = s;
	f->iov[f->n].iov_base = s;
	f->iov[f->n].iov_len = nl + 1 + len;
	f->n++;
}

int audit_send(const struct audit *a)
{
	struct fields f = { .n = 0 };
	const char *id = a->kind == AUDIT_RAN ? AUDIT_ID_RAN :
			 a->kind == AUDIT_NOTHING ? AUDIT_ID_NOTHING : AUDIT_ID_REFUSED;
	int prio, rc;

	if (a->kind == AUDIT_RAN)
		prio = a->exit_code == 0 && a->status == 200 ? LOG_INFO : LOG_NOTICE;
	else if (a->kind == AUDIT_NOTHING)
		prio = LOG_INFO;
	else
		prio = a->status >= 500 ? LOG_ERR : LOG_WARNING;
	if (a->kind == AUDIT_RAN)
		add(&f, "MESSAGE=codellm: %s %d: ran %u block(s) (%s), exit %d%s, %ld ms",
		    a->route, a->status, a->blocks, a->langs, a->exit_code,
		    a->timed_out ? ", timed out" : "", a->duration_ms);
	else
		add(&f, "MESSAGE=codellm: %s %d: %s", a->route, a->status,
		    a->kind == AUDIT_NOTHING ? "nothing to run" : "refused, nothing ran");
	add(&f, "MESSAGE_ID=%s", id);
	add(&f, "PRIORITY=%d", prio);
	add(&f, "SYSLOG_IDENTIFIER=codellm");
	add(&f, "CODELLM_REQUEST_ID=%s", a->request_id ? a->request_id : "");
	add(&f, "CODELLM_PEER=%s", a->peer ? a->peer : "unknown");
	add(&f, "CODELLM_ROUTE=%s", a->route);
	add(&f, "CODELLM_STATUS=%d", a->status);
	if (a->mode)
		add(&f, "CODELLM_MODE=%s", a->mode);
	if (a->model[0])
		add_bytes(&f, "CODELLM_MODEL", a->model, strlen(a->model));
	if (a->code_sha256[0]) {
		add(&f, "CODELLM_BLOCKS=%u", a->blocks);
		add(&f, "CODELLM_LANGS=%s", a->langs);
		add(&f, "CODELLM_CODE_SHA256=%s", a->code_sha256);
	}
	if (a->has_result) {
		add(&f, "CODELLM_EXIT_CODE=%d", a->exit_code);
		add(&f, "CODELLM_TIMED_OUT=%s", a->timed_out ? "true" : "false");
		add(&f, "CODELLM_DURATION_MS=%ld", a->duration_ms);
	}
	if (a->sandbox[0])
		add(&f, "CODELLM_SANDBOX=%s", a->sandbox);
	if (a->write_paths.len)
		add_bytes(&f, "CODELLM_WRITE_PATHS", a->write_paths.p, a->write_paths.len);
	if (a->retry_count[0])
		add(&f, "CODELLM_RETRY_COUNT=%s", a->retry_count);
	rc = sd_journal_sendv(f.iov, f.n);
	for (int i = 0; i < f.n; i++)
		free(f.mem[i]);
	return rc;
}
