# fork from a threaded program and subprocess from threads at the same time
import concurrent.futures as cf
import os
import subprocess
import threading


def run(i):
    return subprocess.check_output(["sh", "-c", "echo %d" % i]).strip()


with cf.ThreadPoolExecutor(8) as ex:
    assert sorted(int(x) for x in ex.map(run, range(24))) == list(range(24))
t = threading.Thread(target=lambda: None)
t.start()
pid = os.fork()
if pid == 0:
    os._exit(7)
_, st = os.waitpid(pid, 0)
t.join()
assert os.waitstatus_to_exitcode(st) == 7
print("OK")
