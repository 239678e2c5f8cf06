# the classic double fork + setsid daemon, setpgid, killpg, getsid
import os
import signal
import time

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    pid2 = os.fork()
    if pid2 == 0:
        os.close(r)
        os.write(w, b"%d %d\n" % (os.getpid(), os.getsid(0)))
        os.close(w)
        time.sleep(0.2)
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
data = os.read(r, 100).split()
assert len(data) == 2 and data[0] != b"" and int(data[1]) != os.getsid(0)
os.close(r)
# a process group of two sleepers, killed at once
r, w = os.pipe()
leader = os.fork()
if leader == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    os.write(w, b"!")          # both sleepers are in the group now
    time.sleep(30)
    os._exit(0)
os.close(w)
try:
    os.setpgid(leader, leader)
except OSError:
    pass
assert os.read(r, 1) == b"!"
os.close(r)
os.killpg(leader, signal.SIGTERM)
_, st = os.waitpid(leader, 0)
assert os.WIFSIGNALED(st)
print("daemon pid", int(data[0]))
print("OK")
