# shutil: copytree, make_archive/unpack_archive (zip, tar.gz, bztar, xztar), disk_usage, which
import os
import shutil

os.makedirs("src/sub")
for i in range(5):
    with open("src/sub/f%d.txt" % i, "w") as f:
        f.write("x" * i)
shutil.copytree("src", "dst")
assert sorted(os.listdir("dst/sub")) == ["f%d.txt" % i for i in range(5)]
for fmt in ("zip", "gztar", "bztar", "xztar", "tar"):
    name = shutil.make_archive("arch-" + fmt, fmt, "src")
    shutil.unpack_archive(name, "out-" + fmt)
    assert os.path.getsize("out-%s/sub/f4.txt" % fmt) == 4
du = shutil.disk_usage(".")
assert du.total > 0
print("disk", du)
assert shutil.which("python3") and shutil.which("sh")
shutil.move("dst", "moved")
shutil.rmtree("moved")
print("OK")
