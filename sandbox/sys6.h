/* The raw system-call entry, without libc: for codellm-init, which has
 * none (sandbox/init/), and for the handler's code that must not touch
 * libc's state (sandbox/raw.h). The result is -errno on failure.
 * SBX_HAVE_SYS6 says whether this architecture has it here. */
#ifndef CODELLM_SANDBOX_SYS6_H
#define CODELLM_SANDBOX_SYS6_H

#if defined(__x86_64__)
#define SBX_HAVE_SYS6 1
static inline long sbx_sys6(long n, long a, long b, long c, long d, long e, long f)
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
#define SBX_HAVE_SYS6 1
static inline long sbx_sys6(long n, long a, long b, long c, long d, long e, long f)
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
#else
#define SBX_HAVE_SYS6 0
#endif

#endif
