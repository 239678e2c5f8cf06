# a 64 MiB file written and read back; 512 MiB of memory allocated and touched
import hashlib
import os

chunk = os.urandom(1 << 20)
h = hashlib.sha256()
with open("big.bin", "wb") as f:
    for _ in range(64):
        f.write(chunk)
        h.update(chunk)
assert os.path.getsize("big.bin") == 64 << 20
h2 = hashlib.sha256()
with open("big.bin", "rb") as f:
    while b := f.read(1 << 20):
        h2.update(b)
assert h.digest() == h2.digest()
os.unlink("big.bin")
buf = bytearray(512 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
assert sum(buf[::4096]) == len(buf) // 4096
del buf
print("OK")
