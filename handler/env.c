/* Environments as models (--environments DIR): the model a request
 * names, checked before anything runs; the environments' entries in
 * GET /v1/models and /healthz; --env-digest, which `make env` calls to
 * write a manifest. The tree's checks and walk are sandbox/env.c's, the
 * manifest and the JSON json/env.c's; this joins them with the options,
 * the registry and the shared runtime directory.
 *
 * A request on an environment costs the cheap checks (sbx_env_open: a
 * few stats) and a read of its verification, kept in the runtime
 * directory (env-NAME.verified, as /healthz keeps its check) under the
 * tree's key; the full check (every file hashed, every entry's owner
 * and mode) runs when there is none, when the key changed, or when it
 * is older than --environment-verify. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handler/handler.h"
#include "handler/options.h"
#include "json/env.h"
#include "json/sha256.h"
#include "sandbox/sandbox.h"

/* An environment found and read: its tree and its manifest. */
struct env_found {
	struct sbx_env e;
	struct env_manifest m;
};

/* Whether name is taken by another model (codellm, a language): an
 * environment of that name is never one. */
static int name_taken(const struct ctx *x, const char *name)
{
	return !strcmp(name, "codellm") || reg_lookup(&x->reg, name, strlen(name));
}

/* ENVS/NAME's tree and manifest, after the cheap checks. 0, -ENOENT
 * (no such environment), or another -errno with why said. */
static int env_find(const char *name, struct env_found *f, char *why, size_t whylen)
{
	char *text = NULL;
	struct stat st;
	ssize_t got = 0;
	int fd, rc;

	memset(f, 0, sizeof *f);
	rc = sbx_env_open(opt.environments, name, &f->e, why, whylen);
	if (rc < 0)
		return rc;
	fd = open(f->e.manifest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size > ENV_MANIFEST_MAX ||
	    !(text = malloc((size_t)st.st_size + 1)) ||
	    (got = read(fd, text, (size_t)st.st_size)) != st.st_size) {
		snprintf(why, whylen, "%s: cannot be read whole (at most %d bytes)", f->e.manifest,
			 ENV_MANIFEST_MAX);
		rc = -EIO;
	} else if (env_manifest_parse(text, (size_t)got, &f->m, why, whylen) < 0) {
		char what[160];

		snprintf(what, sizeof what, "%s", why);
		snprintf(why, whylen, "%s %s", f->e.manifest, what);
		rc = -EINVAL;
	} else if (strcmp(f->m.name, name)) {
		snprintf(why, whylen, "%s names another environment", f->e.manifest);
		rc = -EINVAL;
	}
	if (fd >= 0)
		close(fd);
	free(text);
	if (rc < 0)
		env_manifest_free(&f->m);
	return rc;
}

static void sink(void *ctx, const void *data, size_t len)
{
	sha256_update(ctx, data, len);
}

/* The full check, or its kept result: the tree is root's alone to its
 * last entry and hashes to the manifest's digest. 0, or -1 with why. */
static int env_verify(const struct env_found *f, char *why, size_t whylen)
{
	char dir[PATH_MAX], fname[SBX_ENV_NAME_MAX + 16], want[1200], kept[1200], hex[65];
	struct sha256 c;
	long at;
	int fd = -1;

	snprintf(want, sizeof want, "%s %s\n", f->m.digest, f->e.key);
	if (opt.environment_verify_s > 0 && runtime_dir(dir, sizeof dir) == 0) {
		snprintf(fname, sizeof fname, "env-%s.verified", f->m.name);
		fd = sbx_shared_open(dir, fname);
		if (fd >= 0 && sbx_shared_read(fd, (long)(opt.environment_verify_s * 1000), kept,
					       sizeof kept, &at) > 0 && !strcmp(kept, want)) {
			close(fd);
			return 0;
		}
	}
	sha256_init(&c);
	if (sbx_env_walk(f->e.root, sink, &c, why, whylen) < 0)
		goto fail;
	sha256_final_hex(&c, hex);
	if (strcmp(f->m.digest + 7, hex)) {
		snprintf(why, whylen, "the tree %s hashes to sha256:%s, its manifest says %s",
			 f->e.root, hex, f->m.digest);
		goto fail;
	}
	if (fd >= 0) {
		sbx_shared_write(fd, sbx_wall_ms(), want, strlen(want));
		close(fd);
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The allowed languages whose program the tree has, in registry order. */
static size_t env_languages(const struct ctx *x, const struct env_found *f,
			    const char **langs, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < x->reg.n && n < max; i++)
		if (x->reg.v[i].allowed && sbx_env_has_program(f->e.root, x->reg.v[i].argv[0]))
			langs[n++] = x->reg.v[i].name;
	return n;
}

int env_select(struct ctx *x, const struct chat_request *r)
{
	struct env_found f;
	char why[PATH_MAX + 256];
	int rc;

	if (!opt.environments || !strcmp(r->model, "codellm") || r->model_interp)
		return 0;
	if (!sbx_env_name_ok(r->model) || name_taken(x, r->model) ||
	    (rc = env_find(r->model, &f, why, sizeof why)) == -ENOENT)
		return refuse(x, REF_MODEL_NOT_FOUND, NULL,
			      "The model `%.128s` does not exist or you do not have access to it. "
			      "codellm: GET /v1/models lists the models it serves: codellm, the "
			      "languages and the environments", r->model);
	if (rc < 0 || env_verify(&f, why, sizeof why) < 0) {
		fprintf(stderr, "codellm: %s: refusing environment %s: %s\n", x->id, r->model, why);
		if (rc == 0)
			env_manifest_free(&f.m);
		return refuse(x, REF_ENVIRONMENT, NULL,
			      "the environment `%s` cannot be used: its tree or manifest failed "
			      "the server's check; see the server's journal", r->model);
	}
	for (size_t i = 0; i < r->nblocks; i++) {
		const struct interp *it = r->blocks[i].interp;
		const char *langs[REG_MAX_INTERP];
		char list[512] = "";
		size_t n;

		if (sbx_env_has_program(f.e.root, it->argv[0]))
			continue;
		n = env_languages(x, &f, langs, REG_MAX_INTERP);
		for (size_t k = 0; k < n; k++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				 k ? ", " : "", langs[k]);
		env_manifest_free(&f.m);
		return refuse(x, REF_ENV_LANGUAGE, NULL,
			      "the environment `%s` has no %s (block %zu, line %u); its languages: "
			      "%s. codellm: GET /v1/models lists each environment's languages",
			      r->model, it->name, i, r->blocks[i].start_line, n ? list : "none");
	}
	snprintf(x->env.name, sizeof x->env.name, "%s", f.m.name);
	snprintf(x->env.digest, sizeof x->env.digest, "%s", f.m.digest);
	snprintf(x->env.root, sizeof x->env.root, "%s", f.e.root);
	snprintf(x->au.environment, sizeof x->au.environment, "%s %s", f.m.name, f.m.digest);
	env_manifest_free(&f.m);
	return 1;
}

/* Each environment in --environments: name (a directory, sorted) and
 * what is found there; skip() tells the journal why one is no model. */
typedef void (*env_each_fn)(struct ctx *x, const char *name, struct env_found *f, int rc,
			    const char *why, void *arg);

static void env_each(struct ctx *x, env_each_fn fn, void *arg)
{
	struct dirent **names = NULL;
	char why[PATH_MAX + 256];
	int n;

	if (!opt.environments)
		return;
	n = scandir(opt.environments, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct env_found f;
		int rc;

		if (name[0] != '.' && sbx_env_name_ok(name) && !name_taken(x, name)) {
			why[0] = '\0';
			rc = env_find(name, &f, why, sizeof why);
			fn(x, name, &f, rc, why, arg);
			if (rc == 0)
				env_manifest_free(&f.m);
		}
		free(names[i]);
	}
	free(names);
}

struct models_arg {
	struct jbuf *b;
	long created;
	const char *only;	/* one id, or NULL for all */
	int found;
};

static void model_one(struct ctx *x, const char *name, struct env_found *f, int rc,
		      const char *why, void *arg)
{
	struct models_arg *a = arg;
	const char *langs[REG_MAX_INTERP];

	if (a->only && strcmp(a->only, name))
		return;
	if (rc < 0) {
		if (rc != -ENOENT)
			fprintf(stderr, "codellm: %s: environment %s is no model: %s\n", x->id, name,
				why);
		return;
	}
	jbuf_puts(a->b, a->only ? "" : ",");
	resp_env_model(a->b, &f->m, langs, env_languages(x, f, langs, REG_MAX_INTERP),
		       a->created);
	a->found = 1;
}

void env_models(struct ctx *x, struct jbuf *b, long created)
{
	struct models_arg a = { b, created, NULL, 0 };

	env_each(x, model_one, &a);
}

int env_model(struct ctx *x, struct jbuf *b, const char *id, long created)
{
	struct models_arg a = { b, created, id, 0 };

	if (!sbx_env_name_ok(id))
		return -1;
	env_each(x, model_one, &a);
	return a.found ? 0 : -1;
}

struct health_arg {
	struct jbuf *b;
	int n;
	int bad;
};

static void health_one(struct ctx *x, const char *name, struct env_found *f, int rc,
		       const char *why, void *arg)
{
	struct health_arg *a = arg;
	char err[PATH_MAX + 256];

	if (rc == -ENOENT)
		return;		/* a directory without a manifest: no environment */
	jbuf_puts(a->b, a->n++ ? "," : "");
	if (rc < 0) {
		resp_env_health(a->b, name, NULL, why);
		a->bad = 1;
	} else if (env_verify(f, err, sizeof err) < 0) {
		resp_env_health(a->b, name, f->m.digest, err);
		a->bad = 1;
	} else {
		resp_env_health(a->b, name, f->m.digest, NULL);
	}
}

int env_health(struct ctx *x, struct jbuf *b)
{
	struct health_arg a = { b, 0, 0 };

	jbuf_puts(b, "[");
	env_each(x, health_one, &a);
	jbuf_puts(b, "]");
	return a.bad ? -1 : 0;
}

int env_digest_command(int argc, char **argv, int first)
{
	char why[PATH_MAX + 256], hex[65];
	struct sha256 c;

	if (config_error[0] || first + 1 != argc) {
		fprintf(stderr, "codellm: %s\n", config_error[0] ? config_error :
			"--env-digest needs one tree (an environment's root/)");
		return 2;
	}
	sha256_init(&c);
	if (sbx_env_walk(argv[first], sink, &c, why, sizeof why) < 0) {
		fprintf(stderr, "codellm: --env-digest %s: %s\n", argv[first], why);
		return 1;
	}
	sha256_final_hex(&c, hex);
	printf("sha256:%s\n", hex);
	return 0;
}
