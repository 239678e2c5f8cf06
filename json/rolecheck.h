/* `codellm-handler --check`: a dry run over a fleet role note (SPEC §9).
 * Nothing is executed; the note is only read. The report lists the
 * note's fenced blocks and flags what would break once the role runs
 * under codellm instead of in-process. */
#ifndef CODELLM_ROLECHECK_H
#define CODELLM_ROLECHECK_H

#include <stddef.h>
#include <stdio.h>

struct registry;
struct jbuf;

/* Check the note `text` (len bytes, any bytes, need not be
 * NUL-terminated) named `name` against `reg` (its `allowed` flags are
 * --allowed-programs). max_blocks is the server's --max-blocks, 0 for no
 * limit. Appends the report to `out`, one line per fact, every line
 * "NAME: ...":
 *
 *   NAME: frontmatter: line 1-6            (or "frontmatter: none")
 *   NAME: role: tools=default writes=yes write_patterns=2
 *   NAME: block 0 label=py lang=python line 8-11: runs
 *   NAME: block 1 label=json lang=unknown line 13-15: prose, skipped
 *   NAME: problem: env_passthrough (line 4): ...
 *   NAME: ok                               (or "NAME: N problem(s)")
 *
 * Problem lines come after the block lines, the count line is last.
 * Control bytes in NAME and in labels are shown as \xHH. Allocates one
 * struct fence_block per fenced block for the duration of the call.
 * Returns the number of problems (>= 0), or -1 when out of memory (the
 * report in `out` is then incomplete). */
int rc_check_note(const char *name, const char *text, size_t len,
		  const struct registry *reg, size_t max_blocks,
		  struct jbuf *out);

/* The report of a note that could not be read at all: one problem line
 * naming `why` and the count line. Returns 1 (one problem), or -1 when
 * out of memory. */
int rc_unreadable(const char *name, const char *why, struct jbuf *out);

/* The --check driver: each file in paths[0..n) read whole (at most
 * 8 MiB; a file that cannot be read gets rc_unreadable's report) and
 * checked with rc_check_note, the reports written to out in order.
 * Returns 1 when a note has a problem, 0 when none has, -1 when memory
 * ran out or out could not be written. */
int rc_check_files(char *const *paths, int n, const struct registry *reg,
		   size_t max_blocks, FILE *out);

#endif
