# pty.fork: the child gets a controlling terminal, the parent reads its output
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    print("isatty", sys.stdin.isatty(), sys.stdout.isatty())
    print("ttyname", os.ttyname(0))
    print("size", os.get_terminal_size(0))
    sys.stdout.flush()
    os._exit(0)
out = b""
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, st = os.waitpid(pid, 0)
text = out.decode()
print(text.strip())
assert "isatty True True" in text, text
assert "ttyname /dev/pts/" in text, text
assert os.waitstatus_to_exitcode(st) == 0
print("OK")
