/* min-sandbox: the minimal hand-written sandbox of make bench's
 * sandbox-handler baseline (see min-sandbox.c for what it does). */
#ifndef MIN_SANDBOX_H
#define MIN_SANDBOX_H

#include <sys/types.h>

/* Starts path with argv (and the caller's environment) in a sandbox of
 * its own: stdout out_fd, stdin /dev/null, stderr inherited. Returns the
 * pid to waitpid() for, or -1. A sandbox step that fails makes the child
 * say which on stderr and exit 127. */
pid_t msb_spawn(const char *path, char *const argv[], int out_fd);

#endif
