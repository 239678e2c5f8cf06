/* An environment's manifest (manifest.json, written by `make env`) as
 * plain data, and the JSON the answers give of an environment: its model
 * object in GET /v1/models and its entry in /healthz. The tree itself is
 * sandbox/'s (sbx_env_*); the handler joins the two. */
#ifndef CODELLM_ENV_H
#define CODELLM_ENV_H

#include <stddef.h>

#include "json/jstr.h"

/* "sha256:" and 64 lowercase hex digits */
#define ENV_DIGEST_LEN 71
/* A manifest's largest size: a few hundred packages take some 20 KiB */
#define ENV_MANIFEST_MAX (1 << 20)

struct env_package {
	char *name;
	char *version;
};

struct env_manifest {
	char *name;		/* the directory's name */
	char *digest;		/* "sha256:HEX" of the tree (sbx_env_walk's stream) */
	char *built;		/* when, as the build wrote it ("" when absent) */
	char *suite;		/* the Debian suite ("" when absent) */
	struct env_package *pkgs;	/* every package installed, in order */
	size_t npkgs;
};

/* manifest.json's text: an object whose "name" is a string, "digest" a
 * digest, "packages" an array of {"name", "version"} strings; "built"
 * and "suite" strings when present. 0, or -1 with why said (a predicate
 * that follows "the manifest ..."). */
int env_manifest_parse(const char *text, size_t len, struct env_manifest *ret, char *why,
		       size_t whylen);
void env_manifest_free(struct env_manifest *m);
/* Whether s is "sha256:" and 64 lowercase hex digits. */
int env_digest_ok(const char *s);

/* The environment's model object, as GET /v1/models lists it: the
 * OpenAI model fields and a "codellm" member with the environment's
 * languages (registry names), digest, build date, suite and packages. */
void resp_env_model(struct jbuf *b, const struct env_manifest *m, const char *const *langs,
		    size_t nlangs, long created);
/* Its entry in /healthz's "environments": name, digest and "ok", or
 * "ok": false and what is wrong. */
void resp_env_health(struct jbuf *b, const char *name, const char *digest, const char *error);

#endif
