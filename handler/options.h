/* The handler's options: one table of every option (its kind, bounds,
 * value name and help line), read from CODELLM_<NAME> in the
 * environment and then the command line; --help is generated from the
 * table and tests/lint-man checks the man page and README against it. */
#ifndef CODELLM_OPTIONS_H
#define CODELLM_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "sandbox/result.h"

#ifndef CODELLM_VERSION
#define CODELLM_VERSION "0.1.0"
#endif

struct options {
	char *api_key_file;
	int no_auth;
	char *allowed_programs;
	char *interpreters;
	enum sbx_mode sandbox;
	double timeout_s;
	unsigned long long max_stdout_bytes;
	unsigned long long max_stderr_bytes;
	unsigned long long max_request_bytes;
	unsigned long long max_blocks;
	unsigned long long max_skipped_fences;
	unsigned long long max_header_bytes;
	double header_timeout_s;
	double body_timeout_s;
	double keepalive_s;
	int sandbox_network;
	int share_netns;
	unsigned long long memory_max;
	unsigned long long run_memory_max;	/* ULLONG_MAX: half of memory_max */
	unsigned long long address_space_max;
	unsigned long long workdir_bytes;
	unsigned long long workdir_inodes;
	unsigned long long max_procs;
	unsigned long long max_file_bytes;
	unsigned long long max_open_files;
	double max_cpu_seconds;			/* 0: from the run's timeout */
	unsigned long long max_concurrent;
	char *runtime_dir;
	int debug;
	unsigned long long max_tap_bytes;	/* ULLONG_MAX: = max_stdout_bytes */
	unsigned long long shm_bytes;
	unsigned long long slot_uid_base;	/* 0: runs of a root handler share a uid */
	double healthz_cache_s;	/* 0: every /healthz checks the sandbox */
	unsigned long long max_input_files;
	unsigned long long max_input_file_bytes;
	unsigned long long max_input_bytes;
	unsigned long long max_artifacts;
	unsigned long long max_artifact_bytes;
	char *environments;		/* NULL: none */
	double environment_verify_s;	/* 0: a full check on every use */
};

extern struct options opt;

/* The first configuration error, or "": every request then answers 503
 * server_misconfigured, and the commands exit 2. */
extern char config_error[512];

/* What the command line asks for besides serving. */
enum { CMD_SERVE, CMD_HELP, CMD_VERSION, CMD_PROBE, CMD_CHECK, CMD_ENV_DIGEST };

/* The environment, then the flags. 0, or -1 with config_error set;
 * *cmd is what to do. --check's files and --env-digest's tree are
 * argv[optind..]. */
int parse_options(int argc, char **argv, int *cmd);

/* --help */
void usage(FILE *f);

struct req_limits;
/* What a request may make the handler run, hold and echo. */
const struct req_limits *limits(void);
/* The directory of the run slots and the files instances share
 * (--runtime-dir); 0, or -errno. */
int runtime_dir(char *dir, size_t len);

#endif
