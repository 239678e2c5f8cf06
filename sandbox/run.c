/* A request's run: which layers apply, where the network is, the run's
 * directory (a bounded tmpfs in the handler's own namespaces, or a
 * directory on disk when that layer is absent), its files, and the
 * compiled seccomp filter. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/run.h"

struct prep {
	int *ret_layer;
	char *msg;
	size_t msglen;
};

static int fail(int layer, int err, struct prep *e, const char *what)
{
	*e->ret_layer = layer;
	snprintf(e->msg, e->msglen, "%s: %s", what, strerror(err));
	return -err;
}

/* A layer that cannot be applied: native refuses the run naming it;
 * besteffort goes on without it and reports it missing. */
static int layer_failed(struct sbx_run *run, int layer, int err, struct prep *e,
			const char *what)
{
	if (run->pol.mode == SBX_NATIVE)
		return fail(layer, err, e, what);
	run->pol.layers &= ~SBX_BIT(layer);
	run->missing |= SBX_BIT(layer);
	return 0;
}

/* Where a block's network is. Without a namespace of its own a block
 * uses the handler's: open with --sandbox-network, or, with
 * --share-netns, the empty one shared by all runs; both only where
 * Landlock scopes abstract unix sockets and signals (ABI 6), so a block
 * reaches neither the host's abstract sockets (D-Bus, X11, container
 * shims) nor other runs. Where the shared one cannot be used (the
 * handler's namespace is not empty, or the ABI is older) a block gets
 * its own, which is the stronger wall: nothing is missing. */
static int choose_network(struct sbx_run *run, const struct sbx_config *cfg,
			  struct prep *e)
{
	struct sbx_policy *pol = &run->pol;
	int abi = sbx_landlock_abi();

	if (cfg->allow_network) {
		pol->layers &= ~SBX_BIT(SBX_L_NETNS);
		pol->net = SBX_NET_HOST;
		if (abi >= SBX_LANDLOCK_SCOPE_ABI)
			return 0;
		if (cfg->mode == SBX_NATIVE)
			return fail(SBX_L_LANDLOCK, ENOTSUP, e,
				    "--sandbox-network needs Landlock ABI 6 or later to keep "
				    "blocks from the host's abstract unix sockets");
		/* besteffort: Landlock still applies what this ABI has,
		 * and the answer says it is not whole */
		run->missing |= SBX_BIT(SBX_L_LANDLOCK);
	} else if (cfg->share_netns && abi >= SBX_LANDLOCK_SCOPE_ABI && sbx_net_is_empty()) {
		pol->layers &= ~SBX_BIT(SBX_L_NETNS);
		pol->net = SBX_NET_SHARED;
	} else {
		pol->net = SBX_NET_OWN;
	}
	return 0;
}

/* The run's kernel identity (THREATS.md #17). A root handler becomes
 * its run slot's own uid, without supplementary groups, so no per-user
 * kernel limit is shared with another run; any other handler cannot
 * drop supplementary groups (a block would keep what they grant) and
 * shares its uid, so the run gets its share of the limits later, in its
 * user namespace. Returns 1 when the run has a uid of its own. */
static int take_identity(struct sbx_run *run, const struct sbx_config *cfg,
			 struct prep *e)
{
	int rc;

	if (geteuid() == 0) {
		/* inside a namespace that does not map the slot uids (a
		 * container's), runs share root's uid and their limits; so
		 * do besteffort runs without user namespaces, whose run
		 * directory is then made by root on disk */
		if (cfg->run_uid != (uid_t)-1 && sbx_can_become(cfg->run_uid) &&
		    (run->pol.layers & SBX_BIT(SBX_L_UCOUNTS)) &&
		    (cfg->mode == SBX_NATIVE || sbx_userns_works())) {
			if ((rc = sbx_become(cfg->run_uid)) == 0)
				return 1;
			if (rc == -ENOTRECOVERABLE)
				return fail(SBX_L_UCOUNTS, -rc, e, "ucounts: becoming the run's own uid");
			if ((rc = layer_failed(run, SBX_L_UCOUNTS, -rc, e,
					       "ucounts: becoming the run's own uid")) < 0)
				return rc;
		}
		if ((rc = sbx_drop_groups()) < 0)
			return layer_failed(run, SBX_L_GROUPS, -rc, e,
					    "groups: dropping supplementary groups");
		return 0;
	}
	rc = sbx_has_groups();
	if (rc != 0)
		return layer_failed(run, SBX_L_GROUPS, rc < 0 ? -rc : EPERM, e,
				    "groups: the handler has supplementary groups, which a "
				    "non-root handler cannot drop and blocks would keep");
	return 0;
}

/* The run's directory: a bounded tmpfs in a user namespace of the
 * handler's own, or (besteffort, without one) a directory on disk. */
static int make_rundir(struct sbx_run *run, const struct sbx_config *cfg,
		       struct prep *e)
{
	struct sbx_policy *pol = &run->pol;
	int rc;

	if (pol->layers & SBX_BIT(SBX_L_WORKDIR)) {
		rc = sbx_request_ns(&run->dir, cfg->workdir_bytes, cfg->workdir_inodes,
				    cfg->run_bytes, cfg->sysroot,
				    run->etc.kept[0] && run->etc.tree < 0 ? run->etc.kept : NULL,
				    &pol->map_uid, &pol->map_gid);
		if (rc < 0 && (rc = layer_failed(run, SBX_L_WORKDIR, -rc, e,
				"workdir: a bounded tmpfs in a user namespace of the handler's own")) < 0)
			return rc;
	}
	if (pol->layers & SBX_BIT(SBX_L_WORKDIR))
		return 0;
	rc = sbx_rundir_create(&run->dir, cfg->tmp_parent);
	if (rc < 0)
		return fail(-1, -rc, e, "the run's directory");
	pol->map_uid = geteuid();
	pol->map_gid = getegid();
	/* a root handler's blocks are the host's 65534 (mapped, or
	 * switched to without a user namespace): the workdir and /tmp are
	 * theirs, the code theirs to read */
	if (cfg->mode != SBX_OFF && geteuid() == 0) {
		pol->map_uid = SBX_BLOCK_ID;
		pol->map_gid = SBX_BLOCK_ID;
		if (chmod(run->dir.root, 0711) < 0 || chmod(run->dir.code, 0755) < 0 ||
		    chmod(run->dir.masks, 0755) < 0 ||
		    chown(run->dir.work, SBX_BLOCK_ID, SBX_BLOCK_ID) < 0)
			return fail(-1, errno, e, "the run's directory");
	}
	return 0;
}

/* What the blocks' roots share: the mask files for /proc and the clean
 * init; then the per-user limits of a run that shares its uid. */
static int run_files(struct sbx_run *run, const struct sbx_config *cfg,
		     int own_uid, struct prep *e)
{
	struct sbx_policy *pol = &run->pol;
	int rc;

	if ((pol->layers & SBX_BIT(SBX_L_PROC)) &&
	    (rc = sbx_write_masks(run->dir.masks, cfg->lim.memory)) < 0 &&
	    (rc = layer_failed(run, SBX_L_PROC, -rc, e, "proc: the mask files")) < 0)
		return rc;
	if (pol->layers & SBX_BIT(SBX_L_INIT)) {
		rc = sbx_init_memfd();
		if (rc >= 0)
			pol->files.init_fd = rc;
		else if ((rc = layer_failed(run, SBX_L_INIT, -rc, e,
					    "init: the executable memfd of codellm-init")) < 0)
			return rc;
	}
	if (own_uid || !(pol->layers & SBX_BIT(SBX_L_UCOUNTS)))
		return 0;
	if (!(pol->layers & SBX_BIT(SBX_L_WORKDIR)))
		return layer_failed(run, SBX_L_UCOUNTS, ENOTSUP, e,
				    "ucounts: needs the run's own user namespace");
	if ((rc = sbx_share_ucounts(cfg->share)) < 0)
		return layer_failed(run, SBX_L_UCOUNTS, -rc, e,
				    "ucounts: the run's share of the per-user limits");
	return 0;
}

/* The source of the blocks' /etc: the environment's, or the host's (as
 * the run's namespace sees it, where given). */
static void etc_source(const struct sbx_config *cfg, const struct sbx_rundir *d, char *buf,
		       size_t len)
{
	const char *root = d && d->sysroot[0] ? d->sysroot : cfg->sysroot;

	snprintf(buf, len, "%s/etc", root ? root : "");
}

/* The slot's kept /etc, checked (or made again) while a root handler is
 * still root: one per slot, environment and network, named so. Not
 * there: the run makes its own (blocks_etc). */
static void keep_etc(struct sbx_run *run, const struct sbx_config *cfg)
{
	char name[64], src[PATH_MAX];
	unsigned long h = 5381;

	for (const char *c = cfg->sysroot ? cfg->sysroot : ""; *c; c++)
		h = h * 33 + (unsigned char)*c;
	if (cfg->sysroot)
		snprintf(name, sizeof name, "etc.%d%s.env-%lx", cfg->slot,
			 cfg->allow_network ? ".net" : "", h);
	else
		snprintf(name, sizeof name, "etc.%d%s.host", cfg->slot,
			 cfg->allow_network ? ".net" : "");
	etc_source(cfg, NULL, src, sizeof src);
	sbx_etc_keep(&run->etc, cfg->keep_dir, name, src, cfg->allow_network);
}

/* The blocks' /etc in the run's directory: the kept one attached, or one
 * of the run's own. */
static int blocks_etc(struct sbx_run *run, const struct sbx_config *cfg, struct prep *e)
{
	char at[320], src[PATH_MAX];
	int rc = -ENOENT;

	snprintf(at, sizeof at, "%s/etc", run->dir.root);
	if (run->dir.etc[0]) {
		/* a handler that is not root: bound by sbx_request_ns */
		snprintf(run->etc.dir, sizeof run->etc.dir, "%s", run->dir.etc);
		rc = 0;
	} else if (run->etc.tree >= 0 && run->dir.tmpfs) {
		rc = sbx_etc_attach(&run->etc, at);
	}
	sbx_etc_release(&run->etc);
	if (rc < 0) {
		etc_source(cfg, &run->dir, src, sizeof src);
		rc = sbx_etc_make(&run->etc, at, src, cfg->allow_network);
	}
	if (rc < 0)
		return layer_failed(run, SBX_L_ROOT, -rc, e, "root: the blocks' /etc");
	run->pol.files.etc = &run->etc;
	return 0;
}

/* What each pipe between two blocks may hold. A pipe holds 64 KiB
 * unless made larger, and a larger one wakes the relay less often (64
 * MiB through three blocks here: 64 KiB 77 ms, 256 KiB 65 ms, 1 MiB 61
 * ms). The kernel counts pipe pages per uid (fs.pipe-user-pages-soft,
 * past which a user's new pipes get one page), and runs that share a
 * uid share them: a run's edges take at most a quarter of that budget
 * divided among the runs that may share it; a power of two from 128
 * KiB to 1 MiB, else 0 (the default stays). */
static unsigned edge_pipe_bytes(size_t nblocks, unsigned share)
{
	unsigned long long pages = 16384, per, bytes = 1ULL << 20;
	char buf[32];
	int fd;

	if (nblocks < 2)
		return 0;
	fd = open("/proc/sys/fs/pipe-user-pages-soft", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof buf - 1);

		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			pages = strtoull(buf, NULL, 10);
		}
	}
	if (pages == 0)		/* no soft limit */
		return (unsigned)bytes;
	per = pages / 4 / (share ? share : 1) / (2 * (nblocks - 1)) * 4096;
	while (bytes > per && bytes > (128u << 10))
		bytes >>= 1;
	return bytes <= per ? (unsigned)bytes : 0;
}

/* The run's cgroup, while a root handler is still root (it becomes its
 * slot's uid after); without one, nothing bounds what a block keeps in
 * memfds (a file each, --max-file-bytes, as many as it has descriptors):
 * memfd_create fails as on an old kernel. */
static void run_cgroup(struct sbx_run *run, const struct sbx_config *cfg, size_t nblocks)
{
	struct sbx_policy *pol = &run->pol;

	if (cfg->run_memory_max &&
	    sbx_cgroup_create(&run->cg, cfg->run_memory_max,
			      cfg->lim.procs * nblocks + nblocks,
			      geteuid() == 0 && cfg->mode != SBX_OFF ? cfg->run_uid : (uid_t)-1,
			      cfg->cgroup_slot[0] ? cfg->cgroup_slot : NULL) == 0)
		pol->cg = &run->cg;
	else
		pol->no_memfd = 1;
	sbx_phase_mark(SBX_PH_CGROUP);
}

int sbx_run_prepare(struct sbx_run *run, const struct sbx_config *cfg,
		    size_t nblocks, int *ret_layer, char *msg, size_t msglen)
{
	struct sbx_policy *pol = &run->pol;
	struct prep e = { ret_layer, msg, msglen };
	int own_uid = 0, rc;

	memset(run, 0, sizeof *run);
	run->dir.root_fd = -1;
	run->code_fd = -1;
	run->etc.tree = -1;
	sbx_cgroup_init(&run->cg);
	pol->files.init_fd = -1;
	*ret_layer = -1;
	pol->mode = cfg->mode;
	pol->allow_network = cfg->allow_network;
	pol->lim = cfg->lim;
	pol->shm_bytes = cfg->shm_bytes;
	pol->layers = cfg->mode == SBX_OFF ? 0 : SBX_ALL_LAYERS;
	pol->net = SBX_NET_HOST;
	pol->sysroot = cfg->sysroot;
	/* an environment is the blocks' root: without one (--sandbox off)
	 * they would run on the host's trees, which nobody asked for */
	if (cfg->sysroot && !(pol->layers & SBX_BIT(SBX_L_ROOT)))
		return fail(SBX_L_ROOT, ENOTSUP, &e, "root: an environment's trees are bound "
			    "into the block's own root, which --sandbox off does not build");
	run_cgroup(run, cfg, nblocks);
	if ((pol->layers & SBX_BIT(SBX_L_ROOT)) && cfg->keep_dir)
		keep_etc(run, cfg);
	sbx_phase_mark(SBX_PH_ETC);
	if (cfg->mode != SBX_OFF) {
		if ((rc = choose_network(run, cfg, &e)) < 0 ||
		    (rc = take_identity(run, cfg, &e)) < 0)
			return rc;
		own_uid = rc;
	}
	pol->edge_pipe_bytes = edge_pipe_bytes(nblocks, own_uid ? 1 : cfg->share);
	if ((rc = make_rundir(run, cfg, &e)) < 0)
		return rc;
	sbx_phase_mark(SBX_PH_RUNDIR);
	if (run->dir.sysroot[0])
		pol->sysroot = run->dir.sysroot;
	if ((rc = run_files(run, cfg, own_uid, &e)) < 0)
		return rc;
	if ((pol->layers & SBX_BIT(SBX_L_ROOT)) && (rc = blocks_etc(run, cfg, &e)) < 0)
		return rc;
	pol->work = run->dir.work;
	pol->tmp = run->dir.tmp;
	pol->code = run->dir.code;
	pol->roots = run->dir.roots;
	pol->files.masks = run->dir.masks;
	for (size_t i = 0; i < nblocks && pol->roots[0]; i++) {
		char p[400];

		snprintf(p, sizeof p, "%s/%zu", pol->roots, i);
		if (mkdir(p, 0755) < 0)
			return fail(-1, errno, &e, "block root mount point");
	}
	run->code_fd = open(run->dir.code, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (run->code_fd < 0)
		return fail(-1, errno, &e, "the code directory");
	if (pol->layers & SBX_BIT(SBX_L_SECCOMP)) {
		rc = sbx_policy_seccomp(pol);
		if (rc < 0 && (rc = layer_failed(run, SBX_L_SECCOMP, -rc, &e,
						 "seccomp: loading the filter")) < 0)
			return rc;
	}
	return 0;
}

int sbx_policy_seccomp(struct sbx_policy *pol)
{
	/* netlink route queries only where they see the block's own
	 * namespace; the filter was compiled at build time (seccomp-blob.c) */
	struct sbx_bpf b = { 0 };
	int rc = sbx_seccomp_prebuilt(pol->net == SBX_NET_OWN, &b);

	if (rc < 0)
		return rc;
	sbx_bpf_free(&pol->bpf);
	pol->bpf = b;
	return 0;
}

int sbx_run_add_file(struct sbx_run *run, const char *name, const void *data,
		     size_t len)
{
	return sbx_write_file(run->code_fd, name, data, len, 0444);
}

int sbx_run_add_bag(struct sbx_run *run, const void *data, size_t len)
{
	int wd, rc;

	/* one copy beside the code, bound read-only over the workdir copy
	 * inside a block's root; the workdir copy is $FLEET_INPUT where a
	 * block has no root of its own */
	rc = sbx_write_file(run->code_fd, SBX_BAG_NAME, data, len, 0444);
	if (rc < 0)
		return rc;
	wd = open(run->dir.work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wd < 0)
		return -errno;
	rc = sbx_write_file(wd, SBX_BAG_NAME, data, len, 0444);
	close(wd);
	if (rc == 0)
		run->pol.has_bag = 1;
	return rc;
}

int sbx_run_finish(struct sbx_run *run)
{
	int rc;

	if (run->code_fd >= 0)
		close(run->code_fd);
	run->code_fd = -1;
	if (run->pol.files.init_fd >= 0)
		close(run->pol.files.init_fd);
	run->pol.files.init_fd = -1;
	sbx_bpf_free(&run->pol.bpf);
	sbx_etc_release(&run->etc);
	rc = sbx_rundir_unmount(&run->dir);
	sbx_cgroup_remove(&run->cg);
	return rc;
}

const char *sbx_mode_name(enum sbx_mode m)
{
	switch (m) {
	case SBX_NATIVE: return "native";
	case SBX_BESTEFFORT: return "besteffort";
	case SBX_OFF: return "off";
	}
	return "?";
}

static const char *const layer_names[SBX_L_COUNT] = {
	"userns", "pidns", "mountns", "netns", "ipcns", "utsns", "cgroupns",
	"workdir", "groups", "ucounts", "root", "proc", "init", "rlimits",
	"no_new_privs", "caps", "landlock", "seccomp",
};

const char *sbx_layer_name(int layer)
{
	return layer >= 0 && layer < SBX_L_COUNT ? layer_names[layer] : "setup";
}

int sbx_layer_from_name(const char *name, size_t len)
{
	for (int l = 0; l < SBX_L_COUNT; l++)
		if (strlen(layer_names[l]) == len && !memcmp(layer_names[l], name, len))
			return l;
	return -1;
}

const char *sbx_net_name(enum sbx_net n)
{
	return n == SBX_NET_OWN ? "own" : n == SBX_NET_SHARED ? "shared" : "host";
}

size_t sbx_layer_list(char *buf, size_t len, unsigned bits, const char *sep)
{
	size_t n = 0;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	for (int l = 0; l < SBX_L_COUNT && n + 1 < len; l++) {
		if (!(bits & SBX_BIT(l)))
			continue;
		snprintf(buf + n, len - n, "%s%s", n ? sep : "", sbx_layer_name(l));
		n += strlen(buf + n);
	}
	return n;
}

void sbx_run_layers(const struct sbx_run *run, unsigned missing_now,
		    struct sbx_layers *ret)
{
	const struct sbx_policy *pol = &run->pol;
	unsigned missing = run->missing | missing_now;

	ret->mode = pol->mode;
	ret->net = pol->net;
	ret->absent = missing;
	/* a layer applied only in part (Landlock without the scoping
	 * --sandbox-network needs) is reported missing */
	ret->applied = pol->layers & ~missing;
	/* off applies nothing; a network layer left out on purpose
	 * (shared or open network) is not missing: choose_network takes it
	 * out of pol->layers, not into run->missing */
	ret->missing = pol->mode == SBX_OFF ? SBX_ALL_LAYERS : missing;
}

const struct sbx_result *sbx_run_result(const struct sbx_run *run,
					struct sbx_pipeline *p)
{
	sbx_run_layers(run, p->missing, &p->r.layers);
	return &p->r;
}
