# listing / and /dev, walking the top of the tree, as exploratory code does
import os

root = os.listdir("/")
print("/:", " ".join(sorted(root)))
for d in ("usr", "bin", "etc", "tmp", "dev", "proc"):
    assert d in root, d
dev = os.listdir("/dev")
print("/dev:", " ".join(sorted(dev)))
for d in ("null", "zero", "urandom", "fd", "stdin", "stdout", "stderr", "shm", "pts"):
    assert d in dev, d
with os.scandir("/") as it:
    dirs = [e.name for e in it if e.is_dir()]
assert "usr" in dirs
n = sum(len(files) for _, _, files in os.walk("/usr/lib/python3.11/json"))
assert n > 5
print("OK")
