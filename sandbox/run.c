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

#include "sandbox/run.h"

static int fail(int layer, int err, int *ret_layer, char *msg, size_t msglen,
		const char *what)
{
	*ret_layer = layer;
	snprintf(msg, msglen, "%s: %s", what, strerror(err));
	return -err;
}

int sbx_run_prepare(struct sbx_run *run, const struct sbx_config *cfg,
		    size_t nblocks, int *ret_layer, char *msg, size_t msglen)
{
	struct sbx_policy *pol = &run->pol;
	int abi, rc;

	memset(run, 0, sizeof *run);
	run->dir.root_fd = -1;
	run->code_fd = -1;
	*ret_layer = -1;
	pol->mode = cfg->mode;
	pol->allow_network = cfg->allow_network;
	pol->lim = cfg->lim;
	if (cfg->mode == SBX_OFF) {
		pol->layers = 0;
		pol->net = SBX_NET_HOST;
	} else {
		pol->layers = SBX_ALL_LAYERS;
		abi = sbx_landlock_abi();
		/* Without a namespace of its own a block uses the handler's:
		 * open with --sandbox-network, or the empty one shared by all
		 * runs — only where Landlock scopes abstract sockets and
		 * signals, so runs cannot reach each other through it. */
		if (cfg->allow_network) {
			pol->layers &= ~SBX_BIT(SBX_L_NETNS);
			pol->net = SBX_NET_HOST;
		} else if (abi >= 6 && sbx_net_is_empty()) {
			pol->layers &= ~SBX_BIT(SBX_L_NETNS);
			pol->net = SBX_NET_SHARED;
		} else {
			pol->net = SBX_NET_OWN;
		}
	}
	if (pol->layers & SBX_BIT(SBX_L_WORKDIR)) {
		rc = sbx_request_ns(&run->dir, cfg->workdir_bytes, cfg->workdir_inodes,
				    cfg->run_bytes, &pol->map_uid, &pol->map_gid);
		if (rc < 0) {
			if (cfg->mode == SBX_NATIVE)
				return fail(SBX_L_WORKDIR, -rc, ret_layer, msg, msglen,
					    "workdir: a bounded tmpfs in a user namespace of the handler's own");
			pol->layers &= ~SBX_BIT(SBX_L_WORKDIR);
			run->missing |= SBX_BIT(SBX_L_WORKDIR);
		}
	}
	if (!(pol->layers & SBX_BIT(SBX_L_WORKDIR))) {
		rc = sbx_rundir_create(&run->dir, cfg->tmp_parent);
		if (rc < 0)
			return fail(-1, -rc, ret_layer, msg, msglen, "the run's directory");
		pol->map_uid = geteuid();
		pol->map_gid = getegid();
		/* a root handler's blocks are the host's 65534 (mapped, or
		 * switched to without a user namespace): the workdir is
		 * theirs, the code theirs to read */
		if (cfg->mode != SBX_OFF && geteuid() == 0) {
			pol->map_uid = 65534;
			pol->map_gid = 65534;
			if (chmod(run->dir.root, 0711) < 0 || chmod(run->dir.code, 0755) < 0 ||
			    chown(run->dir.work, 65534, 65534) < 0)
				return fail(-1, errno, ret_layer, msg, msglen, "the run's directory");
		}
	}
	pol->work = run->dir.work;
	pol->code = run->dir.code;
	pol->roots = run->dir.roots;
	for (size_t i = 0; i < nblocks && pol->roots[0]; i++) {
		char p[400];

		snprintf(p, sizeof p, "%s/%zu", pol->roots, i);
		if (mkdir(p, 0755) < 0)
			return fail(-1, errno, ret_layer, msg, msglen, "block root mount point");
	}
	run->code_fd = open(run->dir.code, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (run->code_fd < 0)
		return fail(-1, errno, ret_layer, msg, msglen, "the code directory");
	if (pol->layers & SBX_BIT(SBX_L_SECCOMP)) {
		rc = sbx_policy_seccomp(pol);
		if (rc < 0) {
			if (cfg->mode == SBX_NATIVE)
				return fail(SBX_L_SECCOMP, -rc, ret_layer, msg, msglen,
					    "seccomp: compiling the filter");
			pol->layers &= ~SBX_BIT(SBX_L_SECCOMP);
			run->missing |= SBX_BIT(SBX_L_SECCOMP);
		}
	}
	return 0;
}

int sbx_policy_seccomp(struct sbx_policy *pol)
{
	/* netlink route queries only where they see the block's own empty
	 * namespace; 65534 is the block's one id inside */
	struct sbx_seccomp_cfg sc = {
		.netlink_route = pol->net == SBX_NET_OWN, .uid = 65534, .gid = 65534,
	};
	struct sbx_bpf b = { 0 };
	int rc = sbx_seccomp_build(&sc, &b);

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
	sbx_bpf_free(&run->pol.bpf);
	rc = sbx_rundir_unmount(&run->dir);
	return rc;
}

void sbx_run_report(const struct sbx_run *run, unsigned missing_now,
		    struct jbuf *b)
{
	const struct sbx_policy *pol = &run->pol;
	unsigned missing = run->missing | missing_now;
	int first = 1;

	jbuf_printf(b, "{\"mode\":\"%s\",\"layers\":[", sbx_mode_name(pol->mode));
	for (int l = 0; l < SBX_L_COUNT; l++) {
		if (!(pol->layers & SBX_BIT(l)))
			continue;
		jbuf_printf(b, "%s\"%s\"", first ? "" : ",", sbx_layer_name(l));
		first = 0;
	}
	jbuf_puts(b, "],\"missing\":[");
	first = 1;
	for (int l = 0; l < SBX_L_COUNT; l++) {
		/* off applies nothing; a network layer left out on purpose
		 * (shared or open network) is not missing */
		int absent = pol->mode == SBX_OFF ? 1 : !!(missing & SBX_BIT(l));

		if (l == SBX_L_NETNS && pol->net != SBX_NET_OWN && !(missing & SBX_BIT(l)))
			absent = pol->mode == SBX_OFF;
		if (!absent)
			continue;
		jbuf_printf(b, "%s\"%s\"", first ? "" : ",", sbx_layer_name(l));
		first = 0;
	}
	jbuf_printf(b, "],\"net\":\"%s\"}", sbx_net_name(pol->net));
}
