/* sandbox/sys.c's wrappers of what glibc and musl wrap differently:
 * built twice, with glibc (test_sys) and with musl as the handler is
 * (test_sys-musl, Makefile), and each must give the same answers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

/* The online CPUs counted another way: each cpuN directory whose
 * "online" file says 1 (cpu0 often has none: it cannot go offline). */
static long count_cpu_dirs(void)
{
	DIR *d = opendir("/sys/devices/system/cpu");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], c = '1';
		int fd;

		if (strncmp(e->d_name, "cpu", 3) || e->d_name[3] < '0' || e->d_name[3] > '9')
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/%s/online", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			if (read(fd, &c, 1) != 1)
				c = '1';
			close(fd);
		}
		n += c == '1';
	}
	closedir(d);
	return n;
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

int main(void)
{
	char dir[] = "/tmp/codellm-test-sys-XXXXXX";
	long cpus = sbx_online_cpus(), dirs = count_cpu_dirs();
	const char *t;
	int dfd, fd;

	tap_ok(cpus >= 1 && (dirs < 0 || cpus == dirs),
	       "sbx_online_cpus: %ld, as many as the online cpuN directories (%ld)", cpus, dirs);

	fd = open("/dev/null", O_RDONLY);
	tap_ok(fd >= 0 && dup2(fd, 100) == 100 && dup2(fd, 101) == 101 && dup2(fd, 102) == 102,
	       "descriptors 100 to 102 open");
	tap_ok(sbx_close_range(100, 101, 0) == 0 && !is_open(100) && !is_open(101) && is_open(102),
	       "sbx_close_range(100, 101) closes those two and no more");
	tap_ok(sbx_close_range(102, ~0U, CLOSE_RANGE_CLOEXEC) == 0 && is_open(102) &&
	       (fcntl(102, F_GETFD) & FD_CLOEXEC),
	       "sbx_close_range(102, ~0, CLOSE_RANGE_CLOEXEC) marks 102 close-on-exec");
	close(102);
	close(fd);

	tap_ok(mkdtemp(dir) != NULL, "a scratch directory");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tap_ok(dfd >= 0 && mkdirat(dfd, "a", 0700) == 0 && mkdirat(dfd, "b", 0700) == 0,
	       "two directories in it");
	errno = 0;
	tap_ok(sbx_renameat2(dfd, "a", dfd, "b", RENAME_NOREPLACE) < 0 && errno == EEXIST,
	       "sbx_renameat2(RENAME_NOREPLACE) refuses to replace (EEXIST)");
	tap_ok(sbx_renameat2(dfd, "a", dfd, "c", RENAME_NOREPLACE) == 0 &&
	       faccessat(dfd, "c", F_OK, 0) == 0 && faccessat(dfd, "a", F_OK, 0) < 0,
	       "sbx_renameat2(RENAME_NOREPLACE) renames onto a free name");
	unlinkat(dfd, "b", AT_REMOVEDIR);
	unlinkat(dfd, "c", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);

	t = sbx_errno_text(ENOENT);
	tap_ok(t && !strcmp(t, "No such file or directory"), "sbx_errno_text(ENOENT): %s", t ? t : "NULL");
	t = sbx_errno_text(EACCES);
	tap_ok(t && !strcmp(t, "Permission denied"), "sbx_errno_text(EACCES): %s", t ? t : "NULL");
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
