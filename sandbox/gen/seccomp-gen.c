/* seccomp-gen: compile the blocks' two seccomp filters at build time and
 * write them as raw BPF, for sandbox/seccomp-blob.c to embed: the
 * hand-laid program of sandbox/seccomp.c (sbx_seccomp_build), which
 * resolves call names with libseccomp; compiling with libseccomp itself
 * takes tens of milliseconds and gives a program five times longer. The filter depends only on the architecture (the
 * build's) and on whether netlink route sockets are allowed.
 *
 *   seccomp-gen FILE-WITHOUT-NETLINK FILE-WITH-NETLINK */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/internal.h"

static int write_filter(const char *path, int netlink_route)
{
	struct sbx_seccomp_cfg c = {
		.netlink_route = netlink_route, .uid = SBX_BLOCK_ID, .gid = SBX_BLOCK_ID,
	};
	struct sbx_bpf b = { 0 };
	int fd, rc = sbx_seccomp_build(&c, &b);

	if (rc < 0) {
		fprintf(stderr, "seccomp-gen: %s: %s\n", path, strerror(-rc));
		return 1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, b.insns, b.len) != (ssize_t)b.len || close(fd) < 0) {
		fprintf(stderr, "seccomp-gen: %s: %s\n", path, strerror(errno));
		free(b.insns);
		return 1;
	}
	free(b.insns);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: seccomp-gen FILE-WITHOUT-NETLINK FILE-WITH-NETLINK\n");
		return 2;
	}
	return write_filter(argv[1], 0) || write_filter(argv[2], 1);
}
