#!/usr/bin/env python3
"""Execution (SPEC §5, §7) through the real handler, --sandbox off.

Harmless code only: with --sandbox off a block runs bare, as the handler's
user. What is checked here is the pipeline machinery every sandbox mode
shares: interpreters and aliases, a true concurrent pipeline, byte-exact
relaying, caps, pipefail exit codes, the wall timeout and the relay's
hard stop after the kill, keep-alive, the end of a run on disconnect /
SIGTERM / SIGKILL, the subreaper, the block's environment and
descriptors, workdir cleanup and the output's encoding.
"""
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
T_START = time.time()
# unique sleep lengths mark this run's processes (parallel runs must not
# see each other's)
U = str(100000 + os.getpid())


# ---- helpers ----------------------------------------------------------------

def handler_pid(s, timeout=30.0):
    """The handler serving the one open connection: the child of
    systemd-socket-activate."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        kids = children_of(s.proc.pid)
        if len(kids) == 1:
            return kids[0]
        time.sleep(0.02)
    return None


def started(*marks):
    """Bash lines that wait until a process of the block runs a sleep
    marked U.<mark>, for each mark (the pattern's [.] keeps grep from
    finding its own command line)."""
    return "".join("until grep -qs '%s[.]%s' /proc/[0-9]*/cmdline; do sleep 0.01; done\n"
                   % (U, m) for m in marks)


def vmhwm(pid):
    """The peak resident memory (KiB) of process `pid` so far, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("VmHWM:"):
                    return int(ln.split()[1])
    except (OSError, TypeError, ValueError):
        pass
    return None


def open_chat(s, payload):
    """Sends a chat request and leaves the connection open."""
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    c.sendall(build_request("POST", "/v1/chat/completions", payload))
    return c


def recv_until(c, done, buf=b""):
    """Reads from c until done(buf) holds, the peer closes or it stays
    silent for the socket's timeout; returns everything read."""
    while not done(buf):
        try:
            b = c.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not b:
            break
        buf += b
    return buf


def body_of(buf):
    """What follows the response head in buf (b"" before its end)."""
    return buf.partition(b"\r\n\r\n")[2]


def one(lang, code, model="codellm"):
    return {"model": model, "messages": [{"role": "user", "content": block(lang, code)}]}


# ---- interpreters and aliases -------------------------------------------------

# (a run that waits for a file another block makes ends by this timeout
# if the file never comes: a broken pipeline fails its check, never hangs)
with Server("--timeout", "20") as s:
    cases = [
        ("python", "import sys\nprint('py', sys.version_info[0])", "py 3\n"),
        ("bash", "echo \"bash ${BASH_VERSINFO[0]:+yes}\"", "bash yes\n"),
        ("node", "console.log('node', typeof process.version)", "node string\n"),
        ("ruby", "puts \"ruby #{1 + 1}\"", "ruby 2\n"),
        ("php", "echo 'php ', 6 * 7, \"\\n\";", "php 42\n"),
        ("php", "<?php\necho 'php-tag ', strlen('abc'), \"\\n\";", "php-tag 3\n"),
        ("php", "<?php echo 'php-inline ', 1 + 1, \"\\n\";", "php-inline 2\n"),
        ("perl", "print 'perl ', 2 ** 5, \"\\n\";", "perl 32\n"),
    ]
    for lang, code, want in cases:
        r = s.run(block(lang, code))
        t.ok(r.status == 200 and content(r) == want and field(r, "codellm", "exit_code") == 0,
             "%s block runs (%r)" % (lang, code.splitlines()[0][:30]),
             "status %s content %r want %r; %r" % (r.status, content(r), want, r.body[:600]))
    # php's <?php is not doubled: an error would show on stderr
    r = s.run(block("php", "<?php\necho 'x';"))
    t.eq((content(r), field(r, "codellm", "stderr")), ("x", ""), "php: a leading <?php is not prepended twice")

    # every alias, case-insensitive, as one 13-block pipeline: each block
    # copies its stdin and appends its tag, so the output proves each ran
    # in order with the right interpreter
    passthrough = {
        "python": "import sys\nsys.stdout.write(sys.stdin.read())\nprint('%s')",
        "bash": "cat\necho %s",
        "node": "process.stdout.write(require('fs').readFileSync(0));\nconsole.log('%s')",
        "ruby": "print STDIN.read\nputs '%s'",
        "perl": "print while <STDIN>;\nprint \"%s\\n\";",
        "php": "echo stream_get_contents(STDIN);\necho \"%s\\n\";",
    }
    aliases = [("py", "python"), ("python3", "python"), ("PYTHON", "python"),
               ("sh", "bash"), ("shell", "bash"), ("Bash", "bash"),
               ("js", "node"), ("javascript", "node"), ("Node", "node"),
               ("rb", "ruby"), ("pl", "perl"), ("PHP", "php"), ("Perl", "perl")]
    body = "".join(block(a, passthrough[lang] % a) for a, lang in aliases)
    r = s.run(body)
    t.eq(content(r), "".join(a + "\n" for a, _ in aliases),
         "aliases py/python3/PYTHON/sh/shell/Bash/js/javascript/Node/rb/pl/PHP/Perl all run, in order")
    t.eq([b.get("lang") for b in (results(r) or [])], [lang for _, lang in aliases],
         "block_results[].lang is the registry name of each alias")
    t.eq([b.get("index") for b in (results(r) or [])], list(range(len(aliases))),
         "block_results[].index counts from 0")

    # ---- a true pipeline ------------------------------------------------
    # block 0 prints a line, then waits for a file block 1 makes once that
    # line has reached it, then prints its last; block 1 stamps each line
    # as it arrives. A fused or store-and-forward pipeline would deliver
    # nothing before block 0 ended: the file never comes, the run ends by
    # its timeout, and the check fails (an ordering, not a time).
    # a process is told apart by its PID namespace and pid: every block
    # of a sandboxed run has a PID namespace of its own
    prod = ("import os, sys, time\n"
            "me = os.readlink('/proc/self/ns/pid')[5:-1] + str(os.getpid())\n"
            "print('first', me, time.time(), flush=True)\n"
            "while not os.path.exists('got-first'):\n"
            "    time.sleep(0.01)\n"
            "print('second', me, time.time(), flush=True)\n")
    cons = ("import os, sys, time, json\n"
            "got = []\n"
            "for line in sys.stdin:\n"
            "    got.append([time.time(), line.split()])\n"
            "    open('got-first', 'w').close()\n"
            "print(json.dumps({'pid': os.readlink('/proc/self/ns/pid')[5:-1] + str(os.getpid()), 'got': got, 'end': time.time()}))\n")
    r = s.run(block("python", prod) + block("python", cons))
    try:
        j = json.loads(content(r))
        got = j["got"]
        (a_recv, a), (b_recv, b) = got
        ok = (a[0] == "first" and b[0] == "second" and a_recv <= float(b[2]) <= b_recv
              and field(r, "codellm", "timed_out") is False)
        t.ok(ok, "pipeline streams: block 1 got the first line while block 0 still ran, waiting "
             "for that (its last line came %.2f s later)" % (float(b[2]) - a_recv), json.dumps(j))
        pids = {a[1], j["pid"]}
        t.ok(len(pids) == 2, "each block is its own process (different pids)", repr(pids))
    except Exception as e:
        t.ok(False, "pipeline streams", "%r %r" % (e, r.body[:800]))
        t.ok(False, "each block is its own process (different pids)")

    # three interpreters, three pids ($$, getpid, process.pid)
    r = s.run(block("bash", "echo $(readlink /proc/self/ns/pid)-$$") +
              block("python", "import os,sys\nsys.stdout.write(sys.stdin.read())\n"
                    "print(os.readlink('/proc/self/ns/pid') + '-' + str(os.getpid()))") +
              block("node", "process.stdout.write(require('fs').readFileSync(0));\n"
                    "console.log(require('fs').readlinkSync('/proc/self/ns/pid') + '-' + process.pid)"))
    pids = (content(r) or "").split()
    t.ok(len(pids) == 3 and len(set(pids)) == 3 and all(p.startswith("pid:[") for p in pids),
         "bash | python | node: three distinct processes", repr(content(r)))
    # block 1 starts while block 0 is still running: block 0 writes only
    # once block 1 has made a file (blocks run one after the other would
    # wait for each other until the timeout)
    r = s.run(block("bash", "until [ -e b1-running ]; do sleep 0.01; done\necho done0") +
              block("python", "import time\nopen('b1-running', 'w').close()\nt0 = time.time()\n"
                    "import sys\nx = sys.stdin.read()\nprint(round(time.time() - t0, 2), x.strip())"))
    try:
        waited, word = content(r).split()
        t.ok(word == "done0" and field(r, "codellm", "timed_out") is False,
             "block 1 is already running while block 0 waits for it (waited %s s on stdin)" % waited)
    except Exception:
        t.ok(False, "block 1 is already running while block 0 waits for it", r.body[:600])

    # ---- 32 MiB through three blocks, byte for byte ----------------------
    N = 32 << 20
    gen = ("import random, sys\n"
           "r = random.Random(20240601)\n"
           "out = sys.stdout.buffer\n"
           "for _ in range(32):\n"
           "    out.write(r.randbytes(1 << 20))\n")
    mid = "import shutil, sys\nshutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer, 1 << 16)\n"
    summ = ("import hashlib, sys\n"
            "h = hashlib.sha256(); n = 0\n"
            "while True:\n"
            "    b = sys.stdin.buffer.read(1 << 16)\n"
            "    if not b: break\n"
            "    h.update(b); n += len(b)\n"
            "print(h.hexdigest(), n)\n")
    rr = random.Random(20240601)
    h = hashlib.sha256()
    for _ in range(32):
        h.update(rr.randbytes(1 << 20))
    want = "%s %d\n" % (h.hexdigest(), N)
    t0 = time.time()
    r = s.run(block("python", gen) + block("bash", "cat") + block("python", summ))
    t.eq(content(r), want, "32 MiB through three blocks arrives byte for byte (sha256 and length)")
    t.eq([b.get("stdout_bytes") for b in (results(r) or [])], [N, N, len(want)],
         "block_results[].stdout_bytes counts every byte each block produced")
    t.eq(field(r, "codellm", "exit_code"), 0, "32 MiB pipeline exits 0")
    t.diag("32 MiB pipeline took %.2f s" % (time.time() - t0))

    # ---- pipefail exit codes ----------------------------------------------
    r = s.run(block("bash", "echo e0 >&2; exit 3") + block("bash", "cat >/dev/null; echo e1 >&2; exit 0"))
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "stderr")), (3, "e0\n"),
         "exit 3 in block 0 | exit 0 → exit_code 3, stderr of block 0")
    r = s.run(block("bash", "echo e0 >&2; exit 3") + block("bash", "cat >/dev/null; echo e1 >&2; exit 5") +
              block("bash", "cat >/dev/null; echo e2 >&2; exit 0"))
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "stderr")), (5, "e1\n"),
         "pipefail: the last non-zero exit wins (3, 5, 0 → 5) with that block's stderr")
    t.eq([b.get("exit_code") for b in (results(r) or [])], [3, 5, 0], "per-block exit codes 3, 5, 0")
    r = s.run(block("bash", "echo e0 >&2") + block("bash", "cat >/dev/null; echo e1 >&2"))
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "stderr")), (0, "e1\n"),
         "all blocks succeed → exit_code 0, stderr of the last block")
    t.eq(field(r, "choices", 0, "finish_reason"), "stop", "a normal run finishes with stop")
    r = s.run(block("bash", "echo dying >&2; kill -9 $$; echo not-reached") + block("bash", "cat"))
    br = results(r) or [{}]
    t.eq((field(r, "codellm", "exit_code"), br[0].get("signal"), br[0].get("exit_code"),
          field(r, "codellm", "stderr"), content(r)),
         (137, 9, 137, "dying\n", ""),
         "kill -9 $$ → exit_code 137, signal 9 in block_results, that block's stderr")
    t.eq(field(r, "choices", 0, "finish_reason"), "stop", "a failing block still finishes with stop (200)")
    r = s.run(block("python", "import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)"))
    t.eq((r.status, field(r, "codellm", "exit_code"), field(r, "codellm", "block_results", 0, "signal")),
         (200, 3, 0), "python sys.exit(3) → 200, exit_code 3, signal 0")

    r = s.run(block("python", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"))
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "block_results", 0, "signal")), (139, 11),
         "a block killed by SIGSEGV → exit_code 139, signal 11")
    # the upper bound is the client's own wait for the answer: a run the
    # handler measures cannot last longer than the request did
    t0 = time.time()
    r = s.run(block("bash", "sleep 1") + block("bash", "cat"))
    el_ms = (time.time() - t0) * 1000
    br = results(r) or [{}, {}]
    d0, run_ms = br[0].get("duration_ms") or 0, field(r, "codellm", "duration_ms") or 0
    t.ok(d0 >= 950 and run_ms >= d0 and run_ms <= el_ms + 5,
         "duration_ms measures the run (sleep 1 → %s ms, run %s ms, the client waited %d ms)"
         % (br[0].get("duration_ms"), field(r, "codellm", "duration_ms"), el_ms))
    # a block that closes its stdout and goes on: the next block sees EOF
    # while it still runs (nothing else holds the pipe open). Block 0
    # ends only once block 1 made a file after its EOF: an EOF that came
    # only with block 0's end would leave both waiting until the timeout.
    r = s.run(block("bash", "exec >&-\nuntil [ -e eof-seen ]; do sleep 0.01; done") +
              block("python", "import sys, time\nt = time.time()\nsys.stdin.read()\n"
                    "open('eof-seen', 'w').close()\nprint(round(time.time() - t, 2))"))
    try:
        waited = float(content(r))
    except (TypeError, ValueError):
        waited = -1
    t.ok(waited >= 0 and field(r, "codellm", "timed_out") is False and field(r, "codellm", "exit_code") == 0,
         "a block that closes stdout early: the next block gets EOF while it still runs (%.2f s)" % waited,
         r.body[:400])

    # ---- a reader that stops reading -------------------------------------
    t0 = time.time()
    r = s.run(block("bash", "exec yes") + block("bash", "exit 0"))
    el = time.time() - t0
    br = results(r) or [{}, {}]
    # (a writer that never got SIGPIPE would run until the --timeout 20)
    t.ok(el < 20 and field(r, "codellm", "exit_code") == 141 and br[0].get("signal") == 13
         and br[1].get("exit_code") == 0 and field(r, "codellm", "timed_out") is False,
         "next block exits without reading → writer dies of SIGPIPE, exit_code 141, in %.1f s" % el,
         r.body[:800])
    r = s.run(block("perl", "$| = 1; print 'x' x 65536 while 1;") + block("python", "import sys\nsys.stdin.read(10)\n"))
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "block_results", 0, "signal")), (141, 13),
         "a reader that reads 10 bytes then exits: the perl writer gets SIGPIPE (141)")

    # ---- subreaper: nothing a block spawns outlives the response ---------
    # each block ends only once what it spawned runs the marked sleep (so a
    # leftover shows in the process list whenever the test looks)
    r = s.run(block("bash", "setsid sleep " + U + ".777 >/dev/null 2>&1 </dev/null &\n"
                            "sleep " + U + ".776 >/dev/null 2>&1 &\n"
                            "disown -a\n" + started("777", "776") + "echo started"))
    left = procs_matching(U + ".77")
    t.ok(content(r) == "started\n" and left == [],
         "setsid/background daemons of a bash block are gone when the response arrives", repr(left))
    kill_leftovers(U + ".77")
    dfork = ("import os, sys, time\n"
             "pid = os.fork()\n"
             "if pid == 0:\n"
             "    os.setsid()\n"
             "    g = os.fork()\n"
             "    if g == 0:\n"
             "        os.execvp('sleep', ['sleep', '" + U + ".778'])\n"
             "    while b'" + U + ".778' not in open('/proc/%d/cmdline' % g, 'rb').read():\n"
             "        time.sleep(0.01)\n"
             "    os._exit(0)\n"
             "os.waitpid(pid, 0)\n"
             "print('daemonized')\n")
    r = s.run(block("python", dfork))
    left = procs_matching(U + ".778")
    t.ok(content(r) == "daemonized\n" and left == [],
         "a python double-fork + setsid daemon is gone when the response arrives", repr(left))
    kill_leftovers(U + ".778")
    # a daemon left by block 0 holding its stdout must not stall block 1:
    # the block ended, what it left behind dies with it (as with a PID
    # namespace), so block 1 sees EOF
    t0 = time.time()
    r = s.run(block("bash", "setsid sleep " + U + ".779 &\n" + started("779") + "echo hi") +
              block("bash", "cat; echo eof"))
    el = time.time() - t0
    # (had the daemon kept the pipe open, the run would end by the --timeout 20)
    t.ok(el < 20 and content(r) == "hi\neof\n" and field(r, "codellm", "timed_out") is False,
         "a daemon of block 0 holding the pipe open dies with block 0 (block 1 sees EOF, %.1f s)" % el,
         r.body[:600])
    kill_leftovers(U + ".779")
    t.ok(s.leftovers() == [], "no run directory left after the runs above", repr(os.listdir(s.runs)))

# ---- the largest --max-blocks under a login shell's open-file limit --------------
# Each block costs the handler descriptors; it takes the hard open-file
# limit for them, so 256 blocks run under a soft limit of 1024.
wrap_dir = tempfile.mkdtemp(prefix="codellm-wrap-")
wrapper = os.path.join(wrap_dir, "handler-nofile-1024")
with open(wrapper, "w") as f:
    f.write("#!/bin/sh\nulimit -Sn 1024\nexec %s \"$@\"\n" % HANDLER)
os.chmod(wrapper, 0o755)
with Server("--timeout", "60", "--max-blocks", "256", handler=wrapper) as s:
    t0 = time.time()
    r = s.run(block("bash", "echo through-256") + "".join(block("bash", "cat") for _ in range(255)))
    el = time.time() - t0
    t.ok(content(r) == "through-256\n" and len(results(r) or []) == 256,
         "256 blocks run under a soft open-file limit of 1024 (%.1f s, --timeout 60)" % el, r.body[-400:])
with Server("--max-blocks", "257") as s:
    r = s.run(block("bash", "echo x"))
    t.ok(r.status == 503 and (r.error() or {}).get("code") == "server_misconfigured",
         "--max-blocks above 256 is a configuration error (503 server_misconfigured)", r.raw[:300])
shutil.rmtree(wrap_dir, ignore_errors=True)

# ---- more blocks than one go-byte batch; --interpreters ---------------------------
interp_dir = tempfile.mkdtemp(prefix="codellm-interp-")
interp_file = os.path.join(interp_dir, "interpreters.json")
with open(interp_file, "w") as f:
    json.dump({"awk": {"argv": ["awk", "-f", "{file}"], "aliases": ["gawk", "mawk"]}}, f)
with Server("--timeout", "60", "--max-blocks", "100", "--interpreters", interp_file,
            allowed=ALL_LANGS + ",awk") as s:
    t0 = time.time()
    r = s.run(block("bash", "echo through-80") + "".join(block("bash", "cat") for _ in range(79)))
    el = time.time() - t0
    # the time is reported, never asserted: these machines are shared
    t.ok(content(r) == "through-80\n" and field(r, "codellm", "exit_code") == 0
         and len(results(r) or []) == 80,
         "80 blocks (--max-blocks 100) all start and pass the line through (%.1f s)" % el,
         r.body[-600:])
    r = s.run(block("awk", "BEGIN { print \"awk-ok\" }") + block("MAWK", "{ print \"via alias:\", $0 }"))
    t.eq((content(r), [b.get("lang") for b in results(r) or []]), ("via alias: awk-ok\n", ["awk", "awk"]),
         "--interpreters adds an interpreter (argv with {file}) and its aliases")
    r = s.run(block("python", "print('builtins stay')"))
    t.eq(content(r), "builtins stay\n", "--interpreters merges over the built-ins")
shutil.rmtree(interp_dir, ignore_errors=True)

# ---- stderr flood ----------------------------------------------------------------
with Server("--timeout", "60", "--max-stderr-bytes", "5000") as s:
    # once the flood is written the block waits for the test (catching,
    # release): the handler's peak memory is read after the whole flood
    # passed through it, then again until the answer is out
    flood = ("import os, signal, sys\n"
             "w = sys.stderr.buffer.write\n"
             "for i in range(800000):\n"
             "    w(b'line %07d\\n' % i)\n"
             "sys.stderr.flush()\n"
             "print('done', flush=True)\n"
             "signal.signal(signal.SIGUSR1, lambda *a: os._exit(0))\n"
             "while True:\n"
             "    signal.pause()\n")
    full = b"".join(b"line %07d\n" % i for i in range(800000))
    res = []
    th = threading.Thread(target=lambda: res.append(s.run(block("python", flood), timeout=90)))
    th.start()
    blk = catching(s, th.is_alive)
    hp = handler_pid(s)
    after_flood = vmhwm(hp) if blk else None
    release(blk)
    hwm = [after_flood or 0]
    while th.is_alive():
        hwm.append(vmhwm(hp) or 0)
        time.sleep(0.05)
    th.join()
    r = res[0] if res else Resp(b"")
    err = field(r, "codellm", "stderr") or ""
    t.ok(r.status == 200 and content(r) == "done\n", "10 MB stderr flood: the response arrives", r.body[:300])
    t.eq(len(err.encode()), 5000, "kept stderr is capped at --max-stderr-bytes")
    t.ok(err.encode() == full[-5000:], "kept stderr is the TAIL of what was written", err[:200])
    t.eq(field(r, "codellm", "block_results", 0, "stderr_bytes"), len(full),
         "stderr_bytes is the full count (%d)" % len(full))
    t.ok(after_flood is not None and 0 < max(hwm) < 64 * 1024,
         "the handler stays small during the flood (peak RSS %s KiB, %s KiB once the flood was through)"
         % (max(hwm), after_flood))
    t.ok(s.leftovers() == [], "no run directory left after the flood")

# ---- stdout cap ------------------------------------------------------------------------
with Server("--timeout", "60", "--max-stdout-bytes", "1000") as s:
    t0 = time.time()
    r = s.run(block("python", "import sys\nfor i in range(80):\n    sys.stdout.write('x' * 65536)\n"
                              "sys.stdout.flush()\nsys.stderr.write('finished\\n')\n"))
    el = time.time() - t0
    t.eq(content(r), "x" * 1000, "stdout over --max-stdout-bytes keeps exactly the cap")
    t.eq(field(r, "choices", 0, "finish_reason"), "length", "finish_reason length when stdout hit the cap")
    t.ok(field(r, "codellm", "exit_code") == 0 and field(r, "codellm", "stderr") == "finished\n"
         and field(r, "codellm", "block_results", 0, "stdout_bytes") == 80 * 65536 and el < 60,
         "the producer is drained: it finished (exit 0, its last stderr line), stdout_bytes counts all "
         "(%.1f s; a producer left blocked would run until the --timeout 60)" % el,
         r.body[-700:])
    r = s.run(block("python", "import sys\nsys.stdout.write('y' * 1000)"))
    t.eq((content(r), field(r, "choices", 0, "finish_reason")), ("y" * 1000, "stop"),
         "exactly the cap is not truncation (stop)")
    # the cap cuts after byte 1000; the partial UTF-8 sequence at the end
    # becomes one U+FFFD, the JSON stays valid
    r = s.run(block("python", "import sys\nsys.stdout.buffer.write(b'a' * 999 + '\\u00e9'.encode() * 10)"))
    t.eq(content(r), "a" * 999 + "\ufffd", "a UTF-8 sequence cut by the cap becomes U+FFFD")

# ---- the wall timeout -----------------------------------------------------------
# A run's time is bounded above by 15 s: far above the timeout plus any
# delay load puts on the kill and the answer, far below what a timeout
# that did not fire would take (the client's 30 s wait, the 60 s sleeps).
with Server("--timeout", "2") as s:
    t0 = time.time()
    r = s.run(block("bash", "echo before; sleep 60." + U))
    el = time.time() - t0
    c = ext(r) or {}
    t.ok(r.status == 200 and c.get("exit_code") == 124 and c.get("timed_out") is True,
         "--timeout 2 and sleep 60 → 200, exit_code 124, timed_out true", r.body[:600])
    t.eq(field(r, "choices", 0, "finish_reason"), "length", "a timed-out run finishes with length")
    t.eq(content(r), "before\n", "output produced before the timeout is kept")
    t.ok(1.8 <= el < 15, "it arrives in ~2 s, long before the sleep's 60 (%.2f s)" % el)
    t.eq(field(r, "codellm", "block_results", 0, "timed_out"), True, "block_results[0].timed_out is true")
    t.ok(wait_gone("sleep 60." + U), "the sleeping block is killed")
    # lowered far below the server's timeout (here --timeout 30), so that
    # a timeout_s ignored (30 s) and one applied (0.7 s) lie far apart
    with Server("--timeout", "30") as s30:
        t0 = time.time()
        r = s30.run(block("bash", "sleep 60." + U), extra={"codellm": {"timeout_s": 0.7}})
        el = time.time() - t0
    t.ok(field(r, "codellm", "exit_code") == 124 and 0.6 <= el < 15,
         "codellm.timeout_s 0.7 lowers the timeout (%.2f s, --timeout 30)" % el, r.body[:400])
    t0 = time.time()
    r = s.run(block("bash", "sleep 60." + U), extra={"codellm": {"timeout_s": 100}})
    el = time.time() - t0
    t.ok(field(r, "codellm", "exit_code") == 124 and 1.8 <= el < 15,
         "codellm.timeout_s 100 is clamped to --timeout 2 (%.2f s)" % el, r.body[:400])
    # the timeout kills the whole pipeline, every block
    t0 = time.time()
    r = s.run(block("bash", "sleep 61." + U) + block("python", "import time\ntime.sleep(62)"))
    el = time.time() - t0
    br = results(r) or [{}, {}]
    t.ok(field(r, "codellm", "exit_code") == 124 and el < 15 and
         [b.get("timed_out") for b in br] == [True, True],
         "the timeout kills every block of the pipeline (%.2f s)" % el, r.body[:800])
    t.ok(wait_gone("sleep 61." + U) and wait_gone("sleep 60." + U) and s.leftovers() == [],
         "nothing left after the timeouts")

# ---- the relay's hard stop after the kill ------------------------------------------
# After the kill the handler reads the blocks' pipes until end of file,
# but for at most 2 s (SBX_DRAIN_AFTER_KILL_MS): a process outside the
# run that holds a write end must not keep the answer back for ever.
# Only --sandbox off lets one exist (the handler kills every descendant,
# so it cannot be one the block starts): here the test itself opens the
# block's stdout through /proc/PID/fd/1 while the block runs. Harmless
# code only. The block goes on only once the test holds its stdout (a
# file the test makes in a directory of its own): then it ends by itself
# or sleeps until the timeout kills it. The --timeout 10 leaves the test
# time to take hold under any load; the answer comes ~2 s after it, and
# the client waits up to 60 s: only the outcome counts.


def hold_stdout(s, timeout=30.0):
    """(fd, pid): a write end of the running bash block's stdout pipe."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in block_processes(s):
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    if not f.read().startswith(b"bash\0"):
                        continue
                return os.open("/proc/%d/fd/1" % p, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC), p
            except OSError:
                continue
        time.sleep(0.01)
    return None, None


sync_dir = tempfile.mkdtemp(prefix="codellm-held-")
held_flag = os.path.join(sync_dir, "held")
wait_held = "echo before\nuntil [ -e %s ]; do sleep 0.01; done\n" % held_flag
# (the block's own result says which way it ended: killed by SIGKILL at
# the timeout, or exit 0 before it)
for code, what, ended in ((wait_held + "sleep 100." + U, "killed by the timeout", (9, True)),
                          (wait_held + "exit 0", "ended by itself", (0, False))):
    if os.path.exists(held_flag):
        os.unlink(held_flag)
    with Server("--timeout", "10", sandbox="off") as s:
        res = []
        th = threading.Thread(target=lambda: res.append(s.run(block("bash", code), timeout=60)))
        t0 = time.time()
        th.start()
        held, pid = hold_stdout(s)
        if held is not None:
            open(held_flag, "w").close()
        th.join(90)
        el = time.time() - t0
        if held is not None:
            os.close(held)
        kill_leftovers("sleep 100." + U)
        r = res[0] if res else None
        c = (ext(r) or {}) if r is not None else {}
        if held is None:
            t.ok(False, "relay hard stop (%s): the test could not hold the block's stdout" % what)
            continue
        b0 = (c.get("block_results") or [{}])[0]
        t.ok(r is not None and r.status == 200 and c.get("timed_out") is True and
             c.get("exit_code") == 124 and content(r) == "before\n" and
             (b0.get("signal"), b0.get("timed_out")) == ended,
             "a block (%s) whose stdout a process outside the run holds open: the answer "
             "still comes, timed_out true, with what was read (\"before\"), in %.1f s" % (what, el),
             repr(r)[:800])
        t.ok(wait_gone("sleep 100." + U) and s.leftovers() == [],
             "relay hard stop (%s): nothing left behind" % what)
shutil.rmtree(sync_dir, ignore_errors=True)

# ---- keep-alive ----------------------------------------------------------------------
# The block waits for the test's release: the test lets it end only once
# the head and two keep-alive bytes have arrived, so they came while the
# run went on (a head sent with the answer would leave both waiting until
# the --timeout 30, and the block would never print).
with Server("--keepalive-interval", "1", "--timeout", "30") as s:
    c = open_chat(s, one("python", WAIT_RELEASE_PY % "slow-done"))
    t0 = time.time()
    c.settimeout(60)
    buf = recv_until(c, lambda b: b"\r\n\r\n" in b)
    t_head = time.time() - t0
    buf = recv_until(c, lambda b: len(body_of(b)) - len(body_of(b).lstrip()) >= 2
                     or body_of(b).strip() != b"", buf)
    blk = catching(s)
    t_rel = time.time() - t0
    release(blk)
    buf += read_all(c)
    t_end = time.time() - t0
    c.close()
    r = Resp(buf)
    t.ok(r.status == 200 and blk is not None and content(r) == "slow-done\n",
         "headers arrive before the run ends (%.2f s): the block still waited for the test" % t_head)
    t.eq(r.header("x-should-retry"), "false", "early headers carry x-should-retry: false")
    t.eq(r.header("content-length"), None, "early headers have no Content-Length")
    lead = len(r.body) - len(r.body.lstrip())
    t.ok(r.body[:1] in (b" ", b"\n", b"\t", b"\r") and lead >= 2,
         "the body starts with keep-alive whitespace (%d bytes)" % lead, r.body[:80])
    t.eq(content(r), "slow-done\n", "the body after the whitespace is the JSON object (json.loads parses it)")
    t.ok(blk is not None and t_end >= t_rel and field(r, "codellm", "exit_code") == 0,
         "the run went on until the test released the block (%.2f s, the answer at %.2f s)" % (t_rel, t_end))
# the head goes out once the blocks are set up, not with the first
# keep-alive byte: with --keepalive-interval 30 it comes long before one
# is due (and the block still waits for the test meanwhile)
with Server("--keepalive-interval", "30", "--timeout", "60") as s:
    c = open_chat(s, one("python", WAIT_RELEASE_PY % "released"))
    t0 = time.time()
    c.settimeout(60)
    buf = recv_until(c, lambda b: b"\r\n\r\n" in b)
    t_head = time.time() - t0
    blk = catching(s)
    release(blk)
    buf += read_all(c)
    c.close()
    r = Resp(buf)
    t.ok(r.status == 200 and t_head < 15 and blk is not None and content(r) == "released\n",
         "headers arrive right after setup (%.2f s), long before the first keep-alive byte is due "
         "(--keepalive-interval 30)" % t_head, r.raw[:400])

# ---- a client that disconnects mid-run ---------------------------------------------
with Server("--timeout", "60") as s:
    c = open_chat(s, {"model": "x", "messages": [{"role": "user", "content":
                      block("bash", "sleep " + U + ".567") + block("python", "import subprocess, sys\np = subprocess.Popen(['sleep', '" + U + ".5671'])\nsys.stdin.read()\np.wait()")}]})
    up = wait_procs("sleep " + U + ".567")
    py = wait_procs(U + ".5671")
    c.close()
    t.ok(up != [] and py != [], "disconnect case: the blocks are running", repr((up, py)))
    t.ok(wait_gone(U + ".567"),
         "client disconnect mid-run: every block is killed", repr(procs_matching(U + ".567")))
    t.eq(s.leftovers(), [], "client disconnect mid-run: the run directory is removed")
    kill_leftovers(U + ".567")

# ---- a client that only half-closes still gets its answer ----------------------------
# (nc -N, socat: shutdown(SHUT_WR) after the request, then read.) The
# handler tells this apart from a full close by writing a keep-alive byte:
# only a reset or hangup ends the run. The block waits for the test's
# release, given once that byte arrived: the handler saw the half-close
# and the run went on.
with Server("--timeout", "60") as s:
    req = build_request("POST", "/v1/chat/completions", {"model": "python", "messages": [
        {"role": "user", "content": WAIT_RELEASE_PY % "after half-close"}]})
    c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    c.sendall(req)
    c.shutdown(socket.SHUT_WR)
    buf = recv_until(c, lambda b: body_of(b) != b"")
    blk = catching(s)
    release(blk)
    buf += read_all(c)
    c.close()
    r = Resp(buf)
    t.eq(r.status, 200, "half-closed client: 200")
    t.eq(content(r), "after half-close\n", "half-closed client: the whole answer arrives")
    t.ok(blk is not None, "half-closed client: the run was not cut short (the block still waited "
         "for the test after the handler's byte)")
    t.eq(field(r, "codellm", "exit_code"), 0, "half-closed client: the block exited 0")

# ---- SIGTERM to the handler mid-run ----------------------------------------------------
with Server("--timeout", "60") as s:
    c = open_chat(s, {"model": "x", "messages": [{"role": "user", "content":
                      block("bash", "sleep " + U + ".601 &\nsetsid sleep " + U + ".602 &\nsleep " + U + ".603") +
                      block("python", "import subprocess, sys\nsubprocess.run(['sleep', '" + U + ".6'])")}]})
    running = wait_procs("sleep " + U + ".603") and wait_procs("sleep " + U + ".602") and wait_procs("sleep " + U + ".6 ")
    hp = handler_pid(s)
    t.ok(bool(running) and hp is not None, "SIGTERM case: the run is going (handler %s)" % hp)
    if hp:
        os.kill(hp, signal.SIGTERM)
    out = read_all(c, 60)
    c.close()
    t.ok(wait_gone(U + ".60") and wait_gone("sleep " + U + ".6 "),
         "SIGTERM to the handler: every process it made dies", repr(procs_matching(U + ".60")))
    t.eq(s.leftovers(), [], "SIGTERM to the handler: the run directory is removed")
    deadline = time.time() + 20
    while hp and pid_alive(hp) and time.time() < deadline:
        time.sleep(0.05)
    t.ok(hp and not pid_alive(hp), "SIGTERM to the handler: the handler exits")
    r = Resp(out)
    t.ok(r.status == 200 and isinstance(r.json, dict) and field(r, "choices", 0, "finish_reason") == "length",
         "SIGTERM to the handler: the client still gets a complete JSON answer (finish_reason length)",
         out[:600])
    kill_leftovers(U + ".60")

# ---- SIGKILL of the handler mid-run: parent-death signal -------------------------
with Server("--timeout", "60") as s:
    c = open_chat(s, {"model": "x", "messages": [{"role": "user", "content":
                      block("bash", "exec sleep " + U + ".701") +
                      block("python", "import subprocess, sys\nsubprocess.run(['sleep', '" + U + ".702'])") +
                      block("bash", "sleep " + U + ".703\necho after")}]})
    running = (wait_procs("sleep " + U + ".701") and wait_procs(U + ".702") and wait_procs("sleep " + U + ".703"))
    hp = handler_pid(s)
    t.ok(bool(running) and hp is not None, "SIGKILL case: the run is going")
    if hp:
        os.kill(hp, signal.SIGKILL)
    c.close()
    t.ok(wait_gone("sleep " + U + ".701") and wait_gone(U + ".702"),
         "SIGKILL of the handler: its blocks die too (parent-death signal)",
         repr(procs_matching(U + ".70")))
    t.ok(wait_gone("sleep " + U + ".703"),
         "SIGKILL of the handler: what a block spawned (bash's sleep) dies too",
         repr(procs_matching(U + ".703")))
    kill_leftovers(U + ".70")

# ---- environment, descriptors, working directory --------------------------------------
creds = tempfile.mkdtemp(prefix="codellm-creds-")
with open(os.path.join(creds, "api-key"), "w") as f:
    f.write("not-for-blocks\n")
with Server(env={"SECRET_TOKEN": "x", "CREDENTIALS_DIRECTORY": creds, "CODELLM_TIMEOUT": "30"}) as s:
    envcode = "import os, json\nprint(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))"
    r = s.run(block("python", envcode))
    try:
        j = json.loads(content(r))
        env, cwd = j["env"], j["cwd"]
    except Exception:
        env, cwd = {}, ""
    want = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd, "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    t.eq(env, want, "a block's environment is exactly PATH, HOME, TMPDIR, LANG, PYTHONHASHSEED, "
                    "PYTHONDONTWRITEBYTECODE")
    t.ok("SECRET_TOKEN" not in env and "CREDENTIALS_DIRECTORY" not in env and
         not any(k.startswith(("CODELLM_", "LISTEN_")) for k in env),
         "nothing of the handler's environment (SECRET_TOKEN, CREDENTIALS_DIRECTORY, CODELLM_*, LISTEN_*)")
    t.eq(cwd, "/work", "the working directory is the run's workdir, /work inside the block's root")
    r = s.chat({"model": "x", "messages": [
        {"role": "user", "name": "fleet_input", "content": "{\"bag\": 1}"},
        {"role": "user", "content": block("python", envcode)}]})
    try:
        j = json.loads(content(r))
        env, cwd = j["env"], j["cwd"]
    except Exception:
        env, cwd = {}, ""
    fi = env.pop("FLEET_INPUT", None)
    t.ok(fi is not None and os.path.dirname(fi) == cwd, "FLEET_INPUT is set when there is a bag, in the workdir",
         repr(fi))
    t.eq(sorted(env), sorted(want), "with a bag the environment is the same plus FLEET_INPUT only")
    r = s.run(block("bash", "printf '%s\\n' \"$LANG\" \"$PWD\" \"$HOME\" \"${SECRET_TOKEN-unset}\" \"${FLEET_INPUT-unset}\""))
    lines = (content(r) or "").split("\n")
    t.ok(len(lines) >= 5 and lines[0] == "C.UTF-8" and lines[1] == lines[2] and lines[3] == "unset"
         and lines[4] == "unset", "bash sees the same: LANG, PWD == HOME, no SECRET_TOKEN, no FLEET_INPUT",
         repr(content(r)))
    r = s.run(block("python", "import os\nprint(sorted(os.listdir('/proc/self/fd'), key=int))"))
    t.eq(content(r), "['0', '1', '2', '3']\n",
         "only fds 0-2 reach a block (3 is the listing's own fd)")
    r = s.run(block("bash", "cat") + block("python", "import os, sys\nsys.stdin.read()\n"
                                                       "print(sorted(os.listdir('/proc/self/fd'), key=int))"))
    t.eq(content(r), "['0', '1', '2', '3']\n", "a later block of a pipeline also has only fds 0-2")
    r = s.run(block("python", "import os\nprint(os.readlink('/proc/self/fd/0'))"))
    t.eq(content(r), "/dev/null\n", "block 0's stdin is empty (/dev/null) without a stdin message")
shutil.rmtree(creds, ignore_errors=True)

# ---- workdir cleanup without following links ---------------------------------------------
canary_dir = tempfile.mkdtemp(prefix="codellm-canary-")
canary = os.path.join(canary_dir, "canary.txt")
with open(canary, "w") as f:
    f.write("canary-content\n")
os.mkdir(os.path.join(canary_dir, "sub"))
with open(os.path.join(canary_dir, "sub", "inner.txt"), "w") as f:
    f.write("inner\n")
plant = ("import os\n"
         "C = %r\nD = %r\n"
         "cwd = os.getcwd()\n"
         "os.symlink(C, 'link-file')\n"
         "os.symlink(D, 'link-dir')\n"
         "os.symlink('/', 'link-root')\n"
         "os.link(C, 'hardlink')\n"
         "os.mkfifo('fifo')\n"
         "os.mkdir('locked'); open('locked/a', 'w').write('x')\n"
         "os.mkdir('locked/sub'); open('locked/sub/b', 'w').write('y')\n"
         "os.symlink(D, 'locked/sub/link-dir')\n"
         "os.chmod('locked/sub', 0); os.chmod('locked', 0)\n"
         "os.mkdir('deep'); os.chdir('deep')\n"
         "for i in range(2000):\n"
         "    os.mkdir('d'); os.chdir('d')\n"
         "open('bottom', 'w').write('z')\n"
         "os.symlink(D, 'deep-link-dir')\n"
         "os.chdir(cwd)\n"
         "os.chmod(cwd, 0)\n"
         "print('planted', os.stat(C).st_nlink)\n") % (canary, canary_dir)
# The handler's own removal of an on-disk run directory (no bounded-tmpfs
# layer, as --sandbox off and besteffort without user namespaces use):
def check_cleanup(s, tag, gone, survives, not_emptied):
    """After a run that planted links to the canary: the run directory is
    gone, the canary and the directory a symlink named are untouched."""
    left = s.leftovers()
    t.eq(left, [], tag + gone)
    if left:
        # the harness's rmtree cannot take 2000 levels
        subprocess.run(["rm", "-rf", "--one-file-system"] + [os.path.join(s.runs, x) for x in left])
    try:
        with open(canary) as f:
            cc = f.read()
        nl = os.stat(canary).st_nlink
    except OSError as e:
        cc, nl = repr(e), 0
    t.eq((cc, nl), ("canary-content\n", 1), tag + survives)
    t.ok(os.path.exists(os.path.join(canary_dir, "sub", "inner.txt")), tag + not_emptied)


# with --sandbox off the block sees the host and can point links at the
# test's canary. (Sandboxed, the run directory is a tmpfs that is
# unmounted, and no host path is visible to plant a link to.)
with Server("--timeout", "60", sandbox="off") as s:
    r = s.run(block("python", plant))
    t.eq(content(r), "planted 2\n", "the block planted links, a FIFO, locked and 2000-deep directories",
         )
    check_cleanup(s, "", "after the response the run directory is gone",
                  "the canary outside survives with its content (and its hardlink is gone)",
                  "the directory a symlink pointed at was not emptied")
    t.ok(os.path.exists("/bin/sh") and os.path.exists("/etc/passwd"), "a symlink to / was not followed")

# the same as a handler that is not root: permission bits bind it, so
# chmod 000 directories (the workdir itself too) must be opened up
os.chmod(canary_dir, 0o755)
os.chown(canary, NOBODY, NOBODY)
with unprivileged_server("--timeout", "60", sandbox="off") as s:
    r = s.run(block("python", plant.replace("2000", "300") +
                    "import os\nprint(os.geteuid())\n"))
    t.eq(content(r), "planted 2\n%d\n" % (NOBODY if os.geteuid() == 0 else os.geteuid()),
         "unprivileged handler: the block planted links, a FIFO, chmod 000 directories")
    check_cleanup(s, "unprivileged handler: ",
                  "the run directory is gone, chmod 000 parts included",
                  "the canary outside survives",
                  "the symlinked directory outside was not emptied")
if getattr(s, "wrap_dir", None):
    shutil.rmtree(s.wrap_dir, ignore_errors=True)
shutil.rmtree(canary_dir, ignore_errors=True)

# ---- output encoding -------------------------------------------------------------------
with Server("--timeout", "30") as s:
    tricky = [b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff", b"\xe0\x80\x80",
              b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\x80\x80", b"\xc2", b"\xe2\x28\xa1",
              b"\xf0\x9f\x98\x80", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xef\xbf\xbf", b"\xf0\x90\x80"]
    for raw_bytes in tricky:
        data = b"a" + raw_bytes + b"b" + raw_bytes
        r = s.run(block("python", "import sys\nsys.stdout.buffer.write(%r)" % data))
        t.eq(content(r), data.decode("utf-8", "replace"),
             "output %r decodes as Python's errors='replace' (one U+FFFD per maximal subpart)" % data)
    allbytes = bytes(range(256)) + b"\xe2\x82" + b"x" + b"\xf0\x9f\x98"
    r = s.run(block("python", "import sys\nsys.stdout.buffer.write(bytes(range(256)) + b'\\xe2\\x82x\\xf0\\x9f\\x98')"))
    t.eq(content(r), allbytes.decode("utf-8", "replace"), "every byte value 0..255 and truncated tails")
    r = s.run(block("python", "import sys\nsys.stdout.buffer.write(b'nul\\x00byte\\x01\\x1f\\x7f')"))
    t.ok(b"nul\\u0000byte\\u0001\\u001f" in r.body and content(r) == "nul\x00byte\x01\x1f\x7f",
         "NUL and control bytes arrive escaped (\\u0000) and the JSON parses", r.body[:300])
    r = s.run(block("python", "print('line\\u2028sep\\u2029para \"q\" \\\\ back')"))
    t.eq(content(r), "line\u2028sep\u2029para \"q\" \\ back\n", "U+2028/U+2029, quotes and backslashes survive")
    r = s.run(block("bash", "printf 'err\\377\\0x' >&2; exit 1"))
    t.eq(field(r, "codellm", "stderr"), "err\ufffd\x00x", "stderr is encoded the same way")
    j = None
    try:
        j = json.loads(r.body.decode("utf-8"))
    except Exception:
        pass
    t.ok(j is not None, "the body is strict UTF-8 JSON")

# ---- the seed's run-mode example (seed 001 §3), verbatim -----------------------------------
with Server("--timeout", "30") as s:
    seed = {
        "model": "python",
        "messages": [
            {"role": "system", "content": "<optional stdin, see below>"},
            {"role": "user", "content": "```python\nimport sys, json\nprint(json.dumps({\"ok\": True}))\n```"}
        ]
    }
    r = s.chat(seed)
    j = r.json or {}
    t.eq(r.status, 200, "seed example: 200")
    t.eq(r.header("content-type"), "application/json", "seed example: Content-Type application/json")
    t.ok(isinstance(j.get("id"), str) and j["id"] and j.get("id") == r.header("x-request-id"),
         "seed example: id is a non-empty string, equal to x-request-id", repr((j.get("id"), r.header("x-request-id"))))
    t.eq(j.get("object"), "chat.completion", "seed example: object chat.completion")
    t.eq(j.get("model"), "python", "seed example: model echoed")
    t.ok(isinstance(j.get("created"), int) and abs(j["created"] - time.time()) < 60, "seed example: created is now")
    ch = j.get("choices") or [{}]
    t.eq(len(j.get("choices") or []), 1, "seed example: one choice")
    t.eq((ch[0].get("index"), ch[0].get("message", {}).get("role"), ch[0].get("message", {}).get("content"),
          ch[0].get("finish_reason")),
         (0, "assistant", "{\"ok\": true}\n", "stop"), "seed example: choices[0] index/role/content/finish_reason")
    t.eq(j.get("usage"), {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, "seed example: usage zeros")
    c = j.get("codellm") or {}
    t.ok(c.get("exit_code") == 0 and c.get("timed_out") is False and isinstance(c.get("duration_ms"), int)
         and c["duration_ms"] >= 0 and c.get("stderr") == "" and c.get("blocks") == 1,
         "seed example: codellm exit_code 0, timed_out false, duration_ms, stderr '', blocks 1", repr(c))
    sb = c.get("sandbox") or {}
    t.ok(sb.get("mode") == "native" and isinstance(sb.get("layers"), list) and isinstance(sb.get("missing"), list)
         and sb.get("net") in ("own", "shared") and not set(sb.get("layers") or []) & set(sb.get("missing") or []),
         "seed example: sandbox {mode native, layers, missing, net}", repr(sb))
    t.ok(set(sb.get("layers") or []) >= {"userns", "pidns", "mountns", "ipcns", "utsns", "cgroupns", "root",
                                          "proc", "rlimits", "no_new_privs", "caps", "landlock", "seccomp"}
         and sb.get("missing") == [],
         "seed example: native mode applied every layer", repr(sb))
    br = (c.get("block_results") or [{}])[0]
    keys = {"index", "lang", "exit_code", "signal", "timed_out", "duration_ms", "stderr", "stdout_bytes"}
    t.ok(keys <= set(br) and br["index"] == 0 and br["lang"] == "python" and br["exit_code"] == 0
         and br["signal"] == 0 and br["timed_out"] is False and isinstance(br["duration_ms"], int)
         and br["stderr"] == "" and br["stdout_bytes"] == len("{\"ok\": true}\n"),
         "seed example: block_results[0] has index, lang, exit_code, signal, timed_out, duration_ms, "
         "stderr, stdout_bytes", repr(br))
    t.eq(c.get("skipped_fences"), [], "seed example: skipped_fences empty")
    # the system message is stdin
    seed2 = json.loads(json.dumps(seed))
    seed2["messages"][1]["content"] = "```python\nimport sys\nprint(repr(sys.stdin.read()))\n```"
    r = s.chat(seed2)
    t.eq(content(r), "'<optional stdin, see below>'\n", "seed example: the system message is block 0's stdin")
    t.eq(s.leftovers(), [], "no run directory left")

t.diag("test_exec.py took %.1f s" % (time.time() - T_START))
# ---- --max-open-files and --address-space-max are crossed ---------------------
with Server("--max-open-files", "32", "--address-space-max", "512M", "--memory-max", "4G") as s:
    r = s.run(block("python", "import os\nfds = []\ntry:\n    while True:\n"
                    "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
                    "except OSError as e:\n    print(len(fds) + 3, e.errno)"))
    n, err = (content(r) or "0 0").split()
    t.ok(int(n) <= 32 and err == "24", "--max-open-files 32: the 33rd descriptor fails with EMFILE (%s open)" % n,
         r.body[-300:])
    r = s.run(block("python", "try:\n    b = bytearray(1 << 30)\n    print('allocated')\n"
                    "except MemoryError:\n    print('MemoryError')\n"
                    "print([l.split()[4] for l in open('/proc/self/limits') if l.startswith('Max address space')][0])"))
    t.eq(content(r), "MemoryError\n536870912\n",
         "--address-space-max 512M: a 1 GiB allocation fails (RLIMIT_AS 536870912), the answer arrives")

# ---- a program that cannot be executed, in every start ------------------------
# (native: the shared start's program makes system calls only by then,
# and says why itself; --sandbox off: the handler's own child)
tmpd = tempfile.mkdtemp(prefix="codellm-interp-")
os.chmod(tmpd, 0o755)
plain = os.path.join(tmpd, "plain")        # no execute bit, not even for root
with open(plain, "w") as f:
    f.write("not a program\n")
os.chmod(plain, 0o644)
for mode in ("native", "off"):
    # inside a block's root the plain file is /etc/hostname (written there, 0644)
    noexec = "/etc/hostname" if mode == "native" else plain
    interp = os.path.join(tmpd, mode + ".json")
    with open(interp, "w") as f:
        json.dump({"nosuch": {"argv": ["no-such-binary-" + U, "{file}"], "ext": ".x"},
                   "abs": {"argv": ["/usr/bin/no-such-" + U, "{file}"], "ext": ".y"},
                   "noexec": {"argv": [noexec, "{file}"], "ext": ".z"}}, f)
    os.chmod(interp, 0o644)
    with Server("--interpreters", interp, "--allowed-programs", "nosuch,abs,noexec",
                sandbox=None if mode == "native" else "off") as s:
        for lang, path, code, why in (("nosuch", "no-such-binary-" + U, 127, "No such file or directory"),
                                      ("abs", "/usr/bin/no-such-" + U, 127, "No such file or directory"),
                                      ("noexec", noexec, 126, "Permission denied")):
            r = s.run(block(lang, "x"))
            t.ok(r.status == 200 and field(r, "codellm", "exit_code") == code and
                 field(r, "codellm", "stderr") == "codellm: cannot execute %s: %s\n" % (path, why),
                 "%s: an interpreter that cannot be executed (%s) ends the block with %d and says why"
                 % (mode, why, code), r.body[-400:])
shutil.rmtree(tmpd, ignore_errors=True)

# ---- /etc in a block ----------------------------------------------------------
# /etc is a mount of its own (read-only: the slot's kept directory of
# copies and written files, which belong to the host's root here), and
# every host entry bound below it is nosuid and nodev but not read-only,
# so a write fails as it does for an unprivileged user outside
etc_code = r'''
import errno, os
mounts = [l.split() for l in open("/proc/self/mountinfo")]
etc = [(m[4], set(m[5].split(","))) for m in mounts if m[4] == "/etc" or m[4].startswith("/etc/")]
def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
top = [o for p, o in etc if p == "/etc"]
below = [o for p, o in etc if p != "/etc"]
print(len(top) == 1 and "ro" in top[0] and {"nosuid", "nodev"} <= top[0],
      len(below) > 10 and all({"nosuid", "nodev"} <= o and "ro" not in o for o in below),
      err(lambda: open("/etc/services", "a")), err(lambda: open("/etc/passwd", "a")),
      err(lambda: open("/etc/new-file", "w")), os.path.exists("/etc/shadow"))
'''
with Server() as s:
    r = s.run(block("python", etc_code))
    t.eq(content(r), "True True EACCES EACCES EROFS False\n",
         "native: /etc is read-only with every host entry below it nosuid,nodev (a host file "
         "or a copy or a written one: EACCES, a new one: EROFS, no shadow)")

# ---- the handler keeps its oom_score_adj --------------------------------------
# The shared start's block raises oom_score_adj to 1000 while it shares
# the handler's memory (for every process sharing it): the handler takes
# its own back once the program has exec'd, while the program keeps 1000.
# The block waits for the test's release (trap USR1): the handler's value
# is read while it certainly runs, until it is the handler's own again.
with Server("--timeout", "60") as s:
    mine = open("/proc/self/oom_score_adj").read().strip()
    c = open_chat(s, {"model": "codellm", "messages": [{"role": "user", "content": block(
        "bash", "cat /proc/self/oom_score_adj\ntrap 'exit 0' USR1\nsleep 60." + U + " &\nwait")}]})
    blk = catching(s)
    pid = handler_pid(s)
    during = None
    deadline = time.time() + 20
    while blk and time.time() < deadline:
        try:
            with open("/proc/%d/oom_score_adj" % pid) as f:
                during = f.read().strip()
        except (OSError, TypeError):
            during = None
        if during == mine:
            break
        time.sleep(0.05)
    release(blk)
    r = Resp(read_all(c, 60))
    t.ok(during == mine and content(r) == "1000\n",
         "native: while a block runs the handler's oom_score_adj is its own (%s), the block's 1000"
         % mine, "handler %r, block %r" % (during, content(r)))

t.done()
