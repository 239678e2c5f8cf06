# os.memfd_create, ftruncate, mmap of it, pass to a child via /proc/self/fd
import mmap
import os
import subprocess

fd = os.memfd_create("compat", os.MFD_CLOEXEC)
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
m[0:5] = b"memfd"
os.set_inheritable(fd, True)
out = subprocess.check_output(["head", "-c", "5", "/proc/self/fd/%d" % fd], pass_fds=(fd,))
assert out == b"memfd", out
print("memfd", os.readlink("/proc/self/fd/%d" % fd))
print("OK")
