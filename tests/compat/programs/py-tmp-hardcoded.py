# hard-coded /tmp paths: write, read, mkdir, rename, remove
import os
import shutil

base = "/tmp/compat-py-%d" % os.getpid()
os.mkdir(base)
try:
    p = os.path.join(base, "data.txt")
    with open(p, "w") as f:
        f.write("hello /tmp\n")
    with open(p) as f:
        assert f.read() == "hello /tmp\n"
    os.rename(p, p + ".bak")
    os.makedirs(os.path.join(base, "a", "b", "c"))
    assert sorted(os.listdir(base)) == ["a", "data.txt.bak"]
    st = os.statvfs("/tmp")
    assert st.f_bsize > 0
    flat = "/tmp/compat-flat-%d.log" % os.getpid()
    with open(flat, "a") as f:
        f.write("x")
    os.unlink(flat)
finally:
    shutil.rmtree(base)
assert not os.path.exists(base)
print("used", base)
print("OK")
