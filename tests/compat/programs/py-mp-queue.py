# multiprocessing.Process + Queue + JoinableQueue (fork default on Linux)
import multiprocessing as mp


def producer(q, n):
    for i in range(n):
        q.put(i)
    q.put(None)


def worker(jq, out):
    while True:
        item = jq.get()
        if item is None:
            jq.task_done()
            break
        out.put(item * 2)
        jq.task_done()


if __name__ == "__main__":
    q = mp.Queue()
    p = mp.Process(target=producer, args=(q, 100))
    p.start()
    got = []
    while True:
        v = q.get(timeout=60)
        if v is None:
            break
        got.append(v)
    p.join(60)
    assert p.exitcode == 0 and got == list(range(100)), (p.exitcode, got[:5])
    jq, out = mp.JoinableQueue(), mp.Queue()
    w = mp.Process(target=worker, args=(jq, out))
    w.start()
    for i in range(10):
        jq.put(i)
    jq.put(None)
    jq.join()
    res = sorted(out.get(timeout=60) for _ in range(10))
    w.join(60)
    assert res == [i * 2 for i in range(10)], res
    print("queue carried", len(got), "items")
    print("OK")
