/* Sending a record to the journal (systemd's native protocol). */
#ifndef CODELLM_JOURNAL_H
#define CODELLM_JOURNAL_H

#include <sys/uio.h>

/* Sends the fields, each "NAME=value" (a value may hold any byte), as
 * one journal record. 0, or -errno (e.g. -ENOENT: no journald). */
int journal_send(const struct iovec *iov, int n);

/* The same to another socket (the unit test's). */
int journal_send_to(const char *path, const struct iovec *iov, int n);

/* Writes line[0..n) to fd whole (a record where no journal listens:
 * one write unless the pipe takes less). 0, or -errno. */
int journal_line(int fd, const char *line, size_t n);

#endif
