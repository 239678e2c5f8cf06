#!/usr/bin/env python3
"""make bench: what confinement costs, as ratios against --sandbox off
measured in the same run (these machines are shared and noisy: compare
within a run, never against a fixed number).

For each configuration, N sequential requests through the real handler
behind systemd-socket-activate; reported: median and p90 latency, and
the ratio of medians to the off baseline. Then the same for a pipeline
of four blocks, the handler's peak RSS while relaying 64 MiB, and what
the debug surface's edge taps cost on that pipeline."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
from harness import Server, block, build_request, raw, Resp, descendants  # noqa: E402

N = int(os.environ.get("CODELLM_BENCH_N", "40"))


def measure(server, content, n=N):
    req = build_request("POST", "/v1/chat/completions",
                        {"model": "codellm", "messages": [{"role": "user", "content": content}]})
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = Resp(raw(server.port, req))
        times.append((time.perf_counter() - t0) * 1000)
        if r.status != 200:
            raise SystemExit("bench request failed: %r" % r.raw[:300])
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9) - 1]


def unshare_wrapper(tmp):
    path = os.path.join(tmp, "handler-in-empty-netns")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec unshare --net -- %s \"$@\"\n" % os.path.abspath(
            os.path.join(os.path.dirname(__file__), "..", "..", "codellm-handler")))
    os.chmod(path, 0o755)
    return path


def main():
    one = block("bash", "true")
    py = block("python", "print(1)")
    four = block("bash", "echo x") + block("bash", "cat") + block("bash", "cat") + block("bash", "cat")
    rows = []
    cases = [("bash true", one), ("python print", py), ("4-block bash pipeline", four)]
    wrap_dir = subprocess.check_output(["mktemp", "-d"]).decode().strip()
    wrapper = unshare_wrapper(wrap_dir)
    # (name, server options, the baseline its ratio is taken against):
    # the shared-netns handler starts through unshare(1), so its
    # baseline is --sandbox off started the same way
    configs = [("off", dict(sandbox="off"), "off"),
               ("native, own netns", dict(), "off"),
               ("off via unshare -n", dict(sandbox="off", handler=wrapper), "off via unshare -n"),
               ("native, shared netns", dict(handler=wrapper), "off via unshare -n")]
    results = {}
    for cname, kw, _ in configs:
        with Server("--timeout", "30", **kw) as s:
            for label, content in cases:
                measure(s, content, 3)  # warm caches
                results[(cname, label)] = measure(s, content)
    print("%-24s %-22s %10s %10s %8s  %s" % ("case", "config", "median ms", "p90 ms", "ratio", "against"))
    for label, _ in cases:
        for cname, _, basename in configs:
            med, p90 = results[(cname, label)]
            base = results[(basename, label)][0]
            print("%-24s %-22s %10.2f %10.2f %7.2fx  %s" % (label, cname, med, p90, med / base, basename))
    # handler memory while 64 MiB cross two edges (sandboxed)
    with Server("--timeout", "60") as s:
        content = block("python", "import sys\nb = b'x' * 65536\nfor _ in range(1024): sys.stdout.buffer.write(b)") + \
            block("bash", "cat") + block("bash", "wc -c")
        req = build_request("POST", "/v1/chat/completions",
                            {"model": "codellm", "messages": [{"role": "user", "content": content}]})
        import threading
        peak = [0]
        done = threading.Event()

        def watch():
            while not done.is_set():
                for p in descendants(s.proc.pid):
                    try:
                        with open("/proc/%d/status" % p) as f:
                            st = f.read()
                        if "codellm-handler" in open("/proc/%d/cmdline" % p).read():
                            for line in st.splitlines():
                                if line.startswith("VmHWM:"):
                                    peak[0] = max(peak[0], int(line.split()[1]))
                    except OSError:
                        pass
                time.sleep(0.02)
        th = threading.Thread(target=watch)
        th.start()
        t0 = time.perf_counter()
        r = Resp(raw(s.port, req))
        el = time.perf_counter() - t0
        done.set()
        th.join()
        out = (r.json or {}).get("choices", [{}])[0].get("message", {}).get("content", "").strip()
        print("64 MiB through 3 sandboxed blocks: %.2f s (%.0f MiB/s), output %s bytes, "
              "handler peak RSS %d KiB" % (el, 64 / el, out, peak[0]))
    # the debug tap: the same 64 MiB pipeline as a chat completion (edges
    # counted only) and through /debug/run-pipeline (each edge's first
    # --max-tap-bytes, 1 MiB, kept), alternating, on one --debug server
    with Server("--timeout", "60", "--debug") as s:
        chat = build_request("POST", "/v1/chat/completions",
                             {"model": "codellm", "messages": [{"role": "user", "content": content}]})
        dbg = build_request("POST", "/debug/run-pipeline", {"body": content},
                            headers={"Host": "127.0.0.1:%d" % s.port})
        t = {"chat": [], "debug": []}
        for _ in range(5):
            for name, req in (("chat", chat), ("debug", dbg)):
                t0 = time.perf_counter()
                r = Resp(raw(s.port, req))
                t[name].append((time.perf_counter() - t0) * 1000)
                if r.status != 200:
                    raise SystemExit("bench request failed: %r" % r.raw[:300])
        mc, md = statistics.median(t["chat"]), statistics.median(t["debug"])
        print("64 MiB, 3 blocks: chat completion %.0f ms, /debug/run-pipeline (2 edges tapped, "
              "1 MiB kept each) %.0f ms: %.2fx" % (mc, md, md / mc))
    subprocess.run(["rm", "-rf", wrap_dir])


if __name__ == "__main__":
    main()
