#!/usr/bin/env python3
"""make bench: what codellm costs, as ratios against baselines measured in
the same run (issues 14 and 34; these machines are shared and noisy:
compare within a run, never against a fixed number).

Every arm is a handler started exactly like codellm-handler
(systemd-socket-activate --accept, one process per connection), timed
by one C client
(tests/bench/client.c: connect, send, read to the close; about 0.02 ms
of its own per request against a server that answers at once). The
client waits, outside the timed span, until the previous request's
handler has exited before it sends the next (a handler's cleanup and
audit come after the answer's end and would run on the CPU the next
arm's request needs; the c=8 slices count them).

The baselines hand their program the environment codellm gives a block
(SPEC §7: PATH /usr/local/bin:/usr/bin:/bin, LANG C.UTF-8,
PYTHONHASHSEED 0, PYTHONDONTWRITEBYTECODE 1, HOME an empty directory),
so both sides run the same program doing the same work: without LANG
bash skips loading the C.UTF-8 locale's files, without HOME python
looks the user up in /etc/passwd.

Arms:

  client only     tests/bench/bare-handler --constant: reads the request,
                  runs nothing, answers: the client, socket activation
                  and a process start, which every arm pays
  bare            the baseline (tests/bench/bare-handler.c): reads the
                  request, fork+execs the last block's code with bash -c
                  or python3 -c, answers a chat.completion
  bare, musl      the same handler linked as codellm's is (static, musl):
                  a bare handler without glibc's start-up, which asks the
                  CPU about its caches with some 80 CPUID instructions, a
                  trap each in a VM (c=1 only)
  sandbox         the same handler with a minimal hand-written sandbox
                  (tests/bench/min-sandbox.c: user, PID, mount, network,
                  IPC and UTS namespaces, a minimal read-only root,
                  Landlock, seccomp; nothing else): the second baseline
  native          codellm, default mode (a network namespace per block)
  off             codellm --sandbox off
  bare, netns     the baseline, started in a persistent empty network
                  namespace (nsenter into a holder process's namespace)
  native, shared  codellm started the same way: blocks share that
                  namespace instead of creating their own

c=1 latency: the arms interleaved request by request, in an order
shuffled each round (so no arm always follows the same one and pays
for the kernel work it leaves behind), medians (each arm's absolute
p50 and p90 are printed). c=8 throughput: 8 client
threads, one connection per request, short load slices, arms
interleaved slice by slice, the machine left to settle between slices
(a namespace's teardown runs in kernel workers after its last process
exits and would be charged to the next arm), median rate. Then 64 MiB
through three blocks (bash head, a python copy, bash wc -c) against
exactly those three programs with the same code as one shell pipeline
in the bare handler (bash -c CODE | python3 -c CODE | bash -c CODE),
the handler's peak RSS while relaying it, the same c=1 cases on the
environment minimal against the host's tree (one server, interleaved;
make envs builds it) and the debug tap's cost.

CODELLM_BENCH_N (requests per arm and case, default 100) and
CODELLM_BENCH_SLICES (load slices per arm, default 5) scale it down:
`tests/bench/bench.py --smoke` (in make check) runs each arm once and
checks every answer, timing nothing."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "blackbox"))
from harness import Server, block, build_request, raw, Resp, handler_peak_rss  # noqa: E402

SMOKE = sys.argv[1:] == ["--smoke"]
# 100: at 40 the python ratio moved 1.08 to 1.22 from run to run on a
# VM where a python start alone swings by a fifth (README, Performance)
N = 1 if SMOKE else int(os.environ.get("CODELLM_BENCH_N", "100"))
SLICES = 1 if SMOKE else int(os.environ.get("CODELLM_BENCH_SLICES", "5"))
SLICE_REQS = 2 if SMOKE else 12          # per client, 8 clients
SETTLE_S = 0 if SMOKE else 1.0
BARE = os.path.join(HERE, "bare-handler")
# the same bare handler linked as codellm's is (static, musl): glibc's
# start-up (about 80 CPUID instructions, each a trap in a VM) left out
BARE_MUSL = os.path.join(HERE, "bare-handler-musl")
MINSBX = os.path.join(HERE, "sandbox-handler")
CLIENT = os.path.join(HERE, "client")
HANDLER_ENV = {"PATH": "/usr/bin:/bin"}   # the codellm arms' own (their blocks get SPEC §7's)
ENVDIR = os.environ.get("CODELLM_TEST_ENVDIR", os.path.join(HERE, "..", "..", "build", "envs"))
TARGETS = {}                               # figure -> (op, bound) for the table


def block_env(home):
    """What codellm gives a block's program (SPEC §7; TMPDIR aside: the
    harness points it at the server's run directory), for the baselines
    to hand theirs."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def chat(content, model="codellm"):
    return build_request("POST", "/v1/chat/completions",
                         {"model": model, "messages": [{"role": "user", "content": content}]})


def content_of(r):
    try:
        return json.loads(r.body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None


REQS = {}                                  # request bytes -> the file the client sends


def reqfile(req):
    """A file holding the raw request: the client sends it as is."""
    if req not in REQS:
        path = os.path.join(REQS.setdefault("dir", tempfile.mkdtemp(prefix="codellm-bench-")),
                            "req-%d" % len(REQS))
        with open(path, "wb") as f:
            f.write(req)
        REQS[req] = path
    return REQS[req]


def client(*args):
    """Runs the C client; its stdout's lines, split."""
    r = subprocess.run([CLIENT] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("bench request failed: %s" % r.stderr[-800:])
    return [ln.split() for ln in r.stdout.splitlines()]


def clat(arms, req, want, n, warm):
    """{arm: [ms]}: n requests per arm (after warm ones), the arms
    interleaved request by request, each sent once the arm's previous
    handler has exited (waited for outside the timed span)."""
    lines = client("lat", "--n", n, "--warm", warm, "--req", reqfile(req), "--want", want,
                   *["%d:%d" % (s.port, s.proc.pid) for s in arms.values()])
    by_port = {int(f[0]): [float(x) for x in f[1:]] for f in lines}
    return {a: by_port[s.port] for a, s in arms.items()}


def once(server, req, want):
    """One request's time (ms), its answer checked."""
    return clat({"one": server}, req, want, 1, 0)["one"][0]


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


def latency(arms, cases):
    """{(arm, case): sorted ms}, arms interleaved request by request."""
    res = {}
    for c, (content, want) in cases.items():
        for a, v in clat(arms, chat(content), want, N, 1 if SMOKE else 3).items():
            res[(a, c)] = sorted(v)
    return res


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
                clat({tree: s}, reqs[tree], want, 1 if SMOKE else 3, 0)
            for _ in range(N):
                for tree, req in reqs.items():
                    res[(tree, c)].append(once(s, req, want))
    return {k: sorted(v) for k, v in res.items()}, mounts


def load_slice(port, req, want):
    """8 client threads, SLICE_REQS requests each, one connection per
    request: requests per second."""
    return float(client("load", "--clients", 8, "--reqs", SLICE_REQS, "--req", reqfile(req),
                        "--want", want, port)[0][0])


def throughput(arms, content, want):
    req = chat(content)
    rates = {a: [] for a in arms}
    for _ in range(SLICES):
        for a, s in arms.items():
            time.sleep(SETTLE_S)
            rates[a].append(load_slice(s.port, req, want))
    return {a: statistics.median(v) for a, v in rates.items()}


def shquote(code):
    return "'" + code.replace("'", "'\\''") + "'"


def row(figure, ours, base, unit, target=None, higher=False):
    ratio = ours / base if base else float("inf")
    met = ""
    if target is not None:
        ok = ratio >= target if higher else ratio <= target
        met = "%s %s %.2f: %s" % ("target", ">=" if higher else "<=", target, "met" if ok else "NOT met")
    print("%-44s %10.2f %10.2f %-6s %6.2fx  %s" % (figure, ours, base, unit, ratio, met))


def main():
    for b in (BARE, BARE_MUSL, MINSBX, CLIENT):
        if not os.access(b, os.X_OK):
            raise SystemExit("build the baselines and the client first: make %s" %
                             os.path.relpath(b, os.path.join(HERE, "..", "..")))
    tmp = subprocess.check_output(["mktemp", "-d"]).decode().strip()
    # the persistent empty network namespace (loopback down), held by a
    # process of this run: what the holder unit is under systemd
    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "100000"])
    handler = os.path.abspath(os.path.join(HERE, "..", "..", "codellm-handler"))
    home = os.path.join(tmp, "home")          # the baselines' HOME: empty, as a block's /work
    os.mkdir(home, 0o755)
    base = block_env(home)
    arms_def = [("client only", dict(handler=BARE, env=base, extra=("--constant", "hi"))),
                ("bare", dict(handler=BARE, env=base)),
                ("bare, musl", dict(handler=BARE_MUSL, env=base)),
                ("sandbox", dict(handler=MINSBX, env=base)),
                ("native", dict()),
                ("off", dict(sandbox="off")),
                ("bare, netns", dict(handler=wrapper(tmp, "bare-netns", BARE, holder.pid), env=base)),
                ("native, shared", dict(handler=wrapper(tmp, "codellm-netns", handler, holder.pid)))]
    share = {"native, shared": ("--share-netns",)}
    servers = {}
    try:
        for name, kw in arms_def:
            extra = kw.pop("extra", ())
            kw.setdefault("env", HANDLER_ENV)      # the codellm arms
            servers[name] = Server("--timeout", "120", "--max-concurrent", "8", "--header-timeout", "120",
                                   *share.get(name, ()), *extra, **kw)
            servers[name].start()
        cases = {"bash": (block("bash", "echo hi"), "hi"),
                 "python": (block("python", "print(\"hi\")"), "hi")}
        lat = latency({a: s for a, s in servers.items()}, cases)
        nets = {a: net_of(servers[a]) for a in ("native", "native, shared")}
        if nets != {"native": "own", "native, shared": "shared"}:
            raise SystemExit("the arms do not run as named: sandbox.net %r" % nets)
        # the baselines' programs see what a block's does (HOME aside:
        # a block's is /work); checked on every run, not only the smoke
        show = block("bash", 'printf "%s|" "$PATH" "$LANG" "$PYTHONHASHSEED" '
                             '"$PYTHONDONTWRITEBYTECODE"; ls -A "$HOME" | wc -l')
        seen = {a: content_of(Resp(raw(servers[a].port, chat(show), timeout=60)))
                for a in ("native", "bare", "bare, musl", "sandbox", "bare, netns")}
        if len(set(seen.values())) != 1 or None in seen.values():
            raise SystemExit("the baselines' programs do not see a block's environment: %r" % seen)
        c8 = {}
        for c in ("bash", "python"):
            c8[c] = throughput({a: servers[a] for a in ("bare", "sandbox", "native", "bare, netns",
                                                        "native, shared")}, *cases[c])
        # 64 MiB: three blocks against exactly the same three programs
        # with the same code as one shell pipeline (in the bare handler
        # and in the minimal sandbox), interleaved
        copy = ("import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\n"
                "while True:\n    b = r.read(65536)\n    if not b: break\n    w.write(b)")
        codes = ("head -c 64M /dev/zero", copy, "wc -c")
        three = block("bash", codes[0]) + block("python", codes[1]) + block("bash", codes[2])
        shell = block("bash", "bash -c %s | python3 -c %s | bash -c %s" % tuple(map(shquote, codes)))
        want = str(64 << 20)
        big = {"native": [], "bare": [], "sandbox": []}
        # 11 rounds: a shell pipeline of 64 KiB pipes is bimodal here
        # (its three processes on two CPUs), each mode about as often
        for _ in range(1 if SMOKE else 11):
            big["bare"].append(once(servers["bare"], chat(shell), want))
            big["sandbox"].append(once(servers["sandbox"], chat(shell), want))
            big["native"].append(once(servers["native"], chat(three), want))
        # a trivial run (the handler's memory does not grow with the
        # sleep: it lets the watcher read the handler during the run too,
        # not only while it waits for the request)
        rss, _, r = handler_peak_rss(servers["native"], chat(block("bash", "sleep 0.3")))
        if r.status != 200:
            raise SystemExit("trivial run failed: %r" % r.raw[:300])
        rss_big, _, r = handler_peak_rss(servers["native"], chat(three))
        if (content_of(r) or "").strip() != want:
            raise SystemExit("64 MiB run failed: %r" % r.raw[:300])
        # an environment's tree against the host's, on one server
        envlat, mounts = env_cost(cases)
    finally:
        for s in servers.values():
            s.stop()
        holder.kill()
        holder.wait()
        subprocess.run(["rm", "-rf", tmp] + ([REQS["dir"]] if "dir" in REQS else []))
        REQS.clear()
    if SMOKE:
        print("ok 1 - every arm answered every case correctly (client only, bare, bare with musl, "
              "sandbox, native, off, bare in a netns, native sharing it), timed by the C client")
        print("ok 2 - native blocks ran in their own network namespace, "
              "native-shared blocks in the holder's")
        print("%sok 3 - the RSS watcher saw the handler (peak %d KiB, %d KiB through 64 MiB)"
              % ("" if rss > 0 and rss_big > 0 else "not ", rss, rss_big))
        print("ok 4 - a block on the environment minimal answered every case")
        print("%sok 5 - a block on an environment has no more mounts than one on the host's tree "
              "(%s and %s: the top directories bound whole, the /etc allowlist as the tree has it)"
              % ("" if int(mounts["env"]) <= int(mounts["host"]) else "not ", mounts["env"], mounts["host"]))
        print("ok 6 - the 64 MiB pipeline answered the same count as three blocks, and as one "
              "shell pipeline in the bare and the minimal sandbox handler")
        print("ok 7 - the baselines' programs saw the environment a block sees (%s)"
              % seen["native"].strip())
        print("1..7")
        return 0
    report(lat, c8, big, envlat, mounts, rss, rss_big)
    debug_tap(three)
    return 0


def report(lat, c8, big, envlat, mounts, rss, rss_big):
    """The table: each arm's absolute p50 and p90, then the ratios."""
    med = {k: statistics.median(v) for k, v in lat.items()}
    pct = {k: v[max(0, int(len(v) * 0.9) - 1)] for k, v in lat.items()}
    print("make bench: %s, %d CPUs, N=%d per arm and case (c=1, interleaved), %d load slices of 8x%d"
          % (os.uname().nodename, os.cpu_count(), N, SLICES, SLICE_REQS))
    print("c=1, each arm's own time (ms, the C client's span: connect, send, read to the close)")
    print("%-16s %10s %10s %10s %10s" % ("arm", "bash p50", "bash p90", "python p50", "python p90"))
    for a in ("client only", "bare", "bare, musl", "sandbox", "native", "off", "bare, netns",
              "native, shared"):
        print("%-16s %10.2f %10.2f %10.2f %10.2f" % (a, med[(a, "bash")], pct[(a, "bash")],
                                                    med[(a, "python")], pct[(a, "python")]))
    print("(client only: the client, socket activation and a process start, paid by every arm;"
          " bare, musl: the bare handler linked as codellm's is, without glibc's start-up)")
    print("%-44s %10s %10s %-6s %7s  %s" % ("figure", "codellm", "baseline", "unit", "ratio", ""))
    row("bash echo hi, c=1 p50, own netns vs bare", med[("native", "bash")], med[("bare", "bash")], "ms",
        1.6)
    row("bash echo hi, c=1 p50, vs minimal sandbox", med[("native", "bash")], med[("sandbox", "bash")],
        "ms", 1.25)
    row("bash echo hi, c=1 p50, vs bare linked with musl", med[("native", "bash")],
        med[("bare, musl", "bash")], "ms")
    row("bash echo hi, c=1 p50, shared netns", med[("native, shared", "bash")],
        med[("bare, netns", "bash")], "ms", 1.3)
    row("bash echo hi, c=1 p50, --sandbox off", med[("off", "bash")], med[("bare", "bash")], "ms", 1.15)
    row("python print('hi'), c=1 p50, own netns", med[("native", "python")], med[("bare", "python")], "ms",
        1.1)
    row("python print('hi'), c=1 p50, vs minimal sandbox", med[("native", "python")],
        med[("sandbox", "python")], "ms")
    row("python print('hi'), c=1 p50, vs bare with musl", med[("native", "python")],
        med[("bare, musl", "python")], "ms")
    row("python print('hi'), c=1 p50, shared netns", med[("native, shared", "python")],
        med[("bare, netns", "python")], "ms", 1.1)
    row("python print('hi'), c=1 p50, --sandbox off", med[("off", "python")], med[("bare", "python")], "ms")
    for c in ("bash", "python"):
        row("%s, c=8 throughput, own netns" % c, c8[c]["native"], c8[c]["bare"], "req/s", 0.55,
            higher=True)
        row("%s, c=8 throughput, vs minimal sandbox" % c, c8[c]["native"], c8[c]["sandbox"], "req/s")
        row("%s, c=8 throughput, shared netns" % c, c8[c]["native, shared"], c8[c]["bare, netns"],
            "req/s")
    row("64 MiB bash|python|wc, 3 blocks vs 1 shell", statistics.median(big["native"]),
        statistics.median(big["bare"]), "ms", 1.2)
    row("64 MiB, minimal sandbox's shell vs bare's", statistics.median(big["sandbox"]),
        statistics.median(big["bare"]), "ms")
    row("64 MiB, 3 blocks vs 1 shell, best of 11", min(big["native"]), min(big["bare"]), "ms")
    emed = {k: statistics.median(v) for k, v in envlat.items()}
    row("bash echo hi, c=1 p50, env minimal vs host", emed[("env", "bash")], emed[("host", "bash")], "ms", 1.1)
    row("python print('hi'), c=1 p50, env minimal vs host", emed[("env", "python")], emed[("host", "python")],
        "ms", 1.1)
    print("%-44s %10s %10s %-6s" % ("mounts a block sees, env minimal vs host", mounts["env"], mounts["host"], ""))
    print("%-44s %10d %10s %-6s" % ("handler peak RSS, trivial run", rss, "", "KiB"))
    print("%-44s %10d %10s %-6s" % ("handler peak RSS, 64 MiB through 3 blocks", rss_big, "", "KiB"))


def debug_tap(content):
    """The same 64 MiB pipeline as a chat completion (edges counted only)
    and through /debug/run-pipeline (each edge's first --max-tap-bytes,
    1 MiB, kept), alternating, on one --debug server."""
    with Server("--timeout", "60", "--debug") as s:
        dbg = build_request("POST", "/debug/run-pipeline", {"body": content},
                            headers={"Host": "127.0.0.1:%d" % s.port})
        t = {"chat": [], "debug": []}
        for _ in range(5):
            t["chat"].append(once(s, chat(content), str(64 << 20)))
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
