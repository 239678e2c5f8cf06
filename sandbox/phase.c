/* The phase marks of sandbox/phase.h: only in -DCODELLM_PHASES builds
 * (make bench-phases); empty otherwise. */
#include "sandbox/phase.h"

#ifdef CODELLM_PHASES
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static long long *marks;	/* SBX_PH_COUNT of them, in a shared page */
static int out_fd = -1;

void sbx_phase_open(void)
{
	const char *path = getenv("CODELLM_PHASES_FILE");
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (page != MAP_FAILED)
		marks = page;
	if (path)
		out_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	unsetenv("CODELLM_PHASES_FILE");
	sbx_phase_mark(SBX_PH_START);
}

void sbx_phase_mark(enum sbx_phase p)
{
	struct timespec ts;

	if (!marks || p < 0 || p >= SBX_PH_COUNT || marks[p])
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	marks[p] = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sbx_phase_dump(void)
{
	char line[32 * SBX_PH_COUNT + 64];
	struct rusage ru;
	int n;

	if (!marks || out_fd < 0)
		return;
	/* the handler's own page faults first (its blocks' are theirs) */
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		ru.ru_minflt = ru.ru_majflt = -1;
	n = snprintf(line, sizeof line, "phases %ld %ld", ru.ru_minflt, ru.ru_majflt);
	for (int i = 0; i < SBX_PH_COUNT; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %lld",
			      marks[i] ? (marks[i] - marks[SBX_PH_START]) / 1000 : -1LL);
	n += snprintf(line + n, sizeof line - (size_t)n, "\n");
	if (write(out_fd, line, (size_t)n) < 0)
		perror("codellm: phases");
}
#endif
