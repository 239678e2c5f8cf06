#!/usr/bin/env python3
"""What a run used, and a memory bound that holds without a unit (issue 32).

Usage: each block's user and system CPU time and peak RSS (wait4's
rusage of the block), the run's totals, and with a run cgroup its
memory peak and OOM kills:
- plausible: a block that burns about 1 s of CPU reports about 1000 ms;
  one that touches 200 MiB reports at least 200 MiB (its RSS and the
  run's cgroup peak);
- in every face: chat completion, the stream's final chunk, the
  Responses API, MCP's structuredContent, the debug routes, and the
  journal record (CODELLM_CPU_USER_MS, ...).

The bound, under `make run`'s configuration (tests/make-run: a root
handler behind systemd-socket-activate, every option at its default):
on these hosts (cgroup v1 memory hierarchy, no systemd) each run gets a
cgroup of its own: 1 GiB written into one memfd, and 1 GiB through 64
memfds, end with the block killed (exit 137, an OOM kill counted), the
handler answers 200 and the next request runs; the cgroup is gone
after. A handler that can make no cgroup (not root here, or
--run-memory-max 0) says "memory: unbounded by cgroup" in /healthz and
--probe, and memfd_create fails there (ENOSYS): the same programs end
with a refused call, not with the host's memory.

Records go to the server's stderr as JSON lines where no journal
listens: the test runs itself in `unshare -m` with a tmpfs on /run."""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

if not reexec_in_mount_ns("CODELLM_USAGE_INNER"):
    print("ok 1 - usage # SKIP needs root and unshare(1)")
    print("1..1")
    sys.exit(1 if MUST_SANDBOX else 0)
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)

t = Tap()
MIB = 1 << 20
BURN = ("import time\nt = time.process_time()\nx = 0\n"
        "while time.process_time() - t < 1.0:\n    x += 1\nprint('burnt')")
TOUCH = ("b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
         "print(len(b) >> 20)")
# 1 GiB into memfds: one, or 64 of 16 MiB each; each step says how far it got
MEMFD_ONE = ("import os, sys\n"
             "try:\n    fd = os.memfd_create('big')\n"
             "except OSError as e:\n    print('memfd_create:', e.errno); sys.exit(3)\n"
             "chunk = b'x' * (1 << 20)\n"
             "for i in range(1024):\n    os.write(fd, chunk)\n"
             "print('wrote 1024 MiB')")
MEMFD_MANY = ("import os, sys\nfds = []\nchunk = b'x' * (1 << 20)\n"
              "for n in range(64):\n"
              "    try:\n        fd = os.memfd_create('m%d' % n)\n"
              "    except OSError as e:\n        print('memfd_create:', e.errno); sys.exit(3)\n"
              "    fds.append(fd)\n"
              "    for i in range(16):\n        os.write(fd, chunk)\n"
              "print('wrote', 16 * len(fds), 'MiB in', len(fds), 'memfds')")


def usage(j):
    return (j or {}).get("codellm", {}).get("usage") or {}


def cpu(u):
    return (u.get("cpu_user_ms") or 0) + (u.get("cpu_sys_ms") or 0)


def own_memcg():
    """This process's v1 memory cgroup directory, or None."""
    try:
        with open("/proc/self/cgroup") as f:
            for ln in f:
                _, ctl, path = ln.rstrip("\n").split(":", 2)
                if "memory" in ctl.split(","):
                    d = "/sys/fs/cgroup/memory" + (path if path != "/" else "")
                    return d if os.path.isdir(d) else None
    except OSError:
        pass
    return None


def run_cgroups():
    d = own_memcg()
    if not d or not os.path.isdir(os.path.join(d, "codellm")):
        return []
    return [n for n in os.listdir(os.path.join(d, "codellm")) if n.startswith("run-")]


# ---- usage in every face --------------------------------------------------------------
with Server("--debug") as s:
    r = s.run(block("python", BURN) + block("python", TOUCH))
    u = usage(r.json)
    br = (r.json or {}).get("codellm", {}).get("block_results") or [{}, {}]
    b0, b1 = br[0].get("usage") or {}, br[1].get("usage") or {}
    t.ok(r.status == 200 and 800 <= cpu(b0) <= 4000,
         "a block that burns 1 s of CPU reports about 1000 ms (user %s + sys %s)"
         % (b0.get("cpu_user_ms"), b0.get("cpu_sys_ms")), r)
    t.ok(b1.get("max_rss_kib", 0) >= 200 * 1024,
         "a block that touches 200 MiB reports a peak RSS of at least 200 MiB (%s KiB)"
         % b1.get("max_rss_kib"), b1)
    t.ok(u.get("cpu_user_ms") == b0.get("cpu_user_ms", 0) + b1.get("cpu_user_ms", 0)
         and u.get("cpu_sys_ms") == b0.get("cpu_sys_ms", 0) + b1.get("cpu_sys_ms", 0)
         and u.get("max_rss_kib") == max(b0.get("max_rss_kib", 0), b1.get("max_rss_kib", 0)),
         "the run's usage: the blocks' CPU times summed, the larger of their peaks", u)
    cg = u.get("memory_bound")
    t.ok(cg in ("cgroup v1", "cgroup v2") and (u.get("memory_peak_kib") or 0) >= 200 * 1024
         and u.get("oom_kills") == 0,
         "the run's cgroup (%s) saw a memory peak of at least 200 MiB (%s KiB), no OOM kill"
         % (cg, u.get("memory_peak_kib")), u)
    rid = r.json["id"] if r.json else "-"
    rec = (stderr_audit_records(s, rid) or [{}])[0]
    t.ok(rec.get("CODELLM_CPU_USER_MS") == str(u.get("cpu_user_ms"))
         and rec.get("CODELLM_CPU_SYS_MS") == str(u.get("cpu_sys_ms"))
         and rec.get("CODELLM_MAX_RSS_KIB") == str(u.get("max_rss_kib"))
         and rec.get("CODELLM_MEMORY_PEAK_KIB") == str(u.get("memory_peak_kib")),
         "the journal record carries the same usage (CODELLM_CPU_USER_MS, _SYS_MS, "
         "_MAX_RSS_KIB, _MEMORY_PEAK_KIB)", rec)

    # the stream's final chunk
    c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    c.sendall(build_request("POST", "/v1/chat/completions", {
        "model": "codellm", "stream": True,
        "messages": [{"role": "user", "content": block("python", BURN)}]}))
    body = read_all(c).decode("utf-8", "replace")
    c.close()
    finals = [json.loads(ln[6:]) for ln in body.split("\n")
              if ln.startswith("data: {") and '"codellm"' in ln]
    su = usage(finals[-1]) if finals else {}
    t.ok(800 <= cpu(su) <= 4000 and "max_rss_kib" in su,
         "streamed: the final chunk's codellm.usage (%s ms of CPU)" % cpu(su), finals[-1:] or body[-400:])

    # the Responses API
    rr = s.request("POST", "/v1/responses", {"model": "codellm", "input": block("python", BURN)})
    ru = usage(rr.json)
    t.ok(rr.status == 200 and 800 <= cpu(ru) <= 4000,
         "/v1/responses: codellm.usage (%s ms of CPU)" % cpu(ru), rr)

    # MCP
    rm = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_code", "arguments": {"language": "python", "code": BURN}}},
        headers={"Accept": "application/json, text/event-stream"})
    mu = (((rm.json or {}).get("result") or {}).get("structuredContent") or {}).get("usage") or {}
    t.ok(rm.status == 200 and 800 <= cpu(mu) <= 4000,
         "MCP tools/call: structuredContent.usage (%s ms of CPU)" % cpu(mu), rm)

    # the debug routes
    hdr = {"Host": "127.0.0.1:%d" % s.port}
    rb = s.request("POST", "/debug/run-block", {"body": block("python", TOUCH), "block": 0}, headers=hdr)
    rp = s.request("POST", "/debug/run-pipeline", {"body": block("python", BURN) + block("bash", "cat")},
                   headers=hdr)
    bu = (rb.json or {}).get("usage") or {}
    pu = (rp.json or {}).get("usage") or {}
    pbu = [(b or {}).get("usage") or {} for b in (rp.json or {}).get("blocks") or []]
    t.ok(rb.status == 200 and bu.get("max_rss_kib", 0) >= 200 * 1024,
         "/debug/run-block: the block's usage (%s KiB peak)" % bu.get("max_rss_kib"), rb)
    t.ok(rp.status == 200 and 800 <= cpu(pu) <= 4000 and len(pbu) == 2 and cpu(pbu[0]) >= 800,
         "/debug/run-pipeline: the run's and each block's usage", rp)

# ---- the bound, under make run's configuration -----------------------------------------
# exactly what tests/make-run starts (its options, nothing else)
with Server("--allowed-programs", "python,bash,node,ruby,php,perl") as s:
    h = s.request("GET", "/healthz")
    mem = ((h.json or {}).get("sandbox") or {}).get("memory") or ""
    t.ok(mem.startswith("memory: each run's cgroup (v"),
         "/healthz says how a run's memory is bounded: %r" % mem, h)
    for name, code in (("one memfd", MEMFD_ONE), ("64 memfds", MEMFD_MANY)):
        r = s.run(block("python", code))
        c = (r.json or {}).get("codellm") or {}
        b = (c.get("block_results") or [{}])[0]
        u = c.get("usage") or {}
        t.ok(r.status == 200 and b.get("exit_code") == 137 and b.get("signal") == 9
             and (u.get("oom_kills") or 0) >= 1 and "wrote" not in (content(r) or ""),
             "1 GiB into %s: the block is killed at the run's bound (exit 137, %s OOM kill(s), "
             "peak %s KiB), the handler answers 200" % (name, u.get("oom_kills"),
                                                         u.get("memory_peak_kib")), r)
    r = s.run(block("python", "print(6 * 7)"))
    t.ok(content(r) == "42\n", "the next request runs", r)
    s.idle()
    left = run_cgroups()
    t.ok(left == [], "no run's cgroup is left once the handlers are gone", left)

# ---- no cgroup: said plainly, and memfds refused ----------------------------------------
for label, mk in (("a non-root handler (no cgroup it may write)",
                   lambda: unprivileged_server(uid=4245)),
                  ("--run-memory-max 0", lambda: Server("--run-memory-max", "0"))):
    with mk() as s:
        h = s.request("GET", "/healthz")
        mem = ((h.json or {}).get("sandbox") or {}).get("memory") or ""
        t.ok(mem.startswith("memory: unbounded by cgroup") and "memfd_create refused" in mem,
             "%s: /healthz says %r" % (label, mem), h)
        for name, code in (("one memfd", MEMFD_ONE), ("64 memfds", MEMFD_MANY)):
            r = s.run(block("python", code))
            c = (r.json or {}).get("codellm") or {}
            t.ok(r.status == 200 and c.get("exit_code") == 3
                 and content(r) == "memfd_create: 38\n"
                 and (c.get("usage") or {}).get("memory_bound") == "none",
                 "%s: 1 GiB into %s is refused: memfd_create fails with ENOSYS" % (label, name), r)
        r = s.run(block("python", "print(6 * 7)"))
        t.ok(content(r) == "42\n", "%s: the next request runs" % label, r)

p = subprocess.run(["setpriv", "--reuid=4245", "--regid=4245", "--clear-groups", HANDLER, "--probe"],
                   capture_output=True, text=True, timeout=60)
t.ok("codellm: memory: unbounded by cgroup" in p.stderr,
     "--probe of a handler that can make no cgroup says plainly \"memory: unbounded by cgroup\"",
     p.stderr[-600:])
p = subprocess.run([HANDLER, "--probe"], capture_output=True, text=True, timeout=60)
t.ok("codellm: memory: each run's cgroup" in p.stderr,
     "--probe of a root handler here names the runs' cgroups", p.stderr[-600:])
p = subprocess.run([HANDLER, "--run-memory-max", "lots", "--probe"], capture_output=True, text=True,
                   timeout=60)
t.ok(p.returncode == 2 and "run-memory-max" in p.stderr,
     "--run-memory-max takes a size: \"lots\" is a configuration error (exit 2)", p.stderr[-300:])
t.done()
