/* The interpreter registry: fence labels → argv. Built in, merged with an
 * operator's --interpreters JSON file, filtered by --allowed-programs. */
#ifndef CODELLM_REGISTRY_H
#define CODELLM_REGISTRY_H

#include <stddef.h>

#define REG_MAX_ARGV 32
#define REG_MAX_ALIASES 16
#define REG_MAX_INTERP 64

struct interp {
	char *name;			/* canonical label, e.g. "python" */
	char *argv[REG_MAX_ARGV + 1];	/* NULL-terminated; "{file}" is replaced by the block's path */
	char *aliases[REG_MAX_ALIASES + 1];
	char *ext;			/* file suffix for the block, e.g. ".py" */
	char *prepend;			/* put before code that does not start with it (php's "<?php") */
	int allowed;			/* in --allowed-programs */
};

struct registry {
	struct interp v[REG_MAX_INTERP];
	size_t n;
	int any_allowed;
};

/* Built-ins: python, bash, node, ruby, php, perl. */
int reg_init(struct registry *r);

/* Merge a JSON file {"name":{"argv":[…,"{file}"],"aliases":[…],"ext":".x",
 * "prepend":"…"}} over the registry: a known name is replaced, a new one
 * added. Returns 0, or -1 with a message in err. */
int reg_load_file(struct registry *r, const char *path, char *err, size_t errlen);

/* Mark the comma-separated names (or aliases) as allowed. An unknown name
 * is an error (an operator's typo must not silently disable a language). */
int reg_allow(struct registry *r, const char *list, char *err, size_t errlen);

/* Case-insensitive lookup by name or alias; NULL when unknown. */
const struct interp *reg_lookup(const struct registry *r, const char *label,
				size_t len);

void reg_free(struct registry *r);

#endif
