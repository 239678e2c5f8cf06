# tempfile: default dir, dir='/tmp', NamedTemporaryFile, TemporaryDirectory, mkstemp, SpooledTemporaryFile
import os
import tempfile

print("gettempdir", tempfile.gettempdir())
with tempfile.NamedTemporaryFile("w+", dir="/tmp", suffix=".txt") as f:
    f.write("named")
    f.flush()
    assert f.name.startswith("/tmp/")
    with open(f.name) as g:
        assert g.read() == "named"
with tempfile.TemporaryDirectory(dir="/tmp") as d:
    open(os.path.join(d, "x"), "w").close()
    assert os.listdir(d) == ["x"]
assert not os.path.exists(d)
fd, path = tempfile.mkstemp(prefix="compat-", dir="/tmp")
os.write(fd, b"abc")
os.close(fd)
os.unlink(path)
with tempfile.TemporaryDirectory() as d2:
    assert os.path.isdir(d2)
with tempfile.SpooledTemporaryFile(max_size=10) as s:
    s.write(b"x" * 100)
    s.seek(0)
    assert len(s.read()) == 100
with tempfile.TemporaryFile() as t:
    t.write(b"anon")
    t.seek(0)
    assert t.read() == b"anon"
print("OK")
