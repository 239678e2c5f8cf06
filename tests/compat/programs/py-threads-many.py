# 200 threads at once, each sleeping a little, plus a thread-per-item queue
import queue
import threading
import time

started = threading.Semaphore(0)
stop = threading.Event()


def t():
    started.release()
    stop.wait(60)


ths = [threading.Thread(target=t) for _ in range(200)]
for th in ths:
    th.start()
for _ in ths:
    assert started.acquire(timeout=60)
assert threading.active_count() >= 201
stop.set()
for th in ths:
    th.join()
q = queue.Queue()
for i in range(50):
    threading.Thread(target=q.put, args=(i,)).start()
assert sorted(q.get(timeout=60) for _ in range(50)) == list(range(50))
print("200 threads ran")
print("OK")
