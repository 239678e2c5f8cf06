# multiprocessing with the spawn start method (fresh interpreters)
import multiprocessing as mp
import os


def info(x):
    return x + 1, os.getpid()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        res = pool.map(info, range(6))
    assert [r[0] for r in res] == list(range(1, 7))
    assert all(pid != os.getpid() for _, pid in res)
    q = ctx.Queue()
    p = ctx.Process(target=q.put, args=("spawned",))
    p.start()
    assert q.get(timeout=60) == "spawned"
    p.join(60)
    assert p.exitcode == 0
    print("spawned", len({pid for _, pid in res}), "workers")
    print("OK")
