# reading /dev/stdin by name (stdin is empty here) and /dev/fd/0; /dev/null, /dev/zero, /dev/urandom
import os

with open("/dev/stdin") as f:
    data = f.read()
with open("/dev/fd/0", "rb") as f:
    data2 = f.read()
print("stdin had", len(data), len(data2), "bytes")
with open("/dev/zero", "rb") as f:
    assert f.read(16) == b"\0" * 16
with open("/dev/urandom", "rb") as f:
    assert len(f.read(32)) == 32
with open("/dev/null", "w") as f:
    f.write("discarded")
assert os.path.exists("/dev/null") and os.path.exists("/dev/stdin")
print("OK")
