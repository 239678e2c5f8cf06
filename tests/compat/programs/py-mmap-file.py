# mmap of a file: write through the map, flush, resize, find, madvise
import mmap
import os

with open("data.bin", "wb") as f:
    f.write(b"\0" * 8192)
with open("data.bin", "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[100:105] = b"hello"
    m.flush()
    assert m.find(b"hello") == 100
    m.madvise(mmap.MADV_SEQUENTIAL)
    m.resize(16384)
    m[-5:] = b"tail!"
    m.close()
with open("data.bin", "rb") as f:
    d = f.read()
assert len(d) == 16384 and d[100:105] == b"hello" and d.endswith(b"tail!")
with open("data.bin", "rb") as f:
    ro = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    assert ro[100:105] == b"hello"
os.unlink("data.bin")
print("OK")
