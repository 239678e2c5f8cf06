#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/registry.h"

struct builtin {
	const char *name, *ext, *prepend;
	const char *argv[4];
	const char *aliases[4];
};

static const struct builtin builtins[] = {
	{ "python", ".py", NULL, { "python3", "{file}" }, { "py", "python3" } },
	{ "bash", ".sh", NULL, { "bash", "{file}" }, { "sh", "shell" } },
	{ "node", ".js", NULL, { "node", "{file}" }, { "js", "javascript" } },
	{ "ruby", ".rb", NULL, { "ruby", "{file}" }, { "rb" } },
	{ "php", ".php", "<?php\n", { "php", "{file}" }, { 0 } },
	{ "perl", ".pl", NULL, { "perl", "{file}" }, { "pl" } },
};

static void interp_clear(struct interp *it)
{
	free(it->name);
	free(it->ext);
	free(it->prepend);
	for (char **p = it->argv; *p; p++)
		free(*p);
	for (char **p = it->aliases; *p; p++)
		free(*p);
	memset(it, 0, sizeof *it);
}

static int dup_into(char **dst, const char *src)
{
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

int reg_init(struct registry *r)
{
	/* only the entries in use: every reader stops at r->n, and the
	 * rest of the table's 27 KiB stays untouched (never faulted in) */
	r->n = 0;
	r->any_allowed = 0;
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
		const struct builtin *b = &builtins[i];
		struct interp *it = &r->v[r->n++];

		memset(it, 0, sizeof *it);
		if (dup_into(&it->name, b->name) || dup_into(&it->ext, b->ext) ||
		    (b->prepend && dup_into(&it->prepend, b->prepend)))
			goto oom;
		for (size_t k = 0; k < 4 && b->argv[k]; k++)
			if (dup_into(&it->argv[k], b->argv[k]))
				goto oom;
		for (size_t k = 0; k < 4 && b->aliases[k]; k++)
			if (dup_into(&it->aliases[k], b->aliases[k]))
				goto oom;
	}
	return 0;
oom:
	reg_free(r);
	return -ENOMEM;
}

const struct interp *reg_lookup(const struct registry *r, const char *label,
				size_t len)
{
	/* names first: an --interpreters entry named like a built-in's
	 * alias ("sh", "js") would otherwise never be reached */
	for (size_t i = 0; i < r->n; i++) {
		const struct interp *it = &r->v[i];

		if (strlen(it->name) == len && !strncasecmp(it->name, label, len))
			return it;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct interp *it = &r->v[i];

		for (char *const *a = it->aliases; *a; a++)
			if (strlen(*a) == len && !strncasecmp(*a, label, len))
				return it;
	}
	return NULL;
}

/* A label must be one fence word: no spaces, printable ASCII. */
static int valid_label(const char *s)
{
	if (!*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f || *s == ',')
			return 0;
	return 1;
}

static int load_entry(struct interp *it, const cJSON *e, char *err, size_t errlen)
{
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(e, "argv");
	const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(e, "aliases");
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(e, "ext");
	const cJSON *prepend = cJSON_GetObjectItemCaseSensitive(e, "prepend");
	const cJSON *x;
	size_t k = 0;
	int has_file = 0;

	if (!cJSON_IsObject(e) || !cJSON_IsArray(argv) ||
	    cJSON_GetArraySize(argv) < 1 || cJSON_GetArraySize(argv) > REG_MAX_ARGV) {
		snprintf(err, errlen, "\"%s\": \"argv\" must be an array of 1 to %d strings",
			 it->name, REG_MAX_ARGV);
		return -1;
	}
	cJSON_ArrayForEach(x, argv) {
		if (!cJSON_IsString(x) || !x->valuestring[0]) {
			snprintf(err, errlen, "\"%s\": argv entries must be non-empty strings", it->name);
			return -1;
		}
		if (strstr(x->valuestring, "{file}"))
			has_file = 1;
		if (dup_into(&it->argv[k++], x->valuestring))
			goto oom;
	}
	if (!has_file) {
		snprintf(err, errlen, "\"%s\": argv must contain \"{file}\"", it->name);
		return -1;
	}
	if (strchr(it->argv[0], '/') && it->argv[0][0] != '/') {
		snprintf(err, errlen, "\"%s\": argv[0] must be a bare name or an absolute path", it->name);
		return -1;
	}
	k = 0;
	if (aliases) {
		if (!cJSON_IsArray(aliases) || cJSON_GetArraySize(aliases) > REG_MAX_ALIASES) {
			snprintf(err, errlen, "\"%s\": \"aliases\" must be an array of at most %d labels",
				 it->name, REG_MAX_ALIASES);
			return -1;
		}
		cJSON_ArrayForEach(x, aliases) {
			if (!cJSON_IsString(x) || !valid_label(x->valuestring)) {
				snprintf(err, errlen, "\"%s\": aliases must be single words", it->name);
				return -1;
			}
			if (dup_into(&it->aliases[k++], x->valuestring))
				goto oom;
		}
	}
	if (ext && (!cJSON_IsString(ext) || strchr(ext->valuestring, '/') ||
		    strlen(ext->valuestring) > 16)) {
		snprintf(err, errlen, "\"%s\": \"ext\" must be a short suffix without '/'", it->name);
		return -1;
	}
	if (dup_into(&it->ext, ext ? ext->valuestring : ""))
		goto oom;
	if (prepend && !cJSON_IsString(prepend)) {
		snprintf(err, errlen, "\"%s\": \"prepend\" must be a string", it->name);
		return -1;
	}
	if (prepend && prepend->valuestring[0] && dup_into(&it->prepend, prepend->valuestring))
		goto oom;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

int reg_load_file(struct registry *r, const char *path, char *err, size_t errlen)
{
	char buf[65536];
	const char *end = NULL;
	cJSON *root = NULL, *e;
	ssize_t n;
	size_t len = 0;
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len >= sizeof buf - 1) {
		snprintf(err, errlen, "%s: larger than %zu bytes", path, sizeof buf - 2);
		return -1;
	}
	buf[len] = '\0';
	root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!cJSON_IsObject(root) || strspn(end, " \t\r\n") != strlen(end)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		goto out;
	}
	cJSON_ArrayForEach(e, root) {
		struct interp fresh = {0}, *slot = NULL;

		if (!valid_label(e->string)) {
			snprintf(err, errlen, "%s: \"%s\" is not a valid label", path, e->string);
			goto out;
		}
		for (size_t i = 0; i < r->n; i++)
			if (!strcasecmp(r->v[i].name, e->string))
				slot = &r->v[i];
		if (!slot && r->n >= REG_MAX_INTERP) {
			snprintf(err, errlen, "%s: more than %d interpreters", path, REG_MAX_INTERP);
			goto out;
		}
		if (dup_into(&fresh.name, e->string) ||
		    load_entry(&fresh, e, err, errlen) < 0) {
			if (!fresh.name)
				snprintf(err, errlen, "out of memory");
			interp_clear(&fresh);
			goto out;
		}
		if (!slot)
			slot = &r->v[r->n++];
		else
			interp_clear(slot);
		*slot = fresh;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int reg_allow(struct registry *r, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	while (*p) {
		size_t n;
		const struct interp *it;

		p += strspn(p, " \t,");
		n = strcspn(p, " \t,");
		if (n == 0)
			break;
		it = reg_lookup(r, p, n);
		if (!it) {
			snprintf(err, errlen, "--allowed-programs: unknown interpreter \"%.*s\"",
				 (int)(n > 64 ? 64 : n), p);
			return -1;
		}
		r->v[it - r->v].allowed = 1;
		r->any_allowed = 1;
		p += n;
	}
	return 0;
}

void reg_free(struct registry *r)
{
	for (size_t i = 0; i < r->n; i++)
		interp_clear(&r->v[i]);
	r->n = 0;
}
