/* What every part of sandbox/ uses and nothing of it owns: the clock,
 * the signals the run loop waits for, writing whole, and reaping what a
 * run left behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"

int sbx_close_range(unsigned first, unsigned last, unsigned flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

int sbx_renameat2(int olddir, const char *oldname, int newdir,
		  const char *newname, unsigned flags)
{
	return (int)syscall(SYS_renameat2, olddir, oldname, newdir, newname, flags);
}

/* glibc's strerrordesc_np and musl's strerror both only read a table
 * (glibc's strerror may format "Unknown error N" into a buffer) */
const char *sbx_errno_text(int err)
{
#ifdef __GLIBC__
	return strerrordesc_np(err);
#else
	return strerror(err);
#endif
}

long sbx_online_cpus(void)
{
	char buf[256];
	long n = 0, a, b;
	char *p = buf, *end;
	ssize_t len = -1;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	if (len <= 0)
		return sysconf(_SC_NPROCESSORS_ONLN);
	buf[len] = '\0';
	/* "0-3,6,8-9\n" */
	while (*p && *p != '\n') {
		a = strtol(p, &end, 10);
		if (end == p)
			break;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				break;
		}
		n += b - a + 1;
		p = *end == ',' ? end + 1 : end;
	}
	return n > 0 ? n : sysconf(_SC_NPROCESSORS_ONLN);
}

long sbx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void sbx_wait_set(sigset_t *s)
{
	sigemptyset(s);
	sigaddset(s, SIGCHLD);
	sigaddset(s, SIGTERM);
	sigaddset(s, SIGINT);
	sigaddset(s, SIGHUP);
}

int sbx_signals_init(void)
{
	sigset_t s;

	sbx_wait_set(&s);
	if (sigprocmask(SIG_BLOCK, &s, NULL) < 0)
		return -errno;
	return signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Reads /proc/self/task/<tid>/children (we are single-threaded). */
/* Without CONFIG_PROC_CHILDREN: every process whose parent we are, from
 * /proc/<pid>/stat (the parent pid follows the parenthesised name). */
static size_t scan_children(pid_t *out, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();
	size_t n = 0;

	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char path[64], buf[512], *rp;
		ssize_t r;
		int fd, ppid;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == self)
			out[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static size_t list_children(pid_t *out, size_t max)
{
	char path[64], buf[8192];
	size_t n = 0, len = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return scan_children(out, max);
	while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	for (char *p = buf; *p && n < max;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0)
			out[n++] = (pid_t)v;
		p = end;
	}
	return n;
}

void sbx_kill_descendants(void)
{
	pid_t kids[512];

	/* Killing a child re-parents its children to us (we are a child
	 * subreaper), so repeat until nothing is left to reap. */
	for (;;) {
		size_t n = list_children(kids, 512);
		int status;
		pid_t w;

		for (size_t i = 0; i < n; i++) {
			kill(-kids[i], SIGKILL);
			kill(kids[i], SIGKILL);
		}
		w = waitpid(-1, &status, n ? 0 : WNOHANG);
		if (w < 0 && errno == ECHILD)
			return;
		if (w == 0 && n == 0) {
			/* children that are not listed yet: wait briefly */
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}

int sbx_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
