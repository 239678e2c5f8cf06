# os.fork, waitpid, wait4 (rusage), WNOHANG, exit statuses, kill of a child
import os
import signal
import time

pids = []
for i in range(5):
    pid = os.fork()
    if pid == 0:
        os._exit(i)
    pids.append(pid)
codes = {}
for pid in pids:
    _, st, ru = os.wait4(pid, 0)
    codes[pid] = os.waitstatus_to_exitcode(st)
    assert ru.ru_maxrss >= 0
assert sorted(codes.values()) == [0, 1, 2, 3, 4]
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
assert os.waitpid(pid, os.WNOHANG) == (0, 0)
os.kill(pid, signal.SIGKILL)
_, st = os.waitpid(pid, 0)
assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, str(os.getppid()).encode())
    os._exit(0)
os.close(w)
assert int(os.read(r, 100)) == os.getpid()
os.waitpid(pid, 0)
print("forked", len(pids) + 2, "children")
print("OK")
