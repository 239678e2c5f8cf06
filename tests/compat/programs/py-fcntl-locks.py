# fcntl.flock and lockf between processes; F_GETFL/F_SETFL non-blocking
import fcntl
import os
import time

with open("lockfile", "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    pid = os.fork()
    if pid == 0:
        with open("lockfile", "w") as g:
            try:
                fcntl.flock(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os._exit(1)
            except BlockingIOError:
                pass
            try:
                fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os._exit(0)  # lockf (POSIX) and flock (BSD) are separate here
            except OSError:
                os._exit(0)
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0
    fcntl.flock(f, fcntl.LOCK_UN)
    fcntl.lockf(f, fcntl.LOCK_EX)
    pid = os.fork()
    if pid == 0:
        with open("lockfile", "r+") as g:
            try:
                fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os._exit(1)
            except OSError:
                os._exit(0)
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0
r, w = os.pipe()
fl = fcntl.fcntl(r, fcntl.F_GETFL)
fcntl.fcntl(r, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    os.read(r, 1)
    raise AssertionError("read did not block")
except BlockingIOError:
    pass
assert fcntl.fcntl(r, fcntl.F_GETPIPE_SZ) >= 4096
os.unlink("lockfile")
print("OK")
