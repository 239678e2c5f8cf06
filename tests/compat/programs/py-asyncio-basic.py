# asyncio: gather, tasks, Queue, wait_for, to_thread, run_in_executor
import asyncio
import time


async def worker(q, out):
    while True:
        item = await q.get()
        out.append(item * 2)
        q.task_done()


async def main():
    q, out = asyncio.Queue(), []
    ws = [asyncio.create_task(worker(q, out)) for _ in range(3)]
    for i in range(30):
        q.put_nowait(i)
    await asyncio.wait_for(q.join(), 60)
    for w in ws:
        w.cancel()
    await asyncio.gather(*ws, return_exceptions=True)
    assert sorted(out) == [i * 2 for i in range(30)]
    r = await asyncio.gather(*(asyncio.sleep(0.01, result=i) for i in range(10)))
    assert r == list(range(10))
    assert await asyncio.to_thread(sum, [1, 2, 3]) == 6
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, time.monotonic) > 0
    try:
        await asyncio.wait_for(asyncio.sleep(5), 0.05)
        raise AssertionError("no timeout")
    except asyncio.TimeoutError:
        pass
    return len(out)


print("processed", asyncio.run(main()))
print("OK")
