# mmap.mmap(-1, n): shared anonymous memory seen by a forked child; private too
import mmap
import os

m = mmap.mmap(-1, 1 << 20)           # MAP_SHARED | MAP_ANONYMOUS
pid = os.fork()
if pid == 0:
    m[0:6] = b"child!"
    os._exit(0)
os.waitpid(pid, 0)
assert m[0:6] == b"child!", m[0:6]
p = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
p[0:2] = b"ok"
assert p[0:2] == b"ok"
big = mmap.mmap(-1, 256 << 20)       # reserve, touch a little
big[-1:] = b"x"
big.close()
print("shared anonymous mmap works")
print("OK")
