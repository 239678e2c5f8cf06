#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "json/audit.h"
#include "json/sha256.h"

__attribute__((format(printf, 2, 3)))
static void add(struct audit_fields *f, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int len;

	if (f->n >= AUDIT_MAX_FIELDS)
		return;
	va_start(ap, fmt);
	len = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	f->iov[f->n].iov_base = s;
	f->iov[f->n].iov_len = (size_t)len;
	f->n++;
}

/* A value that holds newlines (the write paths, one per line, each
 * passed through audit_text): the journal's native protocol carries
 * them as a binary field. */
static void add_bytes(struct audit_fields *f, const char *name, const char *v, size_t len)
{
	size_t nl = strlen(name);
	char *s;

	if (f->n >= AUDIT_MAX_FIELDS || !(s = malloc(nl + 1 + len + 1)))
		return;
	memcpy(s, name, nl);
	s[nl] = '=';
	memcpy(s + nl + 1, v, len);
	s[nl + 1 + len] = '\0';
	f->iov[f->n].iov_base = s;
	f->iov[f->n].iov_len = nl + 1 + len;
	f->n++;
}

/* The length of the valid UTF-8 sequence at v[0..n) that may pass as
 * it is, or 0 when its bytes must be escaped: malformed, overlong, a
 * surrogate, past U+10FFFF, a C1 control, or U+2028/U+2029 (line ends
 * to some log viewers). */
static size_t utf8_plain(const unsigned char *v, size_t n)
{
	unsigned cp;
	size_t len;

	if (v[0] < 0xc2 || v[0] > 0xf4)
		return 0;
	len = v[0] < 0xe0 ? 2 : v[0] < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	cp = v[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((v[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (v[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f || cp == 0x2028 || cp == 0x2029)
		return 0;
	return len;
}

void audit_text(char *out, size_t outlen, const char *v, size_t n)
{
	const unsigned char *s = (const unsigned char *)v;
	char tail[40];
	size_t k = 0, room;
	int altered = 0;

	/* room for the content, leaving space for the length note */
	snprintf(tail, sizeof tail, " [%zu bytes]", n);
	room = outlen - 1 - strlen(tail);
	for (size_t i = 0; i < n;) {
		size_t plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' ? 1 :
			       s[i] >= 0x80 ? utf8_plain(s + i, n - i) : 0;

		if (plain) {
			if (k + plain > room)
				goto cut;
			memcpy(out + k, s + i, plain);
			k += plain;
			i += plain;
			continue;
		}
		if (k + 4 > room)
			goto cut;
		if (s[i] == '\\') {
			out[k++] = '\\';
			out[k++] = '\\';
		} else {
			k += (size_t)sprintf(out + k, "\\x%02x", s[i]);
		}
		altered = 1;
		i++;
	}
	out[k] = '\0';
	if (altered)
		snprintf(out + k, outlen - k, "%s", tail);
	return;
cut:
	snprintf(out + k, outlen - k, "%s", tail);
}

/* The journal priority: a run that failed or a refusal stands out. */
static int priority(const struct audit *a)
{
	if (a->kind == AUDIT_RAN)
		return a->exit_code == 0 && a->status == 200 ? LOG_INFO : LOG_NOTICE;
	if (a->kind == AUDIT_NOTHING)
		return LOG_INFO;
	return a->status >= 500 ? LOG_ERR : LOG_WARNING;
}

void audit_fields(const struct audit *a, struct audit_fields *ret)
{
	struct audit_fields *f = ret;
	const char *id = a->kind == AUDIT_RAN ? AUDIT_ID_RAN :
			 a->kind == AUDIT_NOTHING ? AUDIT_ID_NOTHING : AUDIT_ID_REFUSED;

	f->n = 0;
	if (a->kind == AUDIT_RAN)
		add(f, "MESSAGE=codellm: %s %d: ran %u block(s) (%s), exit %d%s, %ld ms",
		    a->route, a->status, a->blocks, a->langs, a->exit_code,
		    a->timed_out ? ", timed out" : "", a->duration_ms);
	else
		add(f, "MESSAGE=codellm: %s %d: %s", a->route, a->status,
		    a->kind == AUDIT_NOTHING ? "nothing to run" : "refused, nothing ran");
	add(f, "MESSAGE_ID=%s", id);
	add(f, "PRIORITY=%d", priority(a));
	add(f, "SYSLOG_IDENTIFIER=codellm");
	add(f, "CODELLM_REQUEST_ID=%s", a->request_id ? a->request_id : "");
	add(f, "CODELLM_PEER=%s", a->peer ? a->peer : "unknown");
	add(f, "CODELLM_ROUTE=%s", a->route);
	if (a->face)
		add(f, "CODELLM_FACE=%s", a->face);
	add(f, "CODELLM_STATUS=%d", a->status);
	if (a->mode)
		add(f, "CODELLM_MODE=%s", a->mode);
	if (a->model[0])
		add(f, "CODELLM_MODEL=%s", a->model);
	if (a->code_sha256[0]) {
		add(f, "CODELLM_BLOCKS=%u", a->blocks);
		add(f, "CODELLM_LANGS=%s", a->langs);
		add(f, "CODELLM_CODE_SHA256=%s", a->code_sha256);
	}
	if (a->has_result) {
		add(f, "CODELLM_EXIT_CODE=%d", a->exit_code);
		add(f, "CODELLM_TIMED_OUT=%s", a->timed_out ? "true" : "false");
		add(f, "CODELLM_DURATION_MS=%ld", a->duration_ms);
		add(f, "CODELLM_CPU_USER_MS=%ld", a->cpu_user_ms);
		add(f, "CODELLM_CPU_SYS_MS=%ld", a->cpu_sys_ms);
		add(f, "CODELLM_MAX_RSS_KIB=%ld", a->max_rss_kib);
		if (a->cgroup) {
			add(f, "CODELLM_MEMORY_BOUND=cgroup v%d", a->cgroup);
			if (a->memory_peak_kib >= 0)
				add(f, "CODELLM_MEMORY_PEAK_KIB=%ld", a->memory_peak_kib);
			if (a->oom_kills >= 0)
				add(f, "CODELLM_OOM_KILLS=%ld", a->oom_kills);
		} else {
			add(f, "CODELLM_MEMORY_BOUND=none");
		}
	}
	if (a->sandbox[0])
		add(f, "CODELLM_SANDBOX=%s", a->sandbox);
	if (a->environment[0]) {
		const char *sp = strchr(a->environment, ' ');

		add(f, "CODELLM_ENVIRONMENT=%.*s", sp ? (int)(sp - a->environment) :
		    (int)strlen(a->environment), a->environment);
		if (sp)
			add(f, "CODELLM_ENVIRONMENT_DIGEST=%s", sp + 1);
	}
	if (a->write_paths.len)
		add_bytes(f, "CODELLM_WRITE_PATHS", a->write_paths.p, a->write_paths.len);
	if (a->files_in.len)
		add_bytes(f, "CODELLM_FILES_IN", a->files_in.p, a->files_in.len);
	if (a->files_out.len)
		add_bytes(f, "CODELLM_FILES_OUT", a->files_out.p, a->files_out.len);
	if (a->retry_count[0])
		add(f, "CODELLM_RETRY_COUNT=%s", a->retry_count);
}

void audit_fields_json(const struct audit_fields *f, struct jbuf *b)
{
	jbuf_puts(b, "{");
	for (int i = 0, first = 1; i < f->n; i++) {
		const char *fld = f->iov[i].iov_base, *eq = memchr(fld, '=', f->iov[i].iov_len);

		if (!eq)
			continue;
		if (!first)
			jbuf_puts(b, ",");
		first = 0;
		jstr_escape(b, fld, (size_t)(eq - fld));
		jbuf_puts(b, ":");
		jstr_escape(b, eq + 1, f->iov[i].iov_len - (size_t)(eq - fld) - 1);
	}
	jbuf_puts(b, "}\n");
}

void audit_fields_free(struct audit_fields *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->iov[i].iov_base);
	f->n = 0;
}

/* One line of a files field: "SHA256 BYTES NAME", or with no data
 * "- BYTES NAME (omitted: WHY)"; the name made safe by audit_text(). */
static void file_line(struct jbuf *b, const char *name, const char *data, size_t len,
		      uint64_t bytes, const char *omitted)
{
	char shown[600], hex[65] = "-";

	audit_text(shown, sizeof shown, name, strlen(name));
	if (data)
		sha256_hex(data, len, hex);
	jbuf_printf(b, "%s%s %llu %s", b->len ? "\n" : "", hex, (unsigned long long)bytes, shown);
	if (!data)
		jbuf_printf(b, " (omitted: %s)", omitted ? omitted : "unreadable");
}

void audit_request(struct audit *a, const struct chat_request *r, const char *mode)
{
	size_t n = 0;

	a->mode = mode;
	audit_text(a->model, sizeof a->model, r->model ? r->model : "",
		   r->model ? strlen(r->model) : 0);
	a->blocks = (unsigned)r->nblocks;
	a->langs[0] = '\0';
	for (size_t i = 0; i < r->nblocks && n < sizeof a->langs; i++)
		n += (size_t)snprintf(a->langs + n, sizeof a->langs - n, "%s%s",
				      i ? "," : "", r->blocks[i].interp->name);
	sha256_hex(r->code_text ? r->code_text : "", r->code_text_len, a->code_sha256);
	a->files_in.len = 0;
	for (size_t i = 0; i < r->nfiles; i++)
		file_line(&a->files_in, r->files[i].name, r->files[i].data, r->files[i].len,
			  r->files[i].len, NULL);
}

void audit_files_out(struct audit *a, const struct sbx_artifacts *f)
{
	a->files_out.len = 0;
	for (size_t i = 0; i < f->n; i++)
		file_line(&a->files_out, f->v[i].name, f->v[i].data, f->v[i].len,
			  f->v[i].bytes, f->v[i].data ? NULL : f->v[i].omitted);
	if (f->truncated)
		jbuf_printf(&a->files_out, "%s(%zu more)", a->files_out.len ? "\n" : "",
			    f->truncated);
}
