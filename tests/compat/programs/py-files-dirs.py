# ordinary file work in the working directory: walk, chmod, symlinks, hard links,
# rename, utime, statvfs, glob, pathlib, scandir, fsync, truncate, O_EXCL, xattr-free
import glob
import os
import pathlib
import stat

base = pathlib.Path("tree")
for d in ("a/b/c", "a/d", "e"):
    (base / d).mkdir(parents=True)
for i, d in enumerate(("a", "a/b", "a/b/c", "e")):
    (base / d / ("f%d.txt" % i)).write_text("content %d\n" % i)
files = sorted(str(p.relative_to(base)) for p in base.rglob("*.txt"))
assert files == ["a/b/c/f2.txt", "a/b/f1.txt", "a/f0.txt", "e/f3.txt"], files
assert len(glob.glob("tree/**/*.txt", recursive=True)) == 4
os.symlink("a/f0.txt", "tree/link")
assert os.readlink("tree/link") == "a/f0.txt" and (base / "link").read_text() == "content 0\n"
os.link("tree/a/f0.txt", "tree/hard")
assert os.stat("tree/hard").st_nlink == 2
os.chmod("tree/e/f3.txt", 0o600)
assert stat.S_IMODE(os.stat("tree/e/f3.txt").st_mode) == 0o600
os.chmod("tree/e", 0o500)
try:
    open("tree/e/new", "w")
    raise AssertionError("wrote into a read-only directory")
except PermissionError:
    pass
os.chmod("tree/e", 0o700)
fd = os.open("tree/x", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"12345")
os.fsync(fd)
os.ftruncate(fd, 2)
os.close(fd)
assert open("tree/x").read() == "12"
try:
    os.open("tree/x", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    raise AssertionError
except FileExistsError:
    pass
n = sum(len(f) for _, _, f in os.walk("tree"))
assert n == 7, n
assert os.statvfs(".").f_bavail > 0
print("cwd", os.getcwd(), "home", pathlib.Path.home())
assert pathlib.Path.cwd() == pathlib.Path(os.getcwd())
print("OK")
