#!/usr/bin/env python3
"""make bench-phases: where a request's time goes, point by point.

make bench gives each arm's whole time; this shows where inside the
handler it goes. The handler and the two baselines of make bench (the
bare fork+exec handler and the minimal sandbox) are built with
-DCODELLM_PHASES into build/phases (sandbox/phase.h: timestamps at fixed
points of a request's life, kept in a shared page so the block's
processes and the baselines' children add theirs; an ordinary build has
none of it). Each arm is started like make bench's (systemd-socket-
activate --accept), the requests timed by the same C client, arms
interleaved request by request; each handler appends one line of
microseconds since its main() to its own file.

The table: for each point, the median time since main() in each arm,
then the median step from the point before it. The client's own
end-to-end p50 is printed above it (it includes the process start that
comes before main(), the same in every arm).

CODELLM_BENCH_N requests per arm and case (default 40). `--smoke` (in
make check) sends one request of each case to each arm and checks that
every arm marked the points it has, in the order of a request's life,
timing nothing."""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "blackbox"))
sys.path.insert(0, HERE)
from harness import Server, block  # noqa: E402
import bench  # noqa: E402

BUILD = os.path.join(HERE, "..", "..", "build", "phases")
SMOKE = sys.argv[1:] == ["--smoke"]
N = 1 if SMOKE else int(os.environ.get("CODELLM_BENCH_N", "40"))
WARM = 0 if SMOKE else 3
# the points of sandbox/phase.h, in its order
POINTS = ["main()", "request read", "parsed, slot taken", "run's cgroup", "kept /etc checked", "run's namespace + tmpfs",
          "run prepared", "block's clone", "block running", "block's root built",
          "program process", "program's execve", "first output read", "blocks reaped",
          "answer sent", "cleanup done"]


def read_marks(path):
    """The lines of one arm's file, each a list of microseconds (None:
    the point was not reached in that arm)."""
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[:1] != ["phases"] or len(parts) != 3 + len(POINTS):
                raise SystemExit("%s: not a phases line: %r" % (path, line))
            # the handler's page faults, minor and major, then the points
            rows.append([int(parts[1]) + int(parts[2])] +
                        [None if int(v) < 0 else int(v) for v in parts[3:]])
    return rows


# the points each arm has (the baselines have no run to prepare, no
# init and no program process apart from their child)
HAS = {"codellm": set(POINTS),
       "minimal": {"main()", "request read", "block's clone", "block running", "block's root built",
                   "program's execve", "first output read", "blocks reaped", "answer sent",
                   "cleanup done"},
       "bare": {"main()", "request read", "block's clone", "program's execve", "first output read",
                "blocks reaped", "answer sent", "cleanup done"}}


def check(case, rows, results):
    """--smoke: each arm's one line has its points and only those, in
    the order of a request's life."""
    for a, rs in rows.items():
        r = rs[0]
        got = {POINTS[i] for i in range(len(POINTS)) if r[1 + i] is not None}
        times = [t for t in r[1:] if t is not None]
        ok = got == HAS[a] and times == sorted(times)
        results.append(ok)
        print("%sok %d - %s, %s: %d points marked, in order%s" % (
            "" if ok else "not ", len(results), case, a, len(got),
            "" if ok else " (missing %s, extra %s, times %s)" % (
                sorted(HAS[a] - got), sorted(got - HAS[a]), r[1:])))


def table(case, rows, e2e):
    arms = list(rows)
    print("\n%s: %d requests per arm; the client's p50, end to end: %s" % (
        case, N, ", ".join("%s %.2f ms" % (a, e2e[a]) for a in arms)))
    print("%-26s" % "point (us since main())" + "".join("%16s" % a for a in arms))
    for i, name in enumerate(POINTS, 1):
        cells = []
        for a in arms:
            at = [r[i] for r in rows[a] if r[i] is not None]
            # the step: from the last point before this one the request reached
            steps = []
            for r in rows[a]:
                if r[i] is None:
                    continue
                prev = [r[k] for k in range(1, i) if r[k] is not None]
                if prev:
                    steps.append(r[i] - prev[-1])
            if not at:
                cells.append("%16s" % "-")
            else:
                cells.append("%16s" % ("%d (+%d)" % (statistics.median(at),
                                                    statistics.median(steps) if steps else 0)))
        print("%-26s" % name + "".join(cells))
    print("%-26s" % "handler's page faults" +
          "".join("%16d" % statistics.median(r[0] for r in rows[a]) for a in arms))


def main():
    bins = {a: os.path.join(BUILD, b) for a, b in
            (("codellm", "codellm-handler"), ("minimal", "sandbox-handler"), ("bare", "bare-handler"))}
    for b in bins.values():
        if not os.access(b, os.X_OK):
            raise SystemExit("build the -DCODELLM_PHASES binaries first: make bench-phases")
    tmp = tempfile.mkdtemp(prefix="codellm-phases-")
    home = os.path.join(tmp, "home")
    os.mkdir(home, 0o755)
    servers, files, results = {}, {}, []
    try:
        for a, b in bins.items():
            files[a] = os.path.join(tmp, a + ".txt")
            env = dict(bench.HANDLER_ENV if a == "codellm" else bench.block_env(home))
            env["CODELLM_PHASES_FILE"] = files[a]
            servers[a] = Server("--timeout", "120", "--max-concurrent", "8", "--header-timeout", "120",
                                handler=b, env=env)
            servers[a].start()
        cases = {"bash echo hi": (block("bash", "echo hi"), "hi"),
                 "python print('hi')": (block("python", 'print("hi")'), "hi")}
        for case, (content, want) in cases.items():
            for f in files.values():
                open(f, "w").close()
            lat = bench.clat(servers, bench.chat(content), want, N, WARM)
            rows = {a: read_marks(files[a])[-N:] for a in bins}
            short = [a for a, r in rows.items() if len(r) != N]
            if short:
                raise SystemExit("%s: %s wrote fewer than %d lines" % (case, short, N))
            if SMOKE:
                check(case, rows, results)
            else:
                table(case, rows, {a: statistics.median(v) for a, v in lat.items()})
    finally:
        for s in servers.values():
            s.stop()
        subprocess.run(["rm", "-rf", tmp] + ([bench.REQS["dir"]] if "dir" in bench.REQS else []))
    if SMOKE:
        print("1..%d" % len(results))
        return 0 if all(results) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
