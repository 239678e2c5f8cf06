#!/usr/bin/env python3
"""make bench-units: security per millisecond under a real systemd (issue
5 point 7). In one boot (tests/systemd/container.py), candidate
per-connection units run the same installed handler side by side; for
each: serial requests/s of a cheap authenticated route (/v1/models:
mostly systemd's own per-instance setup) and of a python run, the ratio
to a minimal Accept=yes unit measured in the same boot, and the unit's
exposure from systemd-analyze security. The units are deployed side by
side and measured interleaved: in each round every unit serves one
short serial slice of each kind (the order rotated per round, each slice
after the previous unit's instances are gone); the rates are medians
over the rounds and each ratio is the median of the per-round ratios to
the minimal unit. Prints the table that README.md and the closing note
quote."""
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "blackbox"))
from container import Container, Unavailable  # noqa: E402
from harness import KEY, build_request, block  # noqa: E402

ROUNDS = int(os.environ.get("CODELLM_BENCH_ROUNDS", "9"))
BIN = "/usr/local/bin/codellm-handler"
ARGS = "--allowed-programs python,bash,node,ruby,php,perl --runtime-dir /run/codellm"


def shipped_service():
    with open(os.path.join(HERE, "..", "..", "units", "codellm@.service")) as f:
        return f.read().replace("@BINDIR@", "/usr/local/bin")


def without(text, keys):
    """The unit text without the directives named (continuation lines
    included)."""
    out, skip = [], False
    for line in text.splitlines():
        if skip:
            skip = line.rstrip().endswith("\\")
            continue
        m = re.match(r"^([A-Za-z]+)=", line)
        if m and m.group(1) in keys:
            skip = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return "\n".join(out) + "\n"


# Inside systemd-nspawn /proc/sys is mounted read-only, and a handler
# without a mount namespace of systemd's making cannot set its runs'
# per-user and IPC limits there (503 naming ucounts or ipcns; on a real
# host /proc/sys is writable). ProtectControlGroups= is the least
# directive after which systemd's namespace gives a writable one, so the
# minimal unit carries it, and so does every variant below.
MINIMAL = ("[Service]\nExecStart=%s %s --api-key-file /etc/codellm/api-key\n"
           "StandardInput=socket\nStandardOutput=socket\nStandardError=journal\n"
           "ProtectControlGroups=yes\n" % (BIN, ARGS))
SYSCALL = {"SystemCallFilter", "SystemCallErrorNumber", "SystemCallArchitectures"}
MOUNTS = {"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateMounts", "PrivateDevices",
          "ProtectKernelModules", "ProtectKernelLogs", "ProtectClock", "ReadWritePaths"}


def variants():
    shipped = shipped_service()
    return [
        # root: slot files of its own (a root unit's would lock the others out)
        ("minimal", "bu-min", MINIMAL.replace("/run/codellm", "/run/codellm-root")),
        ("identity+network (User, LoadCredential, PrivateNetwork)", "bu-idn",
         MINIMAL.replace("--api-key-file /etc/codellm/api-key", "") +
         "User=codellm\nGroup=codellm\nLoadCredential=api-key:/etc/codellm/api-key\n"
         "SetCredential=api-key:\\n\nPrivateNetwork=yes\nReadWritePaths=-/run/codellm\n"),
        ("shipped without the mount-namespace family", "bu-nomnt", without(shipped, MOUNTS)),
        ("shipped without SystemCallFilter", "bu-nosc", without(shipped, SYSCALL)),
        ("shipped without the namespace holder (a network namespace per connection)",
         "bu-nojoin", without(shipped, {"JoinsNamespaceOf", "Requires", "After"})),
        ("shipped (units/codellm@.service)", "bu-ship", shipped),
        ("shipped, blocks in its namespace (--share-netns)", "bu-share",
         shipped.replace("--runtime-dir /run/codellm", "--runtime-dir /run/codellm --share-netns")),
    ]


def timed(c, port, data, k):
    """Seconds per request over k serial requests after one untimed one
    (which absorbs what the previous slice left to systemd), and the
    statuses of all of them."""
    statuses = [c.http(port, data)[0]]
    t0 = time.monotonic()
    for _ in range(k):
        statuses.append(c.http(port, data)[0])
    return (time.monotonic() - t0) / k, statuses


def main():
    models = build_request("GET", "/v1/models", key=KEY)
    pyrun = build_request("POST", "/v1/chat/completions",
                          {"model": "codellm", "messages": [{"role": "user", "content": block("python", "print(1)")}]},
                          key=KEY)
    units = variants()
    per = {name: {"m": [], "p": [], "st": set()} for _, name, _ in units}
    scores = {}
    try:
        with Container() as c:
            c.install_codellm(key=KEY)
            c.run(["install", "-d", "-m", "0700", "/run/codellm-root"])
            ports = {}
            for i, (label, name, text) in enumerate(units):
                ports[name] = 9101 + i
                c.deploy_variant(name, text, ports[name])
                c.raw(ports[name], models)          # warm
                scores[name], _ = c.security(name + "@x.service")
            # Interleaved: each round measures every unit once, in an
            # order rotated per round, one short serial slice of each
            # request kind after the previous unit's instances are gone.
            prev = None
            for r in range(ROUNDS):
                order = units[r % len(units):] + units[:r % len(units)]
                for label, name, _ in order:
                    for kind, data, k in (("m", models, 6), ("p", pyrun, 4)):
                        if prev:
                            c.wait_idle(prev + ".socket")
                        t, st = timed(c, ports[name], data, k)
                        per[name][kind].append(t)
                        per[name]["st"].update(st)
                        prev = name
            for _, name, _ in units:
                c.remove_variant(name)
    except Unavailable as e:
        print("bench-units: cannot boot a systemd here: %s" % e)
        return 1
    base = units[0][1]
    ratio = {}
    for _, name, _ in units:
        # the ratio of each round's slice to the minimal unit's slice in
        # the same round; the median over the rounds
        ratio[name] = {k: statistics.median(b / v for b, v in zip(per[base][k], per[name][k]))
                       for k in ("m", "p")}
    print("bench-units: systemd in a container, %d rounds, units interleaved "
          "(6 /v1/models and 4 python requests per unit and round), medians" % ROUNDS)
    print("| unit (directive set) | exposure | /v1/models req/s | ratio | python run req/s | ratio |")
    print("|---|---|---|---|---|---|")
    rows = []
    for label, name, _ in units:
        rm = 1 / statistics.median(per[name]["m"])
        rp = 1 / statistics.median(per[name]["p"])
        ok = per[name]["st"] == {200}
        score = scores[name]
        rows.append(dict(unit=label, exposure=score, models_rps=rm, python_rps=rp,
                         models_ratio=ratio[name]["m"], python_ratio=ratio[name]["p"], all_200=ok))
        print("| %s | %s | %.1f | %.2f | %.1f | %.2f |%s" % (
            label, "%.1f" % score if score is not None else "?", rm, ratio[name]["m"], rp,
            ratio[name]["p"], "" if ok else " (some answers were not 200: %r)" % sorted(per[name]["st"], key=str)))
    json.dump(rows, open(os.environ.get("CODELLM_BENCH_JSON", "/dev/null"), "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
