#!/usr/bin/env python3
"""codellm under a real systemd (issue 5 point 6): a throwaway systemd
booted with systemd-nspawn over an overlay of the host's own OS
(tests/systemd/container.py, PLATFORM.md), the built tree installed in it
with `make install`, the shipped units started, and the whole path
checked from a client: socket activation, auth, the shared run slots,
the journal records, the per-block sandbox inside the hardened
per-connection service, the instances' CPU policy (codellm.slice,
CPUQuota=; whether the kernel holds the quota is reported, since hosts
without a writable cpu controller do not), and the socket surviving a
connection storm.
The debug pair (codellm-debug.socket, SPEC §8) runs beside it: on
127.0.0.1:8090 only, the page and the debug routes there, a block run
with the key in the same hardened service, the same slots, and none of
it on the main socket.

The container has its own network namespace (nothing collides with the
host's ports); requests go over curl run inside it and over sockets the
test creates in that namespace. Nothing outside the container changes:
its /run and overlay live in a private mount namespace and vanish with
it. When nspawn or systemd cannot run here, this is a TAP skip (a
failure under CODELLM_MUST_SANDBOX=1)."""
import json
import os
import queue
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "systemd"))
import harness  # noqa: E402
from harness import KEY, Resp, Tap, block, build_request  # noqa: E402
from container import Container, Unavailable, unavailable_reason  # noqa: E402

ID_RAN = "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
ID_REFUSED = "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"
ID_NOTHING = "2c7e9a1b4d3f4a8c9e6d1b0a5f3c7e92"
PORT = 8089          # the shipped ListenStream=, in the container's own netns
DEBUG_PORT = 8090    # codellm-debug.socket's
# the page's Content-Security-Policy (the debug contract)
PAGE_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")
PREFIX = "/usr/local"
# the whole test, boot to power-off: about 15 s alone, several times that
# on a busy machine; only a hang gets near it
DEADLINE_S = 600
# Gates: a block that must still be running while the test looks at it
# waits until the test creates GATES/NAME (gated(), open_gate()), instead
# of sleeping for a time the test hopes is long enough. Under /usr, which
# every block's root has (read-only) from the container's own tree.
GATES = "/usr/local/share/codellm-test-gates"
# how long the test waits for what it expects while a gate is closed:
# spent only when the expected thing never comes
WAIT_S = 60

t = Tap()


class Overdue(Exception):
    pass


def overdue(signum, frame):
    raise Overdue("test took longer than %d s" % DEADLINE_S)


def chat_body(code):
    return {"model": "codellm", "messages": [{"role": "user", "content": code}]}


def curl(c, path, body=None, key=KEY, timeout=60, port=PORT):
    """curl inside the container; the answer as a harness Resp."""
    argv = ["curl", "-sS", "-m", str(timeout), "-D", "-", "-o", "-"]
    if key is not None:
        argv += ["-H", "Authorization: Bearer " + key]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    argv.append("http://127.0.0.1:%d%s" % (port, path))
    r = c.run(argv, input=json.dumps(body) if body is not None else None, timeout=timeout + 5)
    return Resp(r.stdout.encode("utf-8", "surrogateescape")), r


def request(c, method, path, body=None, key=KEY, timeout=60, port=PORT, headers=None):
    return Resp(c.raw(port, build_request(method, path, body, headers=headers, key=key),
                      timeout=timeout))


def content(r):
    return harness.content(r)


def gated(name, then):
    """bash for a block that waits until the test opens gate `name`, then
    runs `then`."""
    return "until [ -e %s/%s ]; do sleep 0.02; done\n%s" % (GATES, name, then)


def open_gate(c, name):
    c.run(["touch", "%s/%s" % (GATES, name)], check=True)


def records(c, *matches, rids=()):
    """The codellm records, once one for each of rids is there."""
    return c.journal("SYSLOG_IDENTIFIER=codellm", *matches,
                     until=lambda recs: all(by_rid(recs, r) for r in rids if r))


def by_rid(recs, rid):
    return [x for x in recs if rid and x.get("CODELLM_REQUEST_ID") == rid]


def main(c):
    t.ok(c.system_state in ("running", "degraded"),
         "a throwaway systemd boots (%s in %.2f s)" % (c.system_state, c.boot_seconds))

    # ---- install ---------------------------------------------------------
    try:
        c.install_codellm(key=KEY, prefix=PREFIX)
    except RuntimeError as e:
        t.ok(False, "make install DESTDIR=/ PREFIX=%s inside the container" % PREFIX, str(e))
        return
    t.ok(True, "make install DESTDIR=/ PREFIX=%s inside the container" % PREFIX)
    c.run(["mkdir", "-p", GATES], check=True)
    want = ["bin/codellm-handler", "lib/systemd/system/codellm.socket",
            "lib/systemd/system/codellm@.service", "lib/systemd/system/codellm-debug.socket",
            "lib/systemd/system/codellm-debug@.service", "lib/systemd/system/codellm.slice",
            "lib/systemd/system/codellm-netns.service",
            "lib/sysusers.d/codellm.conf",
            "lib/tmpfiles.d/codellm.conf", "lib/systemd/catalog/codellm.catalog",
            "share/man/man8/codellm-handler.8"]
    r = c.run(["sh", "-c", 'for f; do [ -e "%s/$f" ] || echo "$f"; done' % PREFIX, "sh"] + want)
    t.eq(r.stdout.split(), [], "installed: binary, both unit pairs (main and debug), "
         "codellm.slice, the namespace holder, sysusers, tmpfiles, catalog, man page")
    r = c.run(["systemd-analyze", "verify", "codellm.socket", "codellm@x.service",
               "codellm-debug.socket", "codellm-debug@x.service", "codellm.slice",
               "codellm-netns.service"])
    t.ok(r.returncode == 0, "systemd-analyze verify passes on the installed units (main and "
         "debug, codellm.slice, codellm-netns.service)", r.stdout + r.stderr)
    uid = c.run(["id", "-u", "codellm"]).stdout.strip()
    t.ok(uid.isdigit() and uid != "0", "systemd-sysusers created the system user codellm (uid %s)" % uid)
    r = c.run(["stat", "-c", "%U %a", "/run/codellm"])
    t.ok(r.stdout.split() == ["codellm", "700"],
         "systemd-tmpfiles created /run/codellm for the slots, private to codellm (%s)" % r.stdout.strip(),
         r.stderr)

    if harness.SANITIZE:
        # a sanitizer build (make sanitize): LeakSanitizer stops the
        # threads it scans with ptrace, which the unit's SystemCallFilter=
        # refuses (EPERM, "LeakSanitizer has encountered a fatal error");
        # allow it for this build only, and pass the sanitizer options on
        env = " ".join('"%s=%s"' % (k, os.environ[k]) for k in
                       ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS") if k in os.environ)
        for unit in ("codellm@.service", "codellm-debug@.service"):
            c.dropin(unit, "90-sanitizer", "[Service]\nSystemCallFilter=ptrace\n"
                     + ("Environment=%s\n" % env if env else ""))
        c.daemon_reload()
    try:
        c.start_unit("codellm.socket")
    except RuntimeError as e:
        t.diag(str(e))
    st = c.is_active("codellm.socket")
    if not t.eq(st, "active", "systemctl start codellm.socket: active"):
        t.diag(c.systemctl("status", "codellm.socket").stdout)
        return
    exposure, _ = c.security("codellm@x.service")
    t.diag("systemd-analyze security codellm@x.service (online): %s" % exposure)
    try:
        c.start_unit("codellm-debug.socket")
    except RuntimeError as e:
        t.diag(str(e))
    if not t.eq(c.is_active("codellm-debug.socket"), "active",
                "systemctl start codellm-debug.socket: active"):
        t.diag(c.systemctl("status", "codellm-debug.socket").stdout)
        return

    # ---- a python run over curl, with and without the key ---------------
    r, cr = curl(c, "/v1/chat/completions",
                 chat_body(block("python", "print(sum(range(10)))\nprint('hello from systemd')")))
    t.eq(r.status, 200, "python run over curl with the key: 200")
    t.eq(content(r), "45\nhello from systemd\n", "the run's output is the answer's content")
    if r.status != 200:
        t.diag(cr.stdout[-3000:] + cr.stderr)
    rid_run = r.header("x-request-id")
    t.ok(rid_run and harness.field(r, "id") == rid_run, "x-request-id is the answer's id (%s)" % rid_run)

    r401, _ = curl(c, "/v1/chat/completions", chat_body(block("python", "print(1)")), key=None)
    t.eq(r401.status, 401, "the same run without the key: 401")
    e = r401.error() or {}
    t.eq(e.get("code"), "invalid_api_key", "401 body: invalid_api_key")
    rid_401 = r401.header("x-request-id")
    r401b = request(c, "GET", "/v1/models", key="not-the-key")
    t.eq(r401b.status, 401, "a wrong key: 401")

    # ---- the per-block sandbox inside the hardened service ------------
    probe = "\n".join([
        "import errno, json, os",
        "st = {}",
        "for ln in open('/proc/self/status'):",
        "    k, _, v = ln.partition(':')",
        "    st[k] = v.strip()",
        "try:",
        "    os.close(os.open('/dev/random', os.O_WRONLY))",
        "    ll = 'opened'",
        "except OSError as e:",
        "    ll = errno.errorcode.get(e.errno, str(e.errno))",
        "print(json.dumps({'uid': os.getuid(), 'Seccomp': st.get('Seccomp'),",
        "                  'NoNewPrivs': st.get('NoNewPrivs'), 'CapEff': st.get('CapEff'),",
        "                  'CapBnd': st.get('CapBnd'), 'open_root': ll}))",
    ])
    rs = request(c, "POST", "/v1/chat/completions", chat_body(block("python", probe)))
    if not t.eq(rs.status, 200, "sandbox probe block: 200"):
        t.diag(repr(rs))
    try:
        got = json.loads(content(rs) or "")
    except ValueError:
        got = {}
    t.eq(got.get("uid"), 65534, "inside the service a block runs as uid 65534")
    t.eq((got.get("Seccomp"), got.get("NoNewPrivs")), ("2", "1"),
         "a block has a seccomp filter (Seccomp: 2) and NoNewPrivs: 1")
    t.eq(got.get("CapEff"), "0000000000000000", "a block has no effective capabilities (CapEff 0)")
    t.eq(got.get("open_root"), "EACCES",
         "Landlock in force: opening /dev/random (mode 0666) for writing in a block fails with EACCES")
    sbx = harness.field(rs, "codellm", "sandbox") or {}
    t.eq(sbx.get("missing"), [], "codellm.sandbox.missing is [] (every layer applied)")
    t.diag("layers: %s; net: %s" % (",".join(sbx.get("layers") or []), sbx.get("net")))
    if rs.status == 503:
        t.diag("sandbox refused inside the service: %s" % json.dumps(rs.error()))

    r = c.run(["sh", "-c", "stat -c '%n %U %a' /run/codellm/slot.*"])
    slots = [ln.split() for ln in r.stdout.splitlines()]
    t.ok(slots and all(x[1:] == ["codellm", "600"] for x in slots),
         "after a run the slot files are the codellm user's, 0600 (%s)" % r.stdout.strip(), r.stderr)

    # ---- one network namespace for every instance ------------------------
    shared_netns(c)

    # ---- CPU: codellm.slice and CPUQuota ---------------------------------
    cpu_policy(c)

    # ---- the debug surface (codellm-debug.socket) -------------------------
    debug_ids = debug_surface(c, exposure)

    # ---- the journal -------------------------------------------------------
    recs = records(c, rids=[rid_run, rid_401] + list(debug_ids.values()))
    ran = by_rid(recs, rid_run)
    t.eq(len(ran), 1, "journalctl -o json: one record for the curl run, by its x-request-id")
    ran = (ran or [{}])[0]
    t.eq(ran.get("MESSAGE_ID"), ID_RAN, "the run's record has the 'ran' MESSAGE_ID")
    t.eq((ran.get("CODELLM_STATUS"), ran.get("CODELLM_ROUTE"), ran.get("CODELLM_MODE"),
          ran.get("CODELLM_MODEL"), ran.get("CODELLM_BLOCKS"), ran.get("CODELLM_LANGS"),
          ran.get("CODELLM_EXIT_CODE"), ran.get("CODELLM_TIMED_OUT")),
         ("200", "POST /v1/chat/completions", "run", "codellm", "1", "python", "0", "false"),
         "run record: CODELLM_STATUS, ROUTE, MODE, MODEL, BLOCKS, LANGS, EXIT_CODE, TIMED_OUT")
    t.ok(len(ran.get("CODELLM_CODE_SHA256", "")) == 64 and ran.get("CODELLM_DURATION_MS", "").isdigit()
         and ran.get("CODELLM_SANDBOX", "").startswith("native") and ran.get("CODELLM_PEER"),
         "run record: CODE_SHA256, DURATION_MS, SANDBOX, PEER", json.dumps(ran, indent=1))
    t.eq(ran.get("_UID"), uid, "the record comes from the instance, running as codellm")
    dbg = (by_rid(recs, debug_ids.get("run")) or [{}])[0]
    t.eq((dbg.get("MESSAGE_ID"), dbg.get("CODELLM_STATUS"), dbg.get("CODELLM_ROUTE"),
          dbg.get("CODELLM_MODE"), dbg.get("CODELLM_BLOCKS"), dbg.get("CODELLM_LANGS"),
          dbg.get("CODELLM_EXIT_CODE"), dbg.get("_UID")),
         (ID_RAN, "200", "POST /debug/run-block", "debug", "1", "python", "0", uid),
         "debug run record: 'ran', STATUS 200, ROUTE POST /debug/run-block, MODE debug, "
         "BLOCKS 1, LANGS python, EXIT_CODE 0, from the codellm user")
    t.ok((dbg.get("_SYSTEMD_UNIT") or "").startswith("codellm-debug@"),
         "the debug run's record comes from a codellm-debug@ instance (%s)"
         % dbg.get("_SYSTEMD_UNIT"))
    pg = (by_rid(recs, debug_ids.get("page")) or [{}])[0]
    bl = (by_rid(recs, debug_ids.get("blocks")) or [{}])[0]
    hr = (by_rid(recs, debug_ids.get("host")) or [{}])[0]
    t.eq([(x.get("MESSAGE_ID"), x.get("CODELLM_STATUS"), x.get("CODELLM_ROUTE")) for x in (pg, bl, hr)],
         [(ID_NOTHING, "200", "GET /"), (ID_NOTHING, "200", "POST /debug/blocks"),
          (ID_REFUSED, "403", "POST /debug/blocks")],
         "debug records: the page and /debug/blocks 'nothing by design', the 403 "
         "host_not_allowed 'refused'")
    t.diag("record unit: %s, sandbox: %s" % (ran.get("_SYSTEMD_UNIT"), ran.get("CODELLM_SANDBOX")))
    ref = (by_rid(recs, rid_401) or [{}])[0]
    t.eq((ref.get("MESSAGE_ID"), ref.get("CODELLM_STATUS")), (ID_REFUSED, "401"),
         "the 401's record: the 'refused' MESSAGE_ID, CODELLM_STATUS=401")
    blob = json.dumps(recs)
    t.ok(KEY not in blob and "not-the-key" not in blob, "no record holds the key or a presented bearer")
    c.run(["journalctl", "--update-catalog"])
    r = c.run(["journalctl", "--list-catalog", ID_RAN, ID_REFUSED])
    t.ok(r.stdout.count("codellm") >= 2, "the installed catalog documents both MESSAGE_IDs",
         r.stdout + r.stderr)

    # ---- 429 with one slot ------------------------------------------------
    # the same drop-in on the debug service: its runs take the same slots
    # (/run/codellm), so one slow debug run joins the three chat runs
    for unit in ("codellm@.service", "codellm-debug@.service"):
        c.dropin(unit, "50-test-slots", "[Service]\nEnvironment=CODELLM_MAX_CONCURRENT=1\n")
    c.daemon_reload()
    cursor = c.journal_cursor()
    # each run waits at the "slots" gate: the one that gets the slot holds
    # it until the test has the other three answers, however long they take
    slow = chat_body(block("bash", gated("slots", "echo slow-done")))
    slow_debug = {"body": block("bash", gated("slots", "echo slow-done")), "block": 0}
    res = [None] * 4
    took = [None] * 4
    done = queue.Queue()
    t0 = time.monotonic()

    def fire(i):
        try:
            if i < 3:
                res[i] = request(c, "POST", "/v1/chat/completions", slow, timeout=WAIT_S + 30)
            else:
                res[i] = request(c, "POST", "/debug/run-block", slow_debug, timeout=WAIT_S + 30,
                                 port=DEBUG_PORT)
        except OSError as ex:
            res[i] = ex
        took[i] = time.monotonic() - t0
        done.put(i)

    ths = [threading.Thread(target=fire, args=(i,)) for i in range(4)]
    for th in ths:
        th.start()
    early = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(early) < 3:
            early.append(done.get(timeout=max(0.01, deadline - time.monotonic())))
    except queue.Empty:
        pass
    gate_at = time.monotonic() - t0
    open_gate(c, "slots")
    for th in ths:
        th.join(WAIT_S + 40)
    sts = sorted(getattr(x, "status", None) or 0 for x in res)
    t.ok(sts == [200, 429, 429, 429], "--max-concurrent 1 (Environment= drop-in on both "
         "services), 3 parallel slow chat runs and a slow debug run-block: one 200, three 429, "
         "the slot shared by both sockets' instances (%s)" % sts,
         "\n".join(repr(x) for x in res))
    r429 = [x for x in res if getattr(x, "status", None) == 429]
    t.ok(r429 and all((x.error() or {}).get("type") == "rate_limit_error"
                      and x.header("retry-after") == "1" for x in r429),
         "each 429 (chat or debug) is a rate_limit_error with Retry-After: 1")
    # an ordering fact: the three 429s were in while the slot holder's
    # block still waited at its gate (a 429 that waited for the slot would
    # only come after the gate opened)
    t.ok(sorted(getattr(res[i], "status", None) or 0 for i in early) == [429, 429, 429],
         "the 429s come at once, while the slot holder still waits at its gate (429s after %s s; "
         "the gate opened at %.2f s)" % (",".join("%.2f" % took[i] for i in early), gate_at),
         "answered before the gate opened: %r" % [(i, getattr(res[i], "status", res[i]))
                                                 for i in early])
    holder = [i for i in range(4) if getattr(res[i], "status", None) == 200]
    out = None
    if holder:
        out = content(res[holder[0]]) if holder[0] < 3 else (res[holder[0]].json or {}).get("stdout")
    t.ok(out == "slow-done\n", "the slot holder's run completed (%s)"
         % ("debug run-block" if holder and holder[0] == 3 else "chat run"))
    recs2 = c.journal("SYSLOG_IDENTIFIER=codellm", since_cursor=cursor,
                      until=lambda recs: len(recs) >= 4)
    t.eq(sorted((x.get("MESSAGE_ID"), x.get("CODELLM_STATUS")) for x in recs2),
         sorted([(ID_RAN, "200"), (ID_REFUSED, "429"), (ID_REFUSED, "429"), (ID_REFUSED, "429")]),
         "journal: one 'ran' record and three 'refused' records with CODELLM_STATUS=429")
    for unit in ("codellm@.service", "codellm-debug@.service"):
        c.dropin(unit, "50-test-slots", None)
    c.daemon_reload()

    # ---- a missing key file: 503, not a reset --------------------------
    c.remove("/etc/codellm/api-key")
    r503 = request(c, "GET", "/v1/models")
    t.ok(r503.status == 503 and r503.header("x-should-retry") == "false",
         "without /etc/codellm/api-key (SetCredential= fallback): 503 with x-should-retry: false, "
         "not a reset", repr(r503))
    c.write_file("/etc/codellm/api-key", KEY + "\n", mode=0o600)

    # ---- 300 connections within two seconds -------------------------------
    # the 2 s is systemd's default trigger interval, which the storm must
    # beat to mean anything: the burst itself takes hundredths of a second
    # alone, tenths beside a load of many times the CPUs; a slower one
    # proves nothing either way and is sent again (each must connect all)
    took_s = []
    for _ in range(3):
        el, n_ok, errs = c.burst_connects(PORT, count=300, threads=20)
        took_s.append("%.2f" % el)
        if el < 2.0 or n_ok != 300:
            break
    t.ok(n_ok == 300 and el < 2.0, "300 connections opened and closed in %s s (> the 200-in-2-s "
         "trigger limit default)" % " s, then ".join(took_s), "\n".join(errs[:10]))
    t1 = time.monotonic()
    drained = c.wait_idle("codellm.socket", timeout=180)
    t.ok(drained, "the storm's instances all ended (NConnections=0 after %.1f s)" % (time.monotonic() - t1))
    t.eq(c.is_active("codellm.socket"), "active",
         "after the storm: systemctl is-active codellm.socket -> active (TriggerLimitIntervalSec=0)")
    props = c.systemctl("show", "codellm.socket", "-p", "NAccepted,NRefused,NConnections,Result").stdout
    t.diag(" ".join(props.split()))
    rh = request(c, "GET", "/healthz")
    t.eq(rh.status, 200, "after the storm: /healthz answers 200")
    rr = request(c, "POST", "/v1/chat/completions", chat_body(block("python", "print(6*7)")))
    t.ok(rr.status == 200 and content(rr) == "42\n", "after the storm: a run still works", repr(rr))
    failed = c.systemctl("list-units", "--failed", "--plain", "--no-legend", "codellm*").stdout.strip()
    t.eq(failed, "", "no failed codellm unit")

    # handler stderr went to the journal: a sanitizer report there fails
    # the run like one in a Server log
    r = c.run(["journalctl", "--no-pager", "-o", "cat", "_COMM=codellm-handler"])
    if any(m in r.stdout for m in harness.SANITIZER_MARKS):
        harness.SANITIZER_REPORTS.append(r.stdout[-8000:])


def shared_netns(c):
    """codellm-netns.service holds one empty network namespace that every
    instance joins (issue 14): two concurrent instances are in the same
    one, not the host's, with only lo in it, down; their blocks still get
    namespaces of their own (net: own, the default)."""
    t.eq(c.is_active("codellm-netns.service"), "active",
         "codellm-netns.service (the namespace holder) is active")
    # no instance of an earlier request left: the two found below are these
    c.wait_idle("codellm.socket", timeout=WAIT_S)
    res = {}

    # both wait at the "netns" gate: the two instances are there together
    # until the test has looked at them
    def slow(i):
        res[i] = request(c, "POST", "/v1/chat/completions",
                         chat_body(block("bash", gated("netns", "echo ns%d" % i))),
                         timeout=2 * WAIT_S)
    th = [threading.Thread(target=slow, args=(i,)) for i in range(2)]
    for x in th:
        x.start()
    try:
        inspect_netns(c)
    finally:
        open_gate(c, "netns")
        for x in th:
            x.join(2 * WAIT_S + 10)
    t.eq([content(res[i]) if i in res else None for i in range(2)], ["ns0\n", "ns1\n"],
         "both runs answered")
    t.eq([harness.field(res[i], "codellm", "sandbox", "net") if i in res else None for i in range(2)],
         ["own", "own"], "their blocks ran in namespaces of their own (net: own, the default)")


def inspect_netns(c):
    """The two gated instances of shared_netns, while they wait."""
    t0 = time.monotonic()
    pids, deadline = [], t0 + WAIT_S
    while time.monotonic() < deadline and len(pids) < 2:
        out = c.systemctl("list-units", "--plain", "--no-legend", "--state=active",
                          "codellm@*").stdout
        pids = []
        for u in [ln.split()[0] for ln in out.splitlines() if ln.strip()]:
            pid = c.systemctl("show", "-p", "MainPID", "--value", u).stdout.strip()
            if pid.isdigit() and pid != "0":
                pids.append(pid)
        if len(pids) < 2:
            time.sleep(0.1)
    found = time.monotonic() - t0
    nets = [c.run(["readlink", "/proc/%s/ns/net" % p]).stdout.strip() for p in pids]
    host = c.run(["readlink", "/proc/1/ns/net"]).stdout.strip()
    t.ok(len(nets) == 2 and nets[0] == nets[1] and nets[0] not in ("", host),
         "two concurrent instances share one network namespace, not the host's (both "
         "running after %.2f s)" % found, repr(nets))
    links = c.run(["nsenter", "-t", pids[0], "-n", "ip", "-o", "link", "show"]).stdout.splitlines() \
        if pids else []
    t.ok(len(links) == 1 and links[0].split()[1] == "lo:" and
         "UP" not in links[0].split("<", 1)[1].split(">", 1)[0].split(","),
         "in it only lo, and it down", "\n".join(links))
    tmps = [c.run(["stat", "-L", "-c", "%d:%i", "/proc/%s/root/tmp" % p]).stdout.strip() for p in pids]
    t.diag("instances' /tmp %s, the container's %s"
           % (tmps, c.run(["stat", "-c", "%d:%i", "/tmp"]).stdout.strip()))


def running_instance(c, prefix, timeout=WAIT_S):
    """The active instance unit whose name starts with `prefix` (e.g.
    "codellm@"), once there is one; None after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = c.systemctl("list-units", "--plain", "--no-legend", "--state=active",
                          prefix + "*").stdout
        units = [ln.split()[0] for ln in out.splitlines() if ln.strip()]
        if units:
            return units[0]
        time.sleep(0.05)
    return None


def cpu_controller_file(c, cgroup):
    """(path, value) of the instance's CPU quota as the kernel holds it:
    cpu.max (cgroup v2) or cpu.cfs_quota_us (v1 cpu hierarchy); (None,
    None) where systemd wrote neither (no cpu controller it may write)."""
    for path in ("/sys/fs/cgroup%s/cpu.max" % cgroup,
                 "/sys/fs/cgroup/unified%s/cpu.max" % cgroup,
                 "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us" % cgroup,
                 "/sys/fs/cgroup/cpu,cpuacct%s/cpu.cfs_quota_us" % cgroup):
        r = c.run(["cat", path])
        if r.returncode == 0:
            return path, r.stdout.strip()
    return None, None


def cpu_policy(c):
    """A run through the real unit is in codellm.slice with CPUQuota=100%:
    looked at from the container's side while the run is in progress."""
    t.eq((c.unit_property("codellm.slice", "CPUWeight"),
          c.unit_property("codellm@x.service", "Slice"),
          c.unit_property("codellm@x.service", "CPUQuotaPerSecUSec")),
         ("50", "codellm.slice", "1s"),
         "systemd loads codellm.slice with CPUWeight=50 and the instances with "
         "Slice=codellm.slice and CPUQuota=100% (CPUQuotaPerSecUSec=1s)")
    c.wait_idle("codellm.socket", timeout=WAIT_S)
    res = []
    # the run waits at the "cpu" gate until the test has looked at it
    th = threading.Thread(target=lambda: res.append(request(
        c, "POST", "/v1/chat/completions",
        chat_body(block("bash", gated("cpu", "echo cpu-done"))), timeout=2 * WAIT_S)))
    th.start()
    try:
        t0 = time.monotonic()
        unit = running_instance(c, "codellm@")
        found = time.monotonic() - t0
        props = {}
        if unit:
            for ln in c.systemctl("show", unit, "-p",
                                  "Slice,CPUQuotaPerSecUSec,ControlGroup,MainPID").stdout.split("\n"):
                k, _, v = ln.partition("=")
                props[k] = v.strip()
        cg = props.get("ControlGroup", "")
        t.ok(unit and props.get("Slice") == "codellm.slice" and
             props.get("CPUQuotaPerSecUSec") == "1s" and cg.startswith("/codellm.slice/codellm@"),
             "a run in progress: its instance %s is in codellm.slice (cgroup %s) with "
             "CPUQuotaPerSecUSec=1s (found running after %.2f s)" % (unit, cg, found),
             json.dumps(props))
        pid = props.get("MainPID", "0")
        r = c.run(["cat", "/proc/%s/cgroup" % pid]) if pid.isdigit() and pid != "0" else None
        lines = r.stdout.split() if r is not None and r.returncode == 0 else []
        t.ok(any(ln.endswith(":" + cg) for ln in lines) if cg else False,
             "the handler process (MainPID %s) is in that cgroup (/proc/PID/cgroup)" % pid,
             "\n".join(lines))
        path, value = cpu_controller_file(c, cg) if cg else (None, None)
        if path is None:
            t.diag("CPUQuota= is not enforced here: no cpu.max or cpu.cfs_quota_us for %s "
                   "(systemd has no cpu controller it may write; codellm-handler(8), CPU)" % cg)
        elif path.endswith("cpu.max"):
            t.eq(value.split(), ["100000", "100000"],
                 "the kernel holds the quota: %s is 100000 100000 (one CPU)" % path)
        else:
            period = c.run(["cat", path.replace("cpu.cfs_quota_us", "cpu.cfs_period_us")])
            t.eq((value, period.stdout.strip()), ("100000", "100000"),
                 "the kernel holds the quota: %s is 100000 per 100000 µs (one CPU)" % path)
    finally:
        open_gate(c, "cpu")
        th.join(2 * WAIT_S + 10)
    r = res[0] if res else None
    t.ok(r is not None and r.status == 200 and content(r) == "cpu-done\n",
         "that run completes under the slice and quota", repr(r))


def debug_surface(c, exposure):
    """codellm-debug.socket under the real systemd; returns the request
    ids of its answers for the journal checks."""
    ids = {}
    # listening: 127.0.0.1:8090, and nothing else on that port
    listen = c.unit_property("codellm-debug.socket", "Listen")
    r = c.run(["ss", "-Htln", "sport = :%d" % DEBUG_PORT])
    addrs = sorted(ln.split()[3] for ln in r.stdout.splitlines() if len(ln.split()) > 3)
    t.ok(listen == "127.0.0.1:%d (Stream)" % DEBUG_PORT and addrs == ["127.0.0.1:%d" % DEBUG_PORT],
         "codellm-debug.socket listens on 127.0.0.1:%d only (Listen=%s; ss: %s)"
         % (DEBUG_PORT, listen, ",".join(addrs)), r.stdout + r.stderr)

    # the page: no key, text/html with its CSP; not on the main socket
    page, cr = curl(c, "/", key=None, port=DEBUG_PORT)
    t.ok(page.status == 200 and page.header("content-type") == "text/html; charset=utf-8" and
         page.body.lstrip().lower().startswith(b"<!doctype html"),
         "GET http://127.0.0.1:%d/ without a key: 200 text/html, the page" % DEBUG_PORT,
         "%r\n%s" % (page, cr.stderr))
    t.eq((page.header("content-security-policy"), page.header("x-content-type-options"),
          page.header("cache-control")), (PAGE_CSP, "nosniff", "no-store"),
         "the page comes with its Content-Security-Policy, nosniff and no-store")
    ids["page"] = page.header("x-request-id")
    main_page, _ = curl(c, "/", key=None)
    t.ok(main_page.status == 404 and (main_page.error() or {}).get("code") == "not_found",
         "GET http://127.0.0.1:%d/ (the main socket, no --debug): 404 not_found" % PORT,
         repr(main_page))
    main_run = request(c, "POST", "/debug/run-block",
                       {"body": block("python", "print(1)"), "block": 0})
    t.eq(main_run.status, 404, "POST /debug/run-block on the main socket, with the key: 404")

    # the blocks of a body: no key, nothing runs
    md = ("Upper-case the input:\n\n" +
          block("python", "import sys\nprint(sys.stdin.read().upper(), end='')") +
          "\n" + block("text", "prose, skipped") + "\n" + block("bash", "rev"))
    rb, cr = curl(c, "/debug/blocks", {"body": md}, key=None, port=DEBUG_PORT)
    j = rb.json or {}
    got = [(b.get("index"), b.get("lang"), b.get("program"), b.get("allowed"))
           for b in j.get("blocks") or []]
    t.ok(rb.status == 200 and j.get("object") == "codellm.debug.blocks" and
         got == [(0, "python", "python3", True), (1, "bash", "bash", True)] and
         [f.get("label") for f in j.get("skipped_fences") or []] == ["text"],
         "POST /debug/blocks without a key: 200, blocks python (0) and bash (1), the text "
         "fence skipped", "%r\n%s" % (rb, cr.stderr))
    ids["blocks"] = rb.header("x-request-id")

    # one python block, with the key, in the hardened debug service
    run = {"body": md, "block": 0, "stdin": "hello from the debugger\n"}
    rr, cr = curl(c, "/debug/run-block", run, port=DEBUG_PORT)
    j = rr.json or {}
    t.ok(rr.status == 200 and j.get("object") == "codellm.debug.block" and
         j.get("index") == 0 and j.get("lang") == "python" and
         j.get("stdout") == "HELLO FROM THE DEBUGGER\n" and j.get("ok") is True and
         j.get("exit_code") == 0 and j.get("error") is None,
         "POST /debug/run-block with the key: block 0 (python) ran on the given stdin, ok",
         "%r\n%s" % (rr, cr.stderr[-2000:]))
    t.ok(rr.header("x-request-id") and j.get("id") == rr.header("x-request-id") and
         (j.get("sandbox") or {}).get("missing") == [],
         "the debug run's id is its x-request-id, every sandbox layer applied (missing [])",
         json.dumps(j.get("sandbox")))
    ids["run"] = rr.header("x-request-id")
    r401, _ = curl(c, "/debug/run-block", run, key=None, port=DEBUG_PORT)
    t.ok(r401.status == 401 and (r401.error() or {}).get("code") == "invalid_api_key",
         "the same run without the key: 401 invalid_api_key", repr(r401))

    # a Host naming another machine (DNS rebinding): refused
    rh = request(c, "POST", "/debug/blocks", {"body": md}, key=None, port=DEBUG_PORT,
                 headers={"Host": "rebound.example:%d" % DEBUG_PORT})
    t.ok(rh.status == 403 and (rh.error() or {}).get("code") == "host_not_allowed",
         "POST /debug/blocks with Host: rebound.example: 403 host_not_allowed", repr(rh))
    ids["host"] = rh.header("x-request-id")

    dexp, _ = c.security("codellm-debug@x.service")
    t.ok(dexp is not None and dexp == exposure,
         "systemd-analyze security (online): codellm-debug@x.service %s, the same as "
         "codellm@x.service %s" % (dexp, exposure))
    return ids


def run_all():
    why = unavailable_reason()
    if why:
        t.skip("codellm under a real systemd (nspawn)", why)
        return
    # CODELLM_SYSTEMD_SRC: install another built tree (e.g. a sanitizer build)
    c = Container(src=os.environ.get("CODELLM_SYSTEMD_SRC") or harness.TOP)
    try:
        c.start()
    except Unavailable as ex:
        t.skip("codellm under a real systemd (nspawn)", str(ex).splitlines()[0][:200])
        t.diag(str(ex))
        return
    t0 = time.monotonic()
    try:
        main(c)
    except Overdue as ex:
        t.ok(False, str(ex))
    except Exception as ex:  # a harness problem still stops the container
        import traceback
        t.ok(False, "test raised %s" % type(ex).__name__, traceback.format_exc())
    finally:
        signal.alarm(0)
        t1 = time.monotonic()
        c.stop()
        t.diag("boot %.2f s, checks %.2f s, power-off %.2f s"
               % (c.boot_seconds or 0, t1 - t0, time.monotonic() - t1))


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, overdue)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(1))
    signal.alarm(DEADLINE_S)
    run_all()
    t.done()
