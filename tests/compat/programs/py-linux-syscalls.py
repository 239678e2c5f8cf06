# less common but ordinary Linux calls: eventfd, pidfd_open, splice, sendfile,
# copy_file_range, posix_fallocate, sched_*, getpriority/nice, prctl via ctypes, statx (stat)
import ctypes
import os
import select
import socket

efd = os.eventfd(0)
os.eventfd_write(efd, 3)
assert os.eventfd_read(efd) == 3
pid = os.fork()
if pid == 0:
    os._exit(0)
pfd = os.pidfd_open(pid)
assert select.select([pfd], [], [], 60)[0] == [pfd]
os.waitpid(pid, 0)
with open("src", "wb") as f:
    f.write(b"abcdef" * 1000)
src = os.open("src", os.O_RDONLY)
dst = os.open("dst", os.O_WRONLY | os.O_CREAT, 0o644)
assert os.copy_file_range(src, dst, 6000) == 6000
os.posix_fallocate(dst, 0, 8192)
a, b = socket.socketpair()
assert os.sendfile(a.fileno(), src, 0, 6) == 6
assert b.recv(6) == b"abcdef"
r, w = os.pipe()
assert os.splice(src, w, 6, offset_src=6) == 6
assert os.read(r, 6) == b"abcdef"
os.sched_yield()
assert os.sched_getscheduler(0) == os.SCHED_OTHER
os.sched_setaffinity(0, os.sched_getaffinity(0))
prio = os.getpriority(os.PRIO_PROCESS, 0)
os.nice(1)
assert os.getpriority(os.PRIO_PROCESS, 0) == prio + 1
libc = ctypes.CDLL(None, use_errno=True)
name = ctypes.create_string_buffer(16)
assert libc.prctl(16, name, 0, 0, 0) == 0     # PR_GET_NAME
assert libc.prctl(15, b"compat", 0, 0, 0) == 0  # PR_SET_NAME
assert os.stat("src").st_size == 6000
os.utime("src", (0, 0))
assert os.stat("src").st_mtime == 0
print("OK")
