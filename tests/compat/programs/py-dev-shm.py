# files in /dev/shm used directly (as some libraries and scripts do), plus POSIX semaphores
import multiprocessing.synchronize  # needs working sem_open
import os

assert os.path.isdir("/dev/shm")
path = "/dev/shm/compat-%d" % os.getpid()
with open(path, "wb") as f:
    f.write(b"in shm")
with open(path, "rb") as f:
    assert f.read() == b"in shm"
os.unlink(path)
import multiprocessing as mp
lock = mp.RLock()
with lock:
    pass
print("shm", os.statvfs("/dev/shm").f_bsize)
print("OK")
