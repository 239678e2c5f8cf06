/* Replay driver: runs a libFuzzer target's LLVMFuzzerTestOneInput over
 * every file named on the command line (or every file of the directories
 * named), so `make check` exercises the corpus without libFuzzer. Prints
 * TAP, one line per input. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n;

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	ssize_t r;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		printf("not ok %d - %s: %s\n", ++n, path, strerror(errno));
		return 1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		abort();
	while (got < (size_t)st.st_size &&
	       (r = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)r;
	close(fd);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	printf("ok %d - replay %s\n", ++n, path);
	return 0;
}

int main(int argc, char **argv)
{
	int fails = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			d = opendir(argv[i]);
			if (!d)
				continue;
			while ((e = readdir(d))) {
				char p[4096];

				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
				fails += replay_file(p);
			}
			closedir(d);
		} else {
			fails += replay_file(argv[i]);
		}
	}
	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
