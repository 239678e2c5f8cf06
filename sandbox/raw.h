/* System calls without libc, for code that runs in memory another
 * process shares and may be running libc in (the shared start: the
 * handler, a block's first process and its program, spawn.c and
 * child.c). errno belongs to whichever thread-local storage both see,
 * so nothing here sets it: the result is -errno on failure. */
#ifndef CODELLM_SANDBOX_RAW_H
#define CODELLM_SANDBOX_RAW_H

#include <sys/syscall.h>

#include "sandbox/internal.h"

#if SBX_SHARED_START
#if defined(__x86_64__)
static inline long sbx_raw6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long sbx_raw6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#endif

#define sbx_raw(n, a, b, c) sbx_raw6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

__attribute__((noreturn)) static inline void sbx_raw_exit(int code)
{
	for (;;)
		sbx_raw(SYS_exit_group, code, 0, 0);
}
#endif

#endif
