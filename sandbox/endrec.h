/* The end record: what a block's init writes on its ready pipe once the
 * program has ended and nothing else of the block is left
 * (sandbox/init/codellm-init.c; child.c's init_wait where the clean
 * init could not be exec'd). 'S', the program's raw wait status, then
 * what the block used as wait4 would report it for the init: user and
 * system CPU time of the init and of every process it reaped, in
 * microseconds, and the largest resident set among them, in KiB.
 *
 * With it the handler can answer as soon as the block has ended, while
 * the init is still on its way out (its exit tears the block's
 * namespaces down: some 0.3 ms here). Fixed offsets, native byte
 * order, one write shorter than PIPE_BUF (so it arrives whole). No
 * includes: the freestanding init has no libc. */
#ifndef SBX_ENDREC_H
#define SBX_ENDREC_H

#define SBX_END_TAG 'S'
#define SBX_END_STATUS 1	/* int: the program's raw wait status */
#define SBX_END_UTIME_US 5	/* 64-bit: user CPU time */
#define SBX_END_STIME_US 13	/* 64-bit: system CPU time */
#define SBX_END_MAXRSS_KIB 21	/* 64-bit: the largest resident set */
#define SBX_END_LEN 29

/* Fills msg[SBX_END_LEN] from the program's wait status and, where ok,
 * the init's RUSAGE_SELF and RUSAGE_CHILDREN (libc's struct rusage or
 * the kernel's: their fields are named alike); copy is memcpy, or the
 * freestanding init's own. Without ok the usage reads 0. */
#define SBX_END_RECORD(msg, status, ok, self, kids, copy) do {				\
	int end_st_ = (status);								\
	long long end_ut_ = 0, end_sy_ = 0, end_rss_ = 0;				\
											\
	if (ok) {									\
		end_ut_ = ((long long)(self).ru_utime.tv_sec + (kids).ru_utime.tv_sec) *	\
			  1000000 + (self).ru_utime.tv_usec + (kids).ru_utime.tv_usec;	\
		end_sy_ = ((long long)(self).ru_stime.tv_sec + (kids).ru_stime.tv_sec) *	\
			  1000000 + (self).ru_stime.tv_usec + (kids).ru_stime.tv_usec;	\
		end_rss_ = (self).ru_maxrss > (kids).ru_maxrss ? (self).ru_maxrss :	\
								 (kids).ru_maxrss;	\
	}										\
	(msg)[0] = SBX_END_TAG;								\
	copy((msg) + SBX_END_STATUS, &end_st_, sizeof end_st_);				\
	copy((msg) + SBX_END_UTIME_US, &end_ut_, sizeof end_ut_);			\
	copy((msg) + SBX_END_STIME_US, &end_sy_, sizeof end_sy_);			\
	copy((msg) + SBX_END_MAXRSS_KIB, &end_rss_, sizeof end_rss_);			\
} while (0)

#endif
