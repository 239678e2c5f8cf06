#!/usr/bin/env python3
"""Concurrency slots (SPEC §9): shared by all instances, taken only after
the request was read, authenticated and found valid, released however a
run ends (also when the handler is SIGKILLed); with --max-concurrent N,
N+1 simultaneous runs give exactly one 429 and nothing runs for it."""
import fcntl
import os
import signal
import shutil
import stat
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
U = str(300000 + os.getpid())

def slots_free(s, wait=30.0):
    """True once no process holds a slot file's lock (probed with
    flock LOCK_NB while nothing else is asked of the server); False after
    `wait` s."""
    deadline = time.time() + wait
    while True:
        busy = 0
        for name in os.listdir(s.slots):
            if not name.startswith("slot."):
                continue
            fd = os.open(os.path.join(s.slots, name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy += 1
            finally:
                os.close(fd)
        if not busy:
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.05)


# a client's next request follows its answer at once: the slot is free
# by then (the handler gives it back before the answer's end, and
# cleans up after), so one client never meets its own 429
with Server("--max-concurrent", "1", "--timeout", "30") as s:
    got = [s.run(block("bash", "echo %d" % i)) for i in range(30)]
    t.eq(sorted({r.status for r in got}), [200],
         "--max-concurrent 1, 30 requests back to back from one client: every one 200, no 429")
    t.eq([content(r) for r in got], ["%d\n" % i for i in range(30)], "… each with its own output")

# the same when the cleanup is long: 30000 files left in the run
# directory (--sandbox off: on disk, removed one by one after the answer)
with Server("--max-concurrent", "1", "--timeout", "60", sandbox="off") as s:
    first = s.run(block("python", "for i in range(30000):\n    open('f%d' % i, 'w').close()\nprint('made')"))
    second = s.run(block("bash", "echo next"))
    t.eq((first.status, content(first), second.status, content(second)), (200, "made\n", 200, "next\n"),
         "a run that leaves 30000 files, then at once the next: 200, not 429 (the slot is free "
         "before the cleanup)", repr(second)[:300])

with Server("--max-concurrent", "2", "--timeout", "30") as s:
    res = {}

    def go(i, hold=""):
        res[i] = s.run(block("bash", "%s\necho %d" % (hold, i)) + block("python", "import sys\nsys.stdout.write(sys.stdin.read())"))

    # the two that get a slot hold it until the third has its answer
    th = [threading.Thread(target=go, args=(i, HOLD)) for i in range(3)]
    for x in th:
        x.start()
    deadline = time.time() + 30
    while len(res) < 1 and time.time() < deadline:
        time.sleep(0.05)
    holding = running_blocks(s, 2, wait=max(0, deadline - time.time()), first_only=True)
    answered_first = sorted(r.status for r in res.values())
    seen = [cmdline(p).replace("\0", " ") for p in holding]
    let_go(block_processes(s))
    for x in th:
        x.join()
    statuses = sorted(r.status for r in res.values())
    t.eq((answered_first, len(holding), statuses), ([429], 2, [200, 200, 429]),
         "--max-concurrent 2, three runs at once: two run, exactly one 429 (answered while the two "
         "held their slots)",
         "held: %r\n%s" % (seen, "\n".join("%d: %s" % (r.status, r.body[:300]) for r in res.values())))
    busy = [r for r in res.values() if r.status == 429]
    e = busy[0].error() if busy else {}
    t.eq((e.get("type"), e.get("code")), ("rate_limit_error", "rate_limit_exceeded"),
         "the 429 is a rate_limit_error")
    t.eq(busy[0].header("retry-after") if busy else None, "1", "the 429 carries Retry-After: 1")
    t.ok(busy and field(busy[0], "codellm") is None and "choices" not in busy[0].body.decode(),
         "nothing ran for the 429 (no completion, no codellm object)")
    ran = [r for r in res.values() if r.status == 200]
    t.ok(len(ran) == 2 and all(content(r) in ("0\n", "1\n", "2\n") for r in ran),
         "the two that ran answered their own output")
    t.eq(sorted(n for n in os.listdir(s.slots) if not n.startswith("etc.")), ["slot.0", "slot.1"],
         "the slots are files in --runtime-dir (beside the /etc each slot keeps)")
    r = s.run(block("bash", "echo free"))
    t.eq((r.status, content(r)), (200, "free\n"), "after the runs the slots are free again")

    # refusals take no slot: a bad key, a bad body, with both slots busy
    # (held until the checks are done, a run between them proves it)
    hold = []

    def long(i):
        hold.append(s.run(block("bash", "%s # %s.%d" % (HOLD, U, i))))

    th = [threading.Thread(target=long, args=(i,)) for i in range(2)]
    for x in th:
        x.start()
    holding = running_blocks(s, 2, first_only=True)
    t.eq(s.request("GET", "/v1/models", key="wrong").status, 401, "slots full: a wrong key still gets 401, not 429")
    full = s.run(block("bash", "echo one more")).status
    t.eq(s.chat({"model": "codellm", "messages": [{"role": "user", "content": "no code"}]}).status, 400,
         "slots full: a request without code still gets 400, not 429")
    t.eq(s.request("GET", "/healthz").status, 200, "slots full: /healthz answers")
    let_go(block_processes(s))
    for x in th:
        x.join()
    t.ok(len(holding) == 2 and full == 429 and len(hold) == 2 and all(r.status == 200 for r in hold),
         "both long runs finished (they held both slots: a run between the checks got %r)" % full)

    # a SIGKILLed handler releases its slot
    c = socket.create_connection(("127.0.0.1", s.port))
    c.sendall(build_request("POST", "/v1/chat/completions", {"model": "codellm", "messages": [
        {"role": "user", "content": block("bash", "sleep 20 # %s.kill" % U)}]}))
    deadline = time.time() + 30
    kids = []
    while time.time() < deadline:
        kids = [p for p in descendants(s.proc.pid) if "codellm-handler" in cmdline(p)]
        if kids and block_processes(s):
            break
        time.sleep(0.05)
    for p in kids:
        os.kill(p, signal.SIGKILL)
    c.close()
    # its lock goes with the last process of that run: then two held runs
    # at once must both get a slot (one left taken would answer a 429)
    freed = slots_free(s)
    res = {}
    th = [threading.Thread(target=go, args=(i, HOLD)) for i in range(2)]
    for x in th:
        x.start()
    let_go(running_blocks(s, 2, first_only=True, stop=lambda: res))
    for x in th:
        x.join()
    t.eq((freed, sorted(r.status for r in res.values())), (True, [200, 200]),
         "after the handler holding a slot was SIGKILLed, both slots serve again")

with Server("--max-concurrent", "1", env={"CODELLM_RUNTIME_DIR": "/proc/nonexistent/slots"}) as s:
    r = s.run(block("bash", "echo x"))
    t.eq((r.status, (r.error() or {}).get("code")), (503, "server_misconfigured"),
         "an unusable slot directory: 503 server_misconfigured, nothing runs")

# ---- a runtime directory made for anyone (a container's tmpfs, root's, mode
# 1777 from the image; an emptyDir): the handler, not its owner, keeps its
# slots in a private subdirectory of its own, and refuses one it did not make
if os.geteuid() == 0:
    shared = tempfile.mkdtemp(prefix="codellm-shared-run-")
    os.chmod(shared, 0o1777)
    with unprivileged_server("--max-concurrent", "2", env={"CODELLM_RUNTIME_DIR": shared}) as s:
        r = s.run(block("bash", "echo in-subdir"))
        sub = os.path.join(shared, "codellm-%d" % NOBODY)
        st = os.lstat(sub) if os.path.lexists(sub) else None
        t.ok(r.status == 200 and content(r) == "in-subdir\n" and st is not None
             and stat.S_ISDIR(st.st_mode) and st.st_uid == NOBODY and stat.S_IMODE(st.st_mode) == 0o700
             and "slot.0" in os.listdir(sub) and sorted(os.listdir(shared)) == ["codellm-%d" % NOBODY],
             "a root-owned 1777 runtime directory: a non-root handler runs, its slots in its own "
             "private codellm-%d (0700)" % NOBODY,
             (repr(r)[:300], st and (st.st_uid, oct(st.st_mode)), sorted(os.listdir(shared))))
        r = s.request("GET", "/healthz")
        t.ok(r.status == 200 and "healthz.cache" in os.listdir(sub),
             "… and /healthz keeps its shared check there too", sorted(os.listdir(sub)))
    shutil.rmtree(shared)
    # the subdirectory made first by somebody else (root here), or a link:
    # never used
    for what, make in (("another user's", lambda p: os.mkdir(p, 0o700)),
                       ("a symbolic link", lambda p: os.symlink("/tmp", p)),
                       ("open to others", lambda p: (os.mkdir(p), os.chown(p, NOBODY, NOBODY),
                                                     os.chmod(p, 0o755)))):
        shared = tempfile.mkdtemp(prefix="codellm-shared-run-")
        os.chmod(shared, 0o1777)
        make(os.path.join(shared, "codellm-%d" % NOBODY))
        with unprivileged_server("--max-concurrent", "2", env={"CODELLM_RUNTIME_DIR": shared}) as s:
            r = s.run(block("bash", "echo never"))
            log = s.log_text()
        t.ok(r.status == 503 and (r.error() or {}).get("code") == "server_misconfigured"
             and "is unusable" in log and "codellm-%d" % NOBODY in log,
             "a private subdirectory that is %s: 503 server_misconfigured, nothing runs, the "
             "log names it" % what, (repr(r)[:300], log[-600:]))
        shutil.rmtree(shared)
    # root's and closed to the handler (the trap of the issue: a tmpfs
    # copying 0700 from the image)
    shared = tempfile.mkdtemp(prefix="codellm-closed-run-")
    os.chmod(shared, 0o700)
    with unprivileged_server("--max-concurrent", "2", env={"CODELLM_RUNTIME_DIR": shared}) as s:
        r = s.run(block("bash", "echo never"))
        log = s.log_text()
    t.ok(r.status == 503 and (r.error() or {}).get("code") == "server_misconfigured"
         and "Permission denied" in log and "--runtime-dir" in log,
         "root's 0700 runtime directory: 503 server_misconfigured, and the log says why and "
         "where to look", (repr(r)[:300], log[-600:]))
    shutil.rmtree(shared)
else:
    t.skip("runtime directories made for anyone", "needs root to make them")

# ---- a lone block runs as soon as it is set up (its go byte is sent
# early): it may end, and its init send the end record, before the
# handler reads the ready byte. Eight clients at once make that common;
# every run must still answer with its output (the ready byte and the
# end record are read apart, never as one "setup died").
for mode, kw in (("off", dict(sandbox="off")), ("native", {})):
    bad = []
    with Server("--max-concurrent", "16", "--timeout", "30", **kw) as s:
        def client(k):
            for i in range(25):
                r = s.run(block("bash", "echo %d-%d" % (k, i)))
                if r.status != 200 or content(r) != "%d-%d\n" % (k, i):
                    bad.append(r.raw[-300:])
        th = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for x in th:
            x.start()
        for x in th:
            x.join()
    t.eq(bad[:2], [], "%s: 200 one-block runs from 8 clients at once all answer with their output" % mode)
t.done()
