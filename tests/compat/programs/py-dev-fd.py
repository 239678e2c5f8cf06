# /dev/fd/N of a pipe, as `cmd <(other)` and diff-style code use it
import os
import subprocess

r, w = os.pipe()
os.write(w, b"through /dev/fd\n")
os.close(w)
with open("/dev/fd/%d" % r) as f:
    assert f.read() == "through /dev/fd\n"
os.close(r)
assert sorted(os.listdir("/dev/fd"))[:3] == ["0", "1", "2"], os.listdir("/dev/fd")
r, w = os.pipe()
os.write(w, b"3\n1\n2\n")
os.close(w)
out = subprocess.check_output(["sort", "/dev/fd/%d" % r], pass_fds=(r,))
assert out == b"1\n2\n3\n", out
print("OK")
