# threading: Thread, Lock, RLock, Event, Condition, Barrier, Semaphore, Timer, local
import threading
import time

counter = 0
lock = threading.Lock()


def work(n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1


ts = [threading.Thread(target=work, args=(10000,)) for _ in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert counter == 80000, counter

cond = threading.Condition()
items = []


def consumer():
    with cond:
        cond.wait_for(lambda: items, timeout=60)


c = threading.Thread(target=consumer)
c.start()
with cond:
    items.append(1)
    cond.notify_all()
c.join(60)
assert not c.is_alive()

barrier = threading.Barrier(3)
bs = [threading.Thread(target=barrier.wait, args=(60,)) for _ in range(3)]
for t in bs:
    t.start()
for t in bs:
    t.join()

ev = threading.Event()
timer = threading.Timer(0.05, ev.set)
timer.start()
assert ev.wait(60)
loc = threading.local()
loc.x = 1
r = []
t = threading.Thread(target=lambda: r.append(hasattr(loc, "x")))
t.start()
t.join()
assert r == [False]
assert threading.active_count() >= 1 and threading.get_native_id() > 0
print("threads counted", counter)
print("OK")
