#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/env.h"
#include "json/precheck.h"

static void str(struct jbuf *b, const char *s)
{
	jstr_escape(b, s, strlen(s));
}

int env_digest_ok(const char *s)
{
	return strlen(s) == ENV_DIGEST_LEN && !strncmp(s, "sha256:", 7) &&
	       strspn(s + 7, "0123456789abcdef") == 64;
}

/* a member that must be a string, or may be absent ("" then) */
static int take_str(const cJSON *o, const char *key, int required, char **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v && !required)
		return (*ret = strdup("")) ? 0 : -1;
	if (!cJSON_IsString(v))
		return -1;
	return (*ret = strdup(v->valuestring)) ? 0 : -1;
}

__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

int env_manifest_parse(const char *text, size_t len, struct env_manifest *ret, char *why,
		       size_t whylen)
{
	struct precheck pc;
	const cJSON *pkgs, *p;
	cJSON *root;
	int rc = -1;

	memset(ret, 0, sizeof *ret);
	if (precheck_json(text, len, &pc) < 0)
		return bad(why, whylen, "is not JSON: it %s", pc.message);
	root = cJSON_ParseWithLength(text, len);
	if (!root)
		return bad(why, whylen, "could not be read (out of memory)");
	if (!cJSON_IsObject(root)) {
		bad(why, whylen, "is not a JSON object");
		goto out;
	}
	if (take_str(root, "name", 1, &ret->name) < 0 || take_str(root, "digest", 1, &ret->digest) < 0) {
		bad(why, whylen, "has no string \"name\" and \"digest\"");
		goto out;
	}
	if (!env_digest_ok(ret->digest)) {
		bad(why, whylen, "has a \"digest\" that is not sha256: and 64 lowercase hex digits");
		goto out;
	}
	if (take_str(root, "built", 0, &ret->built) < 0 || take_str(root, "suite", 0, &ret->suite) < 0) {
		bad(why, whylen, "has a \"built\" or \"suite\" that is not a string");
		goto out;
	}
	pkgs = cJSON_GetObjectItemCaseSensitive(root, "packages");
	if (!cJSON_IsArray(pkgs)) {
		bad(why, whylen, "has no \"packages\" array");
		goto out;
	}
	ret->pkgs = calloc((size_t)cJSON_GetArraySize(pkgs) + 1, sizeof *ret->pkgs);
	if (!ret->pkgs) {
		bad(why, whylen, "could not be read (out of memory)");
		goto out;
	}
	cJSON_ArrayForEach(p, pkgs) {
		struct env_package *k = &ret->pkgs[ret->npkgs];

		if (!cJSON_IsObject(p) || take_str(p, "name", 1, &k->name) < 0 ||
		    take_str(p, "version", 1, &k->version) < 0) {
			free(k->name);
			k->name = NULL;
			bad(why, whylen, "has a package that is not {\"name\", \"version\"} strings");
			goto out;
		}
		ret->npkgs++;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc < 0)
		env_manifest_free(ret);
	return rc;
}

void env_manifest_free(struct env_manifest *m)
{
	for (size_t i = 0; i < m->npkgs; i++) {
		free(m->pkgs[i].name);
		free(m->pkgs[i].version);
	}
	free(m->pkgs);
	free(m->name);
	free(m->digest);
	free(m->built);
	free(m->suite);
	memset(m, 0, sizeof *m);
}

void resp_env_model(struct jbuf *b, const struct env_manifest *m, const char *const *langs,
		    size_t nlangs, long created)
{
	jbuf_puts(b, "{\"id\":");
	str(b, m->name);
	jbuf_printf(b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"codellm\","
		    "\"codellm\":{\"environment\":true,\"languages\":[", created);
	for (size_t i = 0; i < nlangs; i++) {
		jbuf_puts(b, i ? "," : "");
		str(b, langs[i]);
	}
	jbuf_puts(b, "],\"digest\":");
	str(b, m->digest);
	jbuf_puts(b, ",\"built\":");
	str(b, m->built);
	jbuf_puts(b, ",\"suite\":");
	str(b, m->suite);
	jbuf_puts(b, ",\"packages\":[");
	for (size_t i = 0; i < m->npkgs; i++) {
		jbuf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		str(b, m->pkgs[i].name);
		jbuf_puts(b, ",\"version\":");
		str(b, m->pkgs[i].version);
		jbuf_puts(b, "}");
	}
	jbuf_puts(b, "]}}");
}

void resp_env_health(struct jbuf *b, const char *name, const char *digest, const char *error)
{
	jbuf_puts(b, "{\"name\":");
	str(b, name);
	jbuf_puts(b, ",\"digest\":");
	if (digest && *digest)
		str(b, digest);
	else
		jbuf_puts(b, "null");
	jbuf_printf(b, ",\"ok\":%s", error ? "false" : "true");
	if (error) {
		jbuf_puts(b, ",\"error\":");
		str(b, error);
	}
	jbuf_puts(b, "}");
}
