/* RLIMIT_CPU of a block process from the run's timeout and
 * --max-cpu-seconds (sbx_cpu_rlimit). */
#include "sandbox/internal.h"
#include "tests/tap.h"

static const struct {
	double cpu_s, timeout_s;
	unsigned long long soft, hard;
	const char *why;
} rows[] = {
	{ 0, 240, 241, 243, "the default --timeout: 240 + 1, hard 2 above" },
	{ 0, 10, 11, 13, "a whole timeout" },
	{ 0, 2.5, 4, 6, "a fractional timeout is rounded up" },
	{ 0, 0.001, 2, 4, "a tiny timeout still gives a whole second plus the margin" },
	{ 0, 0, 1, 3, "no timeout (the --probe block, which never runs): the margin" },
	{ 1, 60, 1, 3, "--max-cpu-seconds below the default wins" },
	{ 1.2, 60, 2, 4, "--max-cpu-seconds is rounded up" },
	{ 100, 10, 11, 13, "--max-cpu-seconds above the default: the default" },
	{ 11, 10, 11, 13, "--max-cpu-seconds equal to the default" },
	{ 86400, 86400, 86400, 86402, "both at their most" },
};

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct sbx_limits l = { .cpu_s = rows[i].cpu_s };
		unsigned long long soft = 0, hard = 0;

		sbx_cpu_rlimit(&l, rows[i].timeout_s, &soft, &hard);
		tap_ok(soft == rows[i].soft && hard == rows[i].hard,
		       "%s (%g, %g → %llu, %llu)", rows[i].why, rows[i].cpu_s,
		       rows[i].timeout_s, soft, hard);
	}
	return tap_done();
}
