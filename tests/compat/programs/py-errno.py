# the errno values ordinary code branches on, from its own files
import errno
import os

def err(f, *a):
    try:
        f(*a)
    except OSError as e:
        return e.errno
    return 0

os.mkdir("d")
open("d/f", "w").close()
assert err(open, "missing/file") == errno.ENOENT
assert err(os.mkdir, "d") == errno.EEXIST
assert err(os.rmdir, "d") == errno.ENOTEMPTY
assert err(os.listdir, "d/f") == errno.ENOTDIR
assert err(open, "d") == errno.EISDIR
assert err(os.kill, 999999, 0) == errno.ESRCH
assert err(os.read, 9999, 1) == errno.EBADF
assert err(os.kill, 1, 0) in (errno.EPERM, 0)
assert err(os.setuid, 0) == errno.EPERM
assert err(os.chown, "d/f", 0, 0) == errno.EPERM
assert err(open, "/nonexistent-dir/x", "w") == errno.ENOENT
assert err(open, "/usr/compat-x", "w") in (errno.EACCES, errno.EROFS)
print("OK")
