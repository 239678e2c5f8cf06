# multiprocessing.Process exit codes, Pipe, Event, terminate
import multiprocessing as mp
import os
import sys
import time


def child(conn):
    conn.send(("hello", os.getpid()))
    conn.close()


def fail():
    sys.exit(3)


def sleeper(ev):
    ev.set()
    time.sleep(60)


if __name__ == "__main__":
    a, b = mp.Pipe()
    p = mp.Process(target=child, args=(b,))
    p.start()
    msg, pid = a.recv()
    p.join(60)
    assert msg == "hello" and pid == p.pid and p.exitcode == 0
    f = mp.Process(target=fail)
    f.start()
    f.join(60)
    assert f.exitcode == 3, f.exitcode
    ev = mp.Event()
    s = mp.Process(target=sleeper, args=(ev,))
    s.start()
    assert ev.wait(60)
    s.terminate()
    s.join(60)
    assert s.exitcode == -15, s.exitcode
    print("children:", p.pid, f.pid, s.pid, "cpu_count", mp.cpu_count())
    print("OK")
