#!/usr/bin/env python3
"""CPU time per block process (RLIMIT_CPU) through the real handler.

Every block process gets RLIMIT_CPU from its run's wall timeout: soft
ceil(timeout) + 1 s (SIGXCPU), hard 2 s above (SIGKILL), or a lower soft
limit from --max-cpu-seconds. What a block sees is checked for several
timeouts (the server's and a request's own codellm.timeout_s), in the
program and in a child it starts; then what the limit does to a process
that burns CPU, with --max-cpu-seconds far below a long wall timeout so
the outcome never depends on timing: SIGXCPU at the soft limit, a program
that catches it ends cleanly, one that ignores it is killed at the hard
limit. A single-threaded process under the default limit is ended by the
wall timeout, never by the rlimit. --sandbox off runs bare: no rlimit.
The option's bounds: out of range is a configuration error.
"""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
SIGXCPU, SIGKILL = 24, 9

GETRLIMIT_PY = "import resource\nprint(*resource.getrlimit(resource.RLIMIT_CPU))"
ULIMIT_SH = "echo $(ulimit -St) $(ulimit -Ht)"
CHILD_SH = "python3 -c 'import resource; print(*resource.getrlimit(resource.RLIMIT_CPU))'"
BURN_PY = "while True:\n    pass"


def one(lang, code):
    return block(lang, code)


def ext_of(r):
    return field(r, "codellm") or {}


def block_of(r, i=0):
    return field(r, "codellm", "block_results", i) or {}


def timed_run(s, content):
    """s.run(content) and the seconds it took (printed, never bounded:
    the wall timeout is the bound)."""
    t0 = time.time()
    r = s.run(content)
    return r, time.time() - t0


# ---- the values a block sees -------------------------------------------------
for timeout, want in (("10", "11 13"), ("2.5", "4 6"), ("240", "241 243")):
    with Server("--timeout", timeout) as s:
        r = s.run(one("python", GETRLIMIT_PY))
        t.eq(content(r), want + "\n",
             "--timeout %s: python's getrlimit(RLIMIT_CPU) is (%s): soft ceil(timeout)+1, "
             "hard 2 s above" % (timeout, want.replace(" ", ", ")))
        if timeout == "10":
            r = s.run(one("bash", ULIMIT_SH))
            t.eq(content(r), "11 13\n", "--timeout 10: bash's ulimit -St / -Ht say 11 / 13")
            r = s.run(one("bash", CHILD_SH))
            t.eq(content(r), "11 13\n",
                 "--timeout 10: a child the block starts inherits the limit (11 13)")
            r = s.run(one("python", GETRLIMIT_PY), extra={"codellm": {"timeout_s": 3}})
            t.eq(content(r), "4 6\n",
                 "--timeout 10, codellm.timeout_s 3: the run's own timeout sets it (4 6)")
            r = s.run(one("python", GETRLIMIT_PY) + one("python", GETRLIMIT_PY))
            t.eq(content(r), "11 13\n", "--timeout 10: the second block of a pipeline has it too")

with Server("--timeout", "60", "--max-cpu-seconds", "2") as s:
    r = s.run(one("python", GETRLIMIT_PY))
    t.eq(content(r), "2 4\n", "--timeout 60 --max-cpu-seconds 2: (2, 4)")
with Server("--timeout", "60", "--max-cpu-seconds", "1.2") as s:
    r = s.run(one("python", GETRLIMIT_PY))
    t.eq(content(r), "2 4\n", "--max-cpu-seconds 1.2 is rounded up: (2, 4)")
with Server("--timeout", "10", env={"CODELLM_MAX_CPU_SECONDS": "100"}) as s:
    r = s.run(one("python", GETRLIMIT_PY))
    t.eq(content(r), "11 13\n",
         "CODELLM_MAX_CPU_SECONDS=100 above --timeout 10's default: the default holds (11 13)")

# --sandbox off runs bare: the block has the handler's own limit (ours)
with Server("--timeout", "10", sandbox="off") as s:
    r = s.run(one("python", GETRLIMIT_PY))
    mine = resource.getrlimit(resource.RLIMIT_CPU)
    t.eq(content(r), "%d %d\n" % mine,
         "--sandbox off: no rlimit, the block has the handler's own RLIMIT_CPU (%d %d)" % mine)

# ---- what the limit does --------------------------------------------------------
# --max-cpu-seconds 1 under a wall timeout of 120 s: one CPU second (three
# to the hard limit) comes long before the wall timeout on any machine,
# even one whose CPUs are shared with ten times as many busy processes,
# so only the outcome counts
with Server("--timeout", "120", "--max-cpu-seconds", "1") as s:
    r, el = timed_run(s, one("python", BURN_PY))
    b, c = block_of(r), ext_of(r)
    t.ok(r.status == 200 and b.get("signal") == SIGXCPU and c.get("exit_code") == 128 + SIGXCPU
         and c.get("timed_out") is False,
         "a CPU-bound loop at its soft limit ends by SIGXCPU (exit_code 152), not the timeout "
         "(%.1f s)" % el, repr(r)[:800])
    r, el = timed_run(s, one("python", "import signal, sys\n"
                                       "def h(sig, frame):\n"
                                       "    print('caught SIGXCPU')\n"
                                       "    sys.exit(3)\n"
                                       "signal.signal(signal.SIGXCPU, h)\n" + BURN_PY))
    t.ok(content(r) == "caught SIGXCPU\n" and ext_of(r).get("exit_code") == 3,
         "a program that catches SIGXCPU has time to end cleanly (hard limit above soft) "
         "(%.1f s)" % el, repr(r)[:800])
    r, el = timed_run(s, one("bash", "trap '' XCPU\nwhile :; do :; done"))
    b, c = block_of(r), ext_of(r)
    t.ok(b.get("signal") == SIGKILL and c.get("exit_code") == 128 + SIGKILL
         and c.get("timed_out") is False,
         "a program that ignores SIGXCPU is killed at the hard limit (SIGKILL, exit_code 137) "
         "(%.1f s)" % el, repr(r)[:800])
    r, el = timed_run(s, one("bash", "python3 -c 'while True: pass'\necho child ended $?"))
    t.ok(content(r) == "child ended %d\n" % (128 + SIGXCPU) and ext_of(r).get("exit_code") == 0,
         "a child the block starts has its own count and limit: it ends by SIGXCPU, the "
         "block goes on (%.1f s)" % el, repr(r)[:800])
    r, el = timed_run(s, one("python", BURN_PY) + one("python", BURN_PY))
    sigs = [b.get("signal") for b in field(r, "codellm", "block_results") or []]
    t.eq(sigs, [SIGXCPU, SIGXCPU],
         "two blocks burning at once: each process its own limit, both end by SIGXCPU "
         "(%.1f s)" % el)

# the default: a single thread cannot use more CPU time than wall time, so
# the wall timeout ends it, as timeout(1) says
with Server("--timeout", "2") as s:
    r = s.run(one("python", BURN_PY))
    c = ext_of(r)
    t.ok(c.get("timed_out") is True and c.get("exit_code") == 124,
         "--timeout 2, default limit: a single-threaded loop is ended by the wall timeout "
         "(exit_code 124), not by SIGXCPU", repr(r)[:800])

# ---- the option's bounds -----------------------------------------------------------
for val in ("0", "-1", "86401", "1x"):
    with Server("--timeout", "10", "--max-cpu-seconds", val) as s:
        r = s.run(one("python", "print('ran')"))
        t.ok(r.status == 503 and (r.error() or {}).get("code") == "server_misconfigured",
             "--max-cpu-seconds %s is a configuration error (503 server_misconfigured)" % val,
             repr(r)[:300])
with Server("--timeout", "86400", "--max-cpu-seconds", "86400") as s:
    r = s.run(one("python", GETRLIMIT_PY))
    t.eq(content(r), "86400 86402\n", "--max-cpu-seconds 86400, the most: (86400, 86402)")
t.done()
