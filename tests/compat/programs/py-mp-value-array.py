# multiprocessing.Value / Array / Lock / Semaphore / Barrier across processes
import multiprocessing as mp


def bump(v, arr, lock, n):
    for _ in range(n):
        with lock:
            v.value += 1
    for i in range(len(arr)):
        with arr.get_lock():
            arr[i] += 1


if __name__ == "__main__":
    v = mp.Value("i", 0)
    arr = mp.Array("d", [0.0] * 8)
    lock = mp.Lock()
    ps = [mp.Process(target=bump, args=(v, arr, lock, 500)) for _ in range(4)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(60)
    assert all(p.exitcode == 0 for p in ps)
    assert v.value == 2000, v.value
    assert list(arr) == [4.0] * 8, list(arr)
    sem = mp.Semaphore(2)
    assert sem.acquire(timeout=1) and sem.acquire(timeout=1) and not sem.acquire(timeout=0.1)
    b = mp.Barrier(1)
    b.wait(timeout=5)
    print("value", v.value)
    print("OK")
