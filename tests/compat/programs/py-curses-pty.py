# a curses program in a child on a pty (TERM=xterm), driven by the parent
import os
import pty
import time

pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    import curses

    def app(scr):
        scr.addstr(0, 0, "hello curses")
        scr.refresh()
        k = scr.getkey()
        scr.addstr(1, 0, "key " + k)
        scr.refresh()
        curses.napms(50)

    curses.wrapper(app)
    os._exit(0)
buf = b""
deadline = time.time() + 60     # a busy machine may start the child slowly
while b"hello curses" not in buf and time.time() < deadline:
    buf += os.read(fd, 4096)
os.write(fd, b"q")
while True:
    try:
        c = os.read(fd, 4096)
    except OSError:
        break
    if not c:
        break
    buf += c
_, st = os.waitpid(pid, 0)
assert b"hello curses" in buf and b"key q" in buf, buf[-200:]
assert os.waitstatus_to_exitcode(st) == 0
print("curses drew", len(buf), "bytes")
print("OK")
