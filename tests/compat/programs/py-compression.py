# zipfile, tarfile, gzip, bz2, lzma, zlib round trips in the working directory
import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib

data = b"compress me " * 1000
for mod in (gzip, bz2, lzma, zlib):
    assert mod.decompress(mod.compress(data)) == data
with zipfile.ZipFile("a.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("x.txt", data)
with zipfile.ZipFile("a.zip") as z:
    assert z.read("x.txt") == data and z.testzip() is None
with tarfile.open("a.tar.xz", "w:xz") as t:
    ti = tarfile.TarInfo("x.txt")
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
with tarfile.open("a.tar.xz") as t:
    assert t.extractfile("x.txt").read() == data
    t.extractall("out")
assert open("out/x.txt", "rb").read() == data
with gzip.open("f.gz", "wt") as f:
    f.write("line\n" * 10)
with gzip.open("f.gz", "rt") as f:
    assert len(f.readlines()) == 10
print("OK")
