# getpass.getpass and input() under a pty: the child's /dev/tty is its terminal
import os
import pty
import time

pid, fd = pty.fork()
if pid == 0:
    import getpass
    pw = getpass.getpass("Password: ")
    name = input("Name: ")
    with open("/dev/tty", "w") as tty:
        tty.write("got %s/%d\n" % (name, len(pw)))
    os._exit(0)
buf = b""


def expect(s):
    global buf
    deadline = time.time() + 60     # a busy machine may run the child slowly
    while s not in buf and time.time() < deadline:
        buf += os.read(fd, 1024)
    assert s in buf, buf


expect(b"Password: ")
os.write(fd, b"secret\n")
expect(b"Name: ")
os.write(fd, b"ann\n")
expect(b"got ann/6")
_, st = os.waitpid(pid, 0)
assert b"secret" not in buf, buf  # echo was off
assert os.waitstatus_to_exitcode(st) == 0
print("getpass through a pty")
print("OK")
