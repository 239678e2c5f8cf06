/* System calls without libc, for code that runs in memory another
 * process shares and may be running libc in (the shared start: the
 * handler, a block's first process and its program, spawn.c and
 * child.c), and for what such code shares with the ordinary start (the
 * init's exec). errno belongs to whichever thread-local storage both
 * see, so nothing here sets it: the result is -errno on failure. */
#ifndef CODELLM_SANDBOX_RAW_H
#define CODELLM_SANDBOX_RAW_H

#include <sys/syscall.h>

#include "sandbox/internal.h"
#include "sandbox/sys6.h"

#if !SBX_HAVE_SYS6
#error "codellm: add this architecture's system-call entry (sandbox/sys6.h)"
#endif

#define sbx_raw(n, a, b, c) sbx_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

__attribute__((noreturn)) static inline void sbx_raw_exit(int code)
{
	for (;;)
		sbx_raw(SYS_exit_group, code, 0, 0);
}

/* v in decimal, written backwards to end with a NUL at *end (at most
 * 11 bytes before it); returns where the digits begin. No libc. */
static inline char *sbx_utoa(char *end, unsigned v)
{
	*end = '\0';
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

#endif
