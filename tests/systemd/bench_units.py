#!/usr/bin/env python3
"""make bench-units: security per millisecond under a real systemd (issue
5 point 7). In one boot (tests/systemd/container.py), candidate
per-connection units run the same installed handler side by side; for
each: serial requests/s of a cheap authenticated route (/v1/models:
mostly systemd's own per-instance setup) and of a python run, the ratio
to a minimal Accept=yes unit measured in the same boot, and the unit's
exposure from systemd-analyze security. Prints the table that README.md
and the closing note quote."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "blackbox"))
from container import Container, Unavailable  # noqa: E402
from harness import KEY, build_request, block  # noqa: E402

SECONDS = float(os.environ.get("CODELLM_BENCH_SECONDS", "4"))
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
        ("minimal", "bu-min", MINIMAL),
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


def main():
    models = build_request("GET", "/v1/models", key=KEY)
    pyrun = build_request("POST", "/v1/chat/completions",
                          {"model": "codellm", "messages": [{"role": "user", "content": block("python", "print(1)")}]},
                          key=KEY)
    rows = []
    try:
        with Container() as c:
            c.install_codellm(key=KEY)
            port = 9101
            for label, name, text in variants():
                c.deploy_variant(name, text, port)
                c.raw(port, models)          # warm
                m = c.serial_rate(port, models, seconds=SECONDS)
                p = c.serial_rate(port, pyrun, seconds=SECONDS)
                ok = set(m["statuses"]) == {200} and set(p["statuses"]) == {200}
                score, _ = c.security(name + "@x.service")
                rows.append((label, score, m["rate"], p["rate"], ok))
                if not ok:
                    print("# %s: statuses /v1/models %r, python %r" % (label, m["statuses"], p["statuses"]))
                    print("# " + c.http(port, pyrun)[2][:300].decode("utf-8", "replace"))
                c.remove_variant(name)
                # the slot files are private to the user that made them
                # (a root variant's would lock the next variants out)
                c.run(["sh", "-c", "rm -f /run/codellm/*"])
                port += 1
    except Unavailable as e:
        print("bench-units: cannot boot a systemd here: %s" % e)
        return 1
    base_m, base_p = rows[0][2], rows[0][3]
    print("| unit (directive set) | exposure | /v1/models req/s | ratio | python run req/s | ratio |")
    print("|---|---|---|---|---|---|")
    for label, score, rm, rp, ok in rows:
        print("| %s | %s | %.1f | %.2f | %.1f | %.2f |%s" % (
            label, "%.1f" % score if score is not None else "?", rm, rm / base_m, rp, rp / base_p,
            "" if ok else " (some answers were not 200)"))
    json.dump([dict(unit=r[0], exposure=r[1], models_rps=r[2], python_rps=r[3], all_200=r[4])
               for r in rows], open(os.environ.get("CODELLM_BENCH_JSON", "/dev/null"), "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
