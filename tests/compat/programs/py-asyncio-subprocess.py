# asyncio subprocesses: create_subprocess_exec and _shell with pipes
import asyncio
import sys


async def main():
    p = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; print(sys.stdin.read().upper())",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(p.communicate(b"abc"), 60)
    assert out.strip() == b"ABC" and p.returncode == 0
    s = await asyncio.create_subprocess_shell(
        "echo one; echo two >&2; exit 4",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    o, e = await s.communicate()
    assert (o, e, s.returncode) == (b"one\n", b"two\n", 4), (o, e, s.returncode)
    procs = [await asyncio.create_subprocess_exec("sleep", "0.1") for _ in range(5)]
    assert [await p.wait() for p in procs] == [0] * 5


asyncio.run(main())
print("asyncio subprocesses ran")
print("OK")
