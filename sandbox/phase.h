/* Where a request's time goes: timestamps at fixed points of its life,
 * for `make bench-phases` (tests/bench/phases.py). Compiled in only with
 * -DCODELLM_PHASES; in every other build each call is empty and the
 * handler is the one that ships.
 *
 * The marks live in one shared anonymous page, so the block's processes
 * (clones of the handler, with its memory or a copy) and the bench's
 * baselines' forked children fill in their own points. The first mark
 * of a point wins: only block 0's are kept. At exit the handler appends
 * one line to the file named by CODELLM_PHASES_FILE: "phases", its own
 * minor and major page faults, then each point's microseconds since the
 * start, -1 where there was none. */
#ifndef SBX_PHASE_H
#define SBX_PHASE_H

enum sbx_phase {
	SBX_PH_START,		/* main() */
	SBX_PH_REQUEST,		/* the request read whole */
	SBX_PH_SLOT,		/* parsed and checked, a run slot taken */
	SBX_PH_CGROUP,		/* the run's cgroup ready */
	SBX_PH_ETC,		/* the slot's kept /etc checked */
	SBX_PH_RUNDIR,		/* the run's namespace and tmpfs made */
	SBX_PH_PREPARED,	/* the run prepared, its files written */
	SBX_PH_CLONE,		/* block 0's clone called */
	SBX_PH_BLOCK,		/* block 0's first process running */
	SBX_PH_ROOT,		/* its root built */
	SBX_PH_PROGRAM,		/* its program process running */
	SBX_PH_EXEC,		/* the program's execve called */
	SBX_PH_OUTPUT,		/* the first bytes of the output read */
	SBX_PH_ENDED,		/* every block reaped */
	SBX_PH_ANSWERED,	/* the answer sent whole */
	SBX_PH_EXIT,		/* the cleanup done */
	SBX_PH_COUNT
};

#ifdef CODELLM_PHASES
/* Opens the file and maps the page (main, first thing); the variable
 * is removed from the environment so no program sees it. */
void sbx_phase_open(void);
/* System calls at most (the vDSO clock): the block's processes call it
 * while they share the handler's memory. */
void sbx_phase_mark(enum sbx_phase p);
void sbx_phase_dump(void);
#else
static inline void sbx_phase_open(void) {}
static inline void sbx_phase_mark(enum sbx_phase p) { (void)p; }
static inline void sbx_phase_dump(void) {}
#endif

#endif
