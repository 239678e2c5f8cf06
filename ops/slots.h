/* Concurrency slots shared by every handler instance (SPEC §9): N lock
 * files in a directory that outlives single instances; a run holds one
 * flock for its lifetime, and the kernel releases it however the
 * process ends (also on SIGKILL or a crash). The files are 0600 and
 * must belong to the service user (the handler's euid). */
#ifndef CODELLM_SLOTS_H
#define CODELLM_SLOTS_H

/* Takes a free slot of `n` in `dir`: returns its fd (>= 0, CLOEXEC; keep
 * it open), -EBUSY when all are taken, another -errno when the directory
 * is unusable. */
int slot_take(const char *dir, unsigned n, unsigned *ret_index);

#endif
