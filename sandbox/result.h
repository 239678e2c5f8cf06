/* What a run leaves behind, as plain data: the blocks' results, the
 * taps, the kept stdout, how the run ended and its exit status, the
 * layers it had; and what the host allows. json/ reads this header and
 * nothing else of sandbox/: its writers take these structs, so a test
 * makes one by hand. Only libc here; the few functions are pure name
 * lookups (sandbox/run.c). */
#ifndef CODELLM_SANDBOX_RESULT_H
#define CODELLM_SANDBOX_RESULT_H

#include <stddef.h>
#include <stdint.h>

/* The run's own names in the workdir: the fleet_input bag, and the
 * directory whose files come back as artifacts. */
#define SBX_BAG_NAME "fleet_input.json"
#define SBX_OUT_DIR "out"

enum sbx_mode {
	SBX_NATIVE,
	SBX_BESTEFFORT,
	SBX_OFF,
};

/* The confinement layers, in the order a run applies them: the run's
 * own user namespace and tmpfs (workdir), the handler's supplementary
 * groups gone (groups), per-user kernel limits of the run's own
 * (ucounts); then per block its namespaces, root, /proc, the clean init
 * (init), and the program's own layers. */
enum sbx_layer {
	SBX_L_USERNS, SBX_L_PIDNS, SBX_L_MOUNTNS, SBX_L_NETNS, SBX_L_IPCNS,
	SBX_L_UTSNS, SBX_L_CGROUPNS, SBX_L_WORKDIR, SBX_L_GROUPS, SBX_L_UCOUNTS,
	SBX_L_ROOT, SBX_L_PROC, SBX_L_INIT, SBX_L_RLIMITS, SBX_L_NNP, SBX_L_CAPS,
	SBX_L_LANDLOCK, SBX_L_SECCOMP,
	SBX_L_COUNT
};
#define SBX_BIT(l) (1u << (l))
#define SBX_ALL_LAYERS ((1u << SBX_L_COUNT) - 1)

/* Where a block's network is: its own empty namespace, the handler's
 * (an empty namespace shared by all runs), or the host's (--sandbox off,
 * --sandbox-network). */
enum sbx_net { SBX_NET_OWN, SBX_NET_SHARED, SBX_NET_HOST };

enum sbx_end {
	SBX_END_NORMAL,
	SBX_END_TIMEOUT,
	SBX_END_CLIENT,		/* the client went away */
	SBX_END_SIGNAL,		/* SIGTERM/SIGINT/SIGHUP to the handler */
	SBX_END_OUTPUT,		/* stdout passed the cap with stop_at_cap */
};

const char *sbx_mode_name(enum sbx_mode m);
/* "setup" for a layer out of range (a failure no layer owns) */
const char *sbx_layer_name(int layer);
const char *sbx_net_name(enum sbx_net n);
/* The names of the layers in `bits`, in order, joined by sep, into
 * buf (always NUL-terminated, cut to fit); returns the length written. */
size_t sbx_layer_list(char *buf, size_t len, unsigned bits, const char *sep);

/* Bytes of a stream kept up to a limit: its head (stdout, taps) or its
 * tail (stderr). lost counts what was seen and not kept (cut by the
 * limit, dropped from the front, or refused memory). */
struct sbx_capture {
	char *p;
	size_t len;		/* bytes kept, at p */
	size_t size;		/* allocated */
	uint64_t lost;
	int oom;		/* sticky: memory ran out, bytes were lost */
};

/* A file the blocks left under /work/out, as the answer carries it
 * (sandbox/artifacts.c reads them). */
struct sbx_artifact {
	char *name;		/* "out/...", as the blocks named it (any bytes:
				 * not valid UTF-8 means omitted, no data) */
	char *data;		/* its bytes, NULL when omitted */
	size_t len;
	uint64_t bytes;		/* its size (0 for what is no regular file) */
	const char *omitted;	/* NULL, or why there is no data */
};

/* At most this many entries are listed, the first in name order; the
 * rest are only counted. An entry is a file, or what hides files: a
 * directory too deep or unreadable, a path too long to open. */
#define SBX_ARTIFACTS_LISTED 1024

struct sbx_artifacts {
	struct sbx_artifact *v;	/* in name order (bytewise) */
	size_t n;
	size_t truncated;	/* entries past SBX_ARTIFACTS_LISTED, and 1 when
				 * the walk stopped looking (MAX_SEEN) */
};

/* What processes cost, from the kernel's accounting (wait4's rusage of
 * a block's first process, which holds every process of the block it
 * or its init reaped): CPU time in user and system mode, and the
 * largest resident set any one of those processes had (not a sum). */
struct sbx_usage {
	long cpu_user_ms;
	long cpu_sys_ms;
	long max_rss_kib;
	/* the run's cgroup (sandbox/cgroup.c), -1 without one: the most
	 * memory its processes held together (memory.peak, v1's
	 * max_usage_in_bytes) and how many the kernel killed at its bound */
	long memory_peak_kib;
	long oom_kills;
	int cgroup;		/* the cgroup version, 0: none */
};

struct sbx_block_result {
	int exit_code;		/* 0..255, 128+N after a signal */
	int signal;		/* terminating signal or 0 */
	int started;		/* the process was created */
	int killed;		/* ended by the handler (timeout, disconnect, signal) */
	long duration_ms;
	struct sbx_capture err;	/* stderr, its last max_stderr bytes */
	uint64_t err_bytes;	/* stderr produced */
	uint64_t out_bytes;	/* stdout produced */
	struct sbx_usage usage;
};

struct sbx_tap {
	struct sbx_capture data;	/* first max_tap bytes that crossed the edge */
	uint64_t bytes;		/* all bytes that crossed */
};

/* The layers a run had, as its answer reports them. */
struct sbx_layers {
	enum sbx_mode mode;
	enum sbx_net net;
	unsigned applied;	/* reported applied: in force and whole */
	unsigned missing;	/* reported missing: all under off; a network
				 * layer left out on purpose is not */
	unsigned absent;	/* what besteffort went without (the audit's) */
};

struct sbx_result {
	size_t n;			/* blocks */
	struct sbx_block_result *res;	/* n */
	struct sbx_tap *taps;		/* n-1 edges */
	struct sbx_capture out;		/* last block's stdout, its first max_stdout bytes */
	uint64_t out_bytes;
	int out_truncated;
	enum sbx_end end;
	int end_signal;
	long duration_ms;
	/* the run's exit status, pipefail style (the last failing block's,
	 * 124 after the timeout), and the block that decided it (the last
	 * block when all succeeded): set once, when the relay ends */
	int exit_code;
	size_t decider;
	/* the blocks' CPU times summed, the largest of their peaks */
	struct sbx_usage usage;
	/* the limits the run had, for messages */
	size_t max_stdout, max_tap;
	double timeout_s;
	struct sbx_layers layers;
};

/* What this host allows, for /healthz and --probe. */
struct sbx_probe {
	int userns;		/* unprivileged user namespaces work */
	int landlock_abi;	/* < 0: none */
	int seccomp;
	int cgroup2;
	int net_empty;		/* the handler's network namespace is empty */
};

/* The sandbox self-test: whether the mode can set up a block here. */
struct sbx_health {
	enum sbx_mode mode;
	int available;
	struct sbx_probe host;
	struct sbx_layers layers;
	int failed_layer;	/* when not available: enum sbx_layer, or -1 */
	char error[256];
	/* how a run's memory is bounded here: "memory: each run's cgroup
	 * ..." or "memory: unbounded by cgroup (why) ..." */
	char memory[512];
};

#endif
