#!/usr/bin/env python3
"""make bench: what codellm costs, as ratios against a bare handler
measured in the same run (issue 14; these machines are shared and noisy:
compare within a run, never against a fixed number).

The baseline (tests/bench/bare-handler.c) is started exactly like
codellm-handler (systemd-socket-activate --accept, one process per
connection): it reads the request, fork+execs the last block's code with
bash -c or python3 -c, and answers a chat.completion. Arms:

  bare            the baseline
  native          codellm, default mode (a network namespace per block)
  off             codellm --sandbox off
  bare, netns     the baseline, started in a persistent empty network
                  namespace (nsenter into a holder process's namespace)
  native, shared  codellm started the same way: blocks share that
                  namespace instead of creating their own

c=1 latency: the arms interleaved request by request, medians; each
request is sent once the previous connection's handler has exited (its
cleanup and audit come after the answer's end, and would otherwise run
on the CPU the next arm's request needs; the c=8 slices count them). c=8
throughput: short load slices, arms interleaved slice by slice, the
machine left to settle between slices (a namespace's teardown runs in
kernel workers after its last process exits and would be charged to the
next arm), median rate. Then 64 MiB through three blocks against the
same three commands as one shell pipeline in the bare handler, the
handler's peak RSS while relaying it, the same c=1 cases on the
environment minimal against the host's tree (one server, interleaved;
make envs builds it) and the debug tap's cost.

CODELLM_BENCH_N (requests per arm and case, default 40) and
CODELLM_BENCH_SLICES (load slices per arm, default 5) scale it down:
`tests/bench/bench.py --smoke` (in make check) runs each arm once and
checks every answer, timing nothing."""
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "blackbox"))
from harness import Server, block, build_request, raw, read_all, Resp, descendants  # noqa: E402

SMOKE = sys.argv[1:] == ["--smoke"]
N = 1 if SMOKE else int(os.environ.get("CODELLM_BENCH_N", "40"))
SLICES = 1 if SMOKE else int(os.environ.get("CODELLM_BENCH_SLICES", "5"))
SLICE_REQS = 2 if SMOKE else 12          # per client, 8 clients
SETTLE_S = 0 if SMOKE else 1.0
BARE = os.path.join(HERE, "bare-handler")
ENVDIR = os.environ.get("CODELLM_TEST_ENVDIR", os.path.join(HERE, "..", "..", "build", "envs"))
TARGETS = {}                               # figure -> (op, bound) for the table


def chat(content, model="codellm"):
    return build_request("POST", "/v1/chat/completions",
                         {"model": model, "messages": [{"role": "user", "content": content}]})


def content_of(r):
    try:
        return json.loads(r.body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def once(port, req, want):
    t0 = time.perf_counter()
    r = Resp(raw(port, req, timeout=120))
    ms = (time.perf_counter() - t0) * 1000
    got = content_of(r)
    if r.status != 200 or (want is not None and (got or "").strip() != want):
        raise SystemExit("bench request failed on port %d: %r" % (port, r.raw[:400]))
    return ms


def net_of(server):
    """The network a block ran in (codellm.sandbox.net)."""
    r = Resp(raw(server.port, chat(block("bash", "true")), timeout=60))
    try:
        return json.loads(r.body)["codellm"]["sandbox"]["net"]
    except (ValueError, KeyError, TypeError):
        return None


def wrapper(tmp, name, target, holder_pid):
    """A script that runs target inside the holder's network namespace."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec nsenter --net=/proc/%d/ns/net -- %s \"$@\"\n" % (holder_pid, target))
    os.chmod(path, 0o755)
    return path


def quiet(server, timeout=5.0):
    """Until socket activation has no handler left running (and a few ms
    more): what the last request left behind is not charged to the next."""
    pid = server.proc.pid
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                if not f.read().split():
                    break
        except OSError:
            break
        time.sleep(0.002)
    time.sleep(0.005)


def latency(arms, cases):
    """{(arm, case): sorted ms}, arms interleaved request by request."""
    res = {(a, c): [] for a in arms for c in cases}
    for c, (content, want) in cases.items():
        req = chat(content)
        for a, s in arms.items():
            for _ in range(1 if SMOKE else 3):
                once(s.port, req, want)            # warm caches
        for _ in range(N):
            for a, s in arms.items():
                quiet(s)
                res[(a, c)].append(once(s.port, req, want))
    return {k: sorted(v) for k, v in res.items()}


def env_cost(cases):
    """The same code on the host's tree (model codellm) and on the
    environment minimal (make envs), one server, interleaved: {(tree,
    case): sorted ms}, and the mounts a block of each sees."""
    res = {}
    mounts = {}
    count = block("bash", "wc -l < /proc/self/mountinfo")
    with Server("--timeout", "120", "--header-timeout", "120", "--environments", ENVDIR) as s:
        for tree, model in (("host", "codellm"), ("env", "minimal")):
            r = Resp(raw(s.port, chat(count, model), timeout=60))
            mounts[tree] = (content_of(r) or "").strip()
            if r.status != 200 or not mounts[tree].isdigit():
                raise SystemExit("environment arm (%s): %r" % (model, r.raw[:400]))
        for c, (content, want) in cases.items():
            reqs = {"host": chat(content), "env": chat(content, "minimal")}
            for tree in reqs:
                res[(tree, c)] = []
                for _ in range(1 if SMOKE else 3):
                    once(s.port, reqs[tree], want)
            for _ in range(N):
                for tree, req in reqs.items():
                    quiet(s)
                    res[(tree, c)].append(once(s.port, req, want))
    return {k: sorted(v) for k, v in res.items()}, mounts


def load_slice(port, req, want):
    """8 clients, SLICE_REQS requests each: requests per second."""
    errors = []

    def client():
        try:
            for _ in range(SLICE_REQS):
                once(port, req, want)
        except SystemExit as e:
            errors.append(e)
    th = [threading.Thread(target=client) for _ in range(8)]
    t0 = time.perf_counter()
    for x in th:
        x.start()
    for x in th:
        x.join()
    el = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return 8 * SLICE_REQS / el


def throughput(arms, content, want):
    req = chat(content)
    rates = {a: [] for a in arms}
    for _ in range(SLICES):
        for a, s in arms.items():
            time.sleep(SETTLE_S)
            rates[a].append(load_slice(s.port, req, want))
    return {a: statistics.median(v) for a, v in rates.items()}


def peak_rss(server, req):
    """The handler's peak RSS (KiB) while serving req, and the time. The
    connection is opened first and req sent only once the watcher has read
    the handler it started (socket activation forks it at the accept, and
    it waits for the request: servers here have --header-timeout 120), so
    the watcher sees the handler however briefly the run lasts and however
    busy the machine; it keeps reading it until the answer is in."""
    peak, seen, done = [0], threading.Event(), threading.Event()

    def watch():
        while not done.is_set():
            for p in descendants(server.proc.pid):
                try:
                    if "codellm-handler" not in open("/proc/%d/cmdline" % p).read():
                        continue
                    with open("/proc/%d/status" % p) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak[0] = max(peak[0], int(line.split()[1]))
                                seen.set()
                except OSError:
                    pass
            time.sleep(0.005)
    th = threading.Thread(target=watch)
    c = socket.create_connection(("127.0.0.1", server.port), timeout=120)
    try:
        th.start()
        seen.wait(60)           # only a watcher that cannot find it waits this out
        t0 = time.perf_counter()
        c.sendall(req)
        r = Resp(read_all(c, 120))
        el = time.perf_counter() - t0
    finally:
        c.close()
        done.set()
        th.join()
    return peak[0], el, r


def row(figure, ours, base, unit, target=None, higher=False):
    ratio = ours / base if base else float("inf")
    met = ""
    if target is not None:
        ok = ratio >= target if higher else ratio <= target
        met = "%s %s %.2f: %s" % ("target", ">=" if higher else "<=", target, "met" if ok else "NOT met")
    print("%-44s %10.2f %10.2f %-6s %6.2fx  %s" % (figure, ours, base, unit, ratio, met))


def main():
    if not os.access(BARE, os.X_OK):
        raise SystemExit("build the baseline first: make tests/bench/bare-handler")
    tmp = subprocess.check_output(["mktemp", "-d"]).decode().strip()
    # the persistent empty network namespace (loopback down), held by a
    # process of this run: what the holder unit is under systemd
    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "100000"])
    handler = os.path.abspath(os.path.join(HERE, "..", "..", "codellm-handler"))
    arms_def = [("bare", dict(handler=BARE)),
                ("native", dict()),
                ("off", dict(sandbox="off")),
                ("bare, netns", dict(handler=wrapper(tmp, "bare-netns", BARE, holder.pid))),
                ("native, shared", dict(handler=wrapper(tmp, "codellm-netns", handler, holder.pid)))]
    share = {"native, shared": ("--share-netns",)}
    servers = {}
    try:
        for name, kw in arms_def:
            servers[name] = Server("--timeout", "120", "--max-concurrent", "8", "--header-timeout", "120",
                                   *share.get(name, ()), **kw)
            servers[name].start()
        cases = {"bash": (block("bash", "echo hi"), "hi"),
                 "python": (block("python", "print(1)"), "1")}
        lat = latency(servers, cases)
        nets = {a: net_of(servers[a]) for a in ("native", "native, shared")}
        if nets != {"native": "own", "native, shared": "shared"}:
            raise SystemExit("the arms do not run as named: sandbox.net %r" % nets)
        med = {k: statistics.median(v) for k, v in lat.items()}
        c8 = {}
        for c in ("bash", "python"):
            c8[c] = throughput({a: servers[a] for a in ("bare", "native", "bare, netns", "native, shared")},
                               *cases[c])
        # 64 MiB: three blocks against the same three commands as one
        # shell pipeline, interleaved
        copy = ("import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\n"
                "while True:\n    b = r.read(65536)\n    if not b: break\n    w.write(b)")
        three = block("bash", "head -c 64M /dev/zero") + block("python", copy) + block("bash", "wc -c")
        shell = block("bash", "head -c 64M /dev/zero | python3 -c '%s' | wc -c" % copy)
        want = str(64 << 20)
        big = {"native": [], "bare": []}
        for _ in range(1 if SMOKE else 5):
            big["bare"].append(once(servers["bare"].port, chat(shell), want))
            big["native"].append(once(servers["native"].port, chat(three), want))
        # a trivial run (the handler's memory does not grow with the
        # sleep: it lets the watcher read the handler during the run too,
        # not only while it waits for the request)
        rss, _, r = peak_rss(servers["native"], chat(block("bash", "sleep 0.3")))
        if r.status != 200:
            raise SystemExit("trivial run failed: %r" % r.raw[:300])
        rss_big, _, r = peak_rss(servers["native"], chat(three))
        if (content_of(r) or "").strip() != want:
            raise SystemExit("64 MiB run failed: %r" % r.raw[:300])
        # an environment's tree against the host's, on one server
        envlat, mounts = env_cost(cases)
    finally:
        for s in servers.values():
            s.stop()
        holder.kill()
        holder.wait()
        subprocess.run(["rm", "-rf", tmp])
    if SMOKE:
        print("ok 1 - every arm answered every case correctly (bare, native, off, "
              "bare in a netns, native sharing it)")
        print("ok 2 - native blocks ran in their own network namespace, "
              "native-shared blocks in the holder's")
        print("%sok 3 - the RSS watcher saw the handler (peak %d KiB, %d KiB through 64 MiB)"
              % ("" if rss > 0 and rss_big > 0 else "not ", rss, rss_big))
        print("ok 4 - a block on the environment minimal answered every case")
        print("%sok 5 - a block on an environment has no more mounts than one on the host's tree "
              "(%s and %s: the top directories bound whole, the /etc allowlist as the tree has it)"
              % ("" if int(mounts["env"]) <= int(mounts["host"]) else "not ", mounts["env"], mounts["host"]))
        print("1..5")
        return 0

    print("make bench: %s, %d CPUs, N=%d per arm and case (c=1, interleaved), %d load slices of 8x%d"
          % (os.uname().nodename, os.cpu_count(), N, SLICES, SLICE_REQS))
    print("%-44s %10s %10s %-6s %7s  %s" % ("figure", "codellm", "baseline", "unit", "ratio", ""))
    row("bash echo hi, c=1 p50, own netns", med[("native", "bash")], med[("bare", "bash")], "ms", 1.6)
    row("bash echo hi, c=1 p50, shared netns", med[("native, shared", "bash")],
        med[("bare, netns", "bash")], "ms", 1.3)
    row("bash echo hi, c=1 p50, --sandbox off", med[("off", "bash")], med[("bare", "bash")], "ms", 1.15)
    row("python print(1), c=1 p50, own netns", med[("native", "python")], med[("bare", "python")], "ms", 1.1)
    row("python print(1), c=1 p50, shared netns", med[("native, shared", "python")],
        med[("bare, netns", "python")], "ms", 1.1)
    row("python print(1), c=1 p50, --sandbox off", med[("off", "python")], med[("bare", "python")], "ms")
    row("bash, c=8 throughput, own netns", c8["bash"]["native"], c8["bash"]["bare"], "req/s")
    row("bash, c=8 throughput, shared netns", c8["bash"]["native, shared"], c8["bash"]["bare, netns"], "req/s")
    row("python, c=8 throughput, own netns", c8["python"]["native"], c8["python"]["bare"], "req/s",
        0.55, higher=True)
    row("python, c=8 throughput, shared netns", c8["python"]["native, shared"],
        c8["python"]["bare, netns"], "req/s", 0.7, higher=True)
    row("64 MiB head | python copy | wc, 3 blocks", statistics.median(big["native"]),
        statistics.median(big["bare"]), "ms", 1.2)
    emed = {k: statistics.median(v) for k, v in envlat.items()}
    row("bash echo hi, c=1 p50, env minimal vs host", emed[("env", "bash")], emed[("host", "bash")], "ms", 1.1)
    row("python print(1), c=1 p50, env minimal vs host", emed[("env", "python")], emed[("host", "python")],
        "ms", 1.1)
    print("%-44s %10s %10s %-6s" % ("mounts a block sees, env minimal vs host", mounts["env"], mounts["host"], ""))
    print("%-44s %10d %10s %-6s" % ("handler peak RSS, trivial run", rss, "", "KiB"))
    print("%-44s %10d %10s %-6s" % ("handler peak RSS, 64 MiB through 3 blocks", rss_big, "", "KiB"))
    print("p90 (ms): " + ", ".join("%s/%s %.1f" % (a, c, v[int(len(v) * 0.9) - 1])
                                  for (a, c), v in sorted(lat.items())))
    debug_tap(three)
    return 0


def debug_tap(content):
    """The same 64 MiB pipeline as a chat completion (edges counted only)
    and through /debug/run-pipeline (each edge's first --max-tap-bytes,
    1 MiB, kept), alternating, on one --debug server."""
    with Server("--timeout", "60", "--debug") as s:
        dbg = build_request("POST", "/debug/run-pipeline", {"body": content},
                            headers={"Host": "127.0.0.1:%d" % s.port})
        t = {"chat": [], "debug": []}
        for _ in range(5):
            t["chat"].append(once(s.port, chat(content), str(64 << 20)))
            t0 = time.perf_counter()
            r = Resp(raw(s.port, dbg, timeout=120))
            t["debug"].append((time.perf_counter() - t0) * 1000)
            if r.status != 200:
                raise SystemExit("bench request failed: %r" % r.raw[:300])
        mc, md = statistics.median(t["chat"]), statistics.median(t["debug"])
        print("64 MiB, 3 blocks: chat completion %.0f ms, /debug/run-pipeline (2 edges tapped, "
              "1 MiB kept each) %.0f ms: %.2fx" % (mc, md, md / mc))


if __name__ == "__main__":
    sys.exit(main())
