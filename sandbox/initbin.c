/* codellm-init (sandbox/init/codellm-init.c), embedded in the handler
 * and handed to each block's first process as a sealed memfd it can only
 * execute (THREATS.md #19). */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/embed.h"
#include "sandbox/internal.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

SBX_EMBED(codellm_init_bin, "sandbox/init/codellm-init");

int sbx_init_memfd(void)
{
	size_t len = (size_t)(codellm_init_bin_end - codellm_init_bin);
	int fd, rc;

	/* MFD_EXEC: where vm.memfd_noexec makes memfds non-executable by
	 * default (6.3+); older kernels do not know the flag */
	fd = memfd_create("codellm-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("codellm-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* execute only: nothing reads it back; sealed: nothing changes it
	 * between here and the blocks' execveat */
	if ((rc = sbx_write_all(fd, codellm_init_bin, len)) < 0)
		goto fail;
	if (fchmod(fd, 0111) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
		  F_SEAL_SEAL) < 0) {
		rc = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}
