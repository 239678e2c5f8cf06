#!/usr/bin/env python3
"""The debug surface (SPEC §8, notes/debug-contract.md; THREATS.md classes
11 and 14) through the real codellm-handler behind systemd-socket-activate.

Sections (each a function below, each check a TAP line):
  1. hidden: without --debug every debug route is a plain 404; with it,
     wrong methods are 405 with Allow, unknown /debug/ paths still 404.
  2. loopback rule: two network namespaces made by this test, joined by a
     veth pair (198.51.100.0/24, never the host's): a client in B gets 403
     loopback_only on every debug route (nothing runs) while /healthz and
     /v1 answer; a client in A over 127.0.0.1 is served.
  3. Host header (DNS-rebinding defence): a loopback peer naming another
     host gets 403 host_not_allowed; localhost/127.x/[::1] are fine.
  4. /debug/blocks, POST and GET (form-decoded query): numbering, labels,
     lang, program, allowed, fence lines, skipped fences, errors.
  5. /debug/run-block: auth, block index, allowlist, stdin, the bag,
     python/bash/node, exact result types, failures, timeout, the same
     sandbox as a chat run, invalid UTF-8.
  6. /debug/run-pipeline: per-block results, n-1 tapped edges equal to what
     crossed, a 5 MiB binary edge, --max-tap-bytes and its default.
  7. control plane from inside (class 14): a block reaches neither the
     debug port nor the service port, which the test itself can reach.
  8. audit: the journal records of debug requests (read back from a private
     journald, as test_audit.py does).
  9. nothing left behind: no run directory, no handler process, no
     namespace, no host interface change.

Every server runs with the default --sandbox native. As root the file
re-runs itself inside `unshare -m` with a tmpfs on /run, so the private
journald and everything it writes vanish with that mount namespace (on
these machines /run is on disk and shared). The two network namespaces are
held by `unshare --net sleep` processes of this test (parent-death signal
SIGKILL, killed in `finally`): nothing is named on the host, the veth pair
is created inside namespace A with its peer put straight into B, and no
host interface, route or sysctl is touched.
"""
import base64
import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

CAN_PRIV = reexec_in_mount_ns("CODELLM_DEBUG_INNER")

t = Tap()
U = str(os.getpid())
T0 = time.time()

ID_RAN = "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
ID_REFUSED = "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"
ID_NOTHING = "2c7e9a1b4d3f4a8c9e6d1b0a5f3c7e92"
KIND_ID = {"ran": ID_RAN, "refused": ID_REFUSED, "nothing": ID_NOTHING}

# errno names a connect() from inside a block may fail with
FAILS_NET = {"EACCES", "EPERM", "ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL", "EHOSTUNREACH"}
NET_A, NET_B = "198.51.100.1", "198.51.100.2"     # TEST-NET-2, inside our namespaces only
CODE_MARK = "c0de-" + U + "-not-in-journal"      # in code we send; must never reach the journal

SERVERS = []     # every server this file started (section 9)
LEFT = []        # (server name, run dirs left, handler pids left) when each stopped
AUDIT = []       # (name, Resp, kind, route, status, peer prefix) checked in section 8
MARKS = []       # unique sleep markers of code that must never run


# ---- talking to a handler, also from inside a network namespace ----------------------

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1


def ns_socket(ns_pid, family=socket.AF_INET):
    """A TCP socket created in the network namespace of process `ns_pid`
    (None: ours). Only the creation happens there: a socket keeps its
    namespace, so this thread is switched back at once."""
    if ns_pid is None:
        return socket.socket(family, socket.SOCK_STREAM)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open("/proc/%d/ns/net" % ns_pid, os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns into %d" % ns_pid)
        try:
            return socket.socket(family, socket.SOCK_STREAM)
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                # never go on in the wrong namespace
                os.write(2, b"test_debug: cannot return to the test's network namespace\n")
                os._exit(2)
    finally:
        os.close(own)
        os.close(target)


def fetch(port, method, path, body=None, headers=None, key=KEY, addr="127.0.0.1", ns=None,
          timeout=120):
    """One request, everything read until the server closes (a bytearray:
    answers here reach tens of MB)."""
    data = build_request(method, path, body, headers, key)
    c = ns_socket(ns)
    try:
        c.settimeout(timeout)
        c.connect((addr, port))
        c.sendall(data)
        return Resp(read_all(c))
    finally:
        c.close()


def can_connect(port, addr="127.0.0.1", ns=None):
    c = ns_socket(ns)
    try:
        c.settimeout(2)
        c.connect((addr, port))
        return True
    except OSError:
        return False
    finally:
        c.close()


class DServer(Server):
    """harness.Server plus: a name, requests through fetch(), and, before
    it stops, what its handlers left (section 9)."""

    def __init__(self, name, *args, **kw):
        super().__init__(*args, **kw)
        self.name = name
        self.ns = None
        SERVERS.append(self)

    def req(self, method, path, body=None, **kw):
        kw.setdefault("ns", self.ns)
        return fetch(self.port, method, path, body, **kw)

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.req("POST", path, body, **kw)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            left = self.leftovers(30.0)
            deadline = time.time() + 30
            while descendants(self.proc.pid) and time.time() < deadline:
                time.sleep(0.05)
            LEFT.append((self.name, left, descendants(self.proc.pid)))
        super().stop()


class NsServer(DServer):
    """A DServer whose systemd-socket-activate runs in the network
    namespace of process `ns_pid`, listening on `listen`:PORT there."""

    def __init__(self, name, ns_pid, *args, listen="0.0.0.0", **kw):
        super().__init__(name, *args, **kw)
        self.ns = ns_pid
        i = self.argv.index("-l")
        self.argv[i + 1] = "%s:%d" % (listen, self.port)
        self.argv = ["nsenter", "--net=/proc/%d/ns/net" % ns_pid, "--"] + self.argv

    def reachable(self):
        return can_connect(self.port, "127.0.0.1", self.ns)


# ---- reading answers --------------------------------------------------------------

def short(r):
    return repr(r)[:1500]


def error_shape(r):
    """The answer is the OpenAI error object, JSON, Connection: close, with
    an x-request-id."""
    e = r.error()
    return (e is not None and isinstance(e.get("message"), str) and e.get("message") != ""
            and isinstance(e.get("type"), str) and "param" in e and "code" in e
            and (r.header("content-type") or "").startswith("application/json")
            and (r.header("connection") or "").lower() == "close"
            and bool(r.header("x-request-id")))


def expect_error(r, status, code, desc, param=False, etype=None):
    """status, the error object, its code (and param / type when given)."""
    e = r.error() or {}
    good = r.status == status and error_shape(r) and (code is None or e.get("code") == code) \
        and (param is False or e.get("param") == param) and (etype is None or e.get("type") == etype)
    return t.ok(good, desc, "want %s code=%r%s%s\ngot %s" % (
        status, code, "" if param is False else " param=%r" % param,
        "" if etype is None else " type=%r" % etype, short(r)))


def allow_set(r):
    return {m.strip() for m in (r.header("allow") or "").split(",") if m.strip()}


def audit(name, r, kind, route, status=None, peer=None):
    AUDIT.append((name, r, kind, route, status if status is not None else r.status, peer))


def marker():
    """A number sleep(1) accepts, unique to this test and call: a block
    running `sleep <marker>` is visible to procs_matching()."""
    MARKS.append(1)
    return "7.%s%03d" % (U, len(MARKS))


def trap_body(m):
    """Markdown whose blocks would leave a `sleep <m>` process if run."""
    return block("bash", "sleep %s" % m) + block("python", "print('ran %s')" % CODE_MARK)


def det_bytes(n, seed=b"codellm-debug-tap"):
    """n deterministic pseudo-random bytes (a sha256 chain); the block
    code below produces the same."""
    out = bytearray()
    h = seed
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h
    return bytes(out[:n])


def gen_block(n):
    """python that writes det_bytes(n) to stdout."""
    return block("python", "import hashlib, sys\nn = %d\nh = b'codellm-debug-tap'\nout = bytearray()\n"
                           "while len(out) < n:\n    h = hashlib.sha256(h).digest()\n    out += h\n"
                           "sys.stdout.buffer.write(bytes(out[:n]))" % n)


HASH_BLOCK = block("python", "import hashlib, sys\nd = sys.stdin.buffer.read()\n"
                             "print(len(d), hashlib.sha256(d).hexdigest())")


# ---- the private journal (section 8) -------------------------------------------------

JOURNALD = None


def start_journal():
    global JOURNALD
    JOURNALD = private_journal()
    t.ok(JOURNALD is not None, "a private journald is listening")


records = journal_records


# ==== 1. hidden without --debug; 405 + Allow with it ==================================

def section1_hidden(plain, dbg):
    """Without --debug the debug routes do not exist: each is exactly the
    404 of an unknown path, and nothing runs. With --debug a wrong method
    is 405 with the route's Allow; unknown /debug/ paths stay 404; the main
    routes are unchanged."""
    unknown = plain.get("/no-such-path")
    ue = unknown.error() or {}
    t.ok(unknown.status == 404 and error_shape(unknown) and ue.get("code") == "not_found",
         "[1] baseline: an unknown path is 404 not_found", short(unknown))
    m = marker()
    body = {"body": trap_body(m), "block": 0}
    cases = [("GET", "/", None, None), ("GET", "/debug/blocks", None, None),
             ("GET", "/debug/blocks?body=" + urllib.parse.quote_plus(block("python", "print(1)")), None, None),
             ("POST", "/debug/blocks", {"body": block("python", "print(1)")}, None),
             ("POST", "/debug/run-block", body, KEY), ("POST", "/debug/run-pipeline", body, KEY),
             ("GET", "/debug/anything", None, None), ("GET", "/debug/run-block", None, KEY),
             ("DELETE", "/", None, None)]
    with Watch("sleep " + m) as w:
        for method, path, b, key in cases:
            r = plain.req(method, path, b, key=key)
            e = r.error() or {}
            t.ok(r.status == 404 and error_shape(r) and
                 (e.get("type"), e.get("code"), e.get("param")) == (ue.get("type"), ue.get("code"), ue.get("param")),
                 "[1] without --debug: %s %s → 404, the same error object as an unknown path"
                 % (method, path.split("?")[0] + ("?body=…" if "?" in path else "")), short(r))
    t.ok(not w.seen, "[1] without --debug: run-block/run-pipeline with a key ran nothing", sorted(w.seen))

    # with --debug: route (404/405) is decided before anything else
    for method, path, allow in [("DELETE", "/", {"GET"}), ("POST", "/", {"GET"}),
                                ("PUT", "/debug/blocks", {"GET", "POST"}),
                                ("DELETE", "/debug/blocks", {"GET", "POST"}),
                                ("GET", "/debug/run-block", {"POST"}),
                                ("PUT", "/debug/run-block", {"POST"}),
                                ("GET", "/debug/run-pipeline", {"POST"})]:
        r = dbg.req(method, path, {"body": "x"} if method in ("PUT", "POST") else None)
        t.ok(r.status == 405 and error_shape(r) and allow_set(r) == allow,
             "[1] --debug: %s %s → 405, Allow: %s" % (method, path, ", ".join(sorted(allow))), short(r))
    for path in ("/debug/anything", "/debug/", "/debug/blocks/extra"):
        expect_error(dbg.get(path), 404, "not_found", "[1] --debug: GET %s → 404 not_found" % path)
    r = dbg.get("/healthz", key=None)
    t.ok(r.status == 200 and (r.json or {}).get("status") == "ok", "[1] --debug: /healthz unchanged (200)", short(r))
    r = dbg.get("/v1/models")
    t.ok(r.status == 200 and (r.json or {}).get("object") == "list", "[1] --debug: /v1/models unchanged (200)",
         short(r))
    expect_error(dbg.get("/v1/models", key=None), 401, "invalid_api_key",
                 "[1] --debug: /v1/models without a key still 401")
    r = dbg.get("/", key=None)
    t.ok(r.status == 200 and (r.header("content-type") or "").startswith("text/html"),
         "[1] --debug: GET / from loopback → 200 text/html (no key needed)", short(r)[:600])
    audit("GET / (page)", r, "nothing", "GET /", 200)


# ==== 2. the loopback rule, with a real non-loopback peer =============================

def pdeathsig():
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def netns_holder():
    """A process holding a new, empty network namespace; returns it once
    the namespace is in place."""
    own = os.readlink("/proc/self/ns/net")
    p = subprocess.Popen(["unshare", "--net", "--", "sleep", "900"], preexec_fn=pdeathsig,
                         stdin=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if os.readlink("/proc/%d/ns/net" % p.pid) != own:
                return p
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError("unshare --net did not make a namespace")


def in_ns(pid, *cmd):
    return subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % pid, "--"] + list(cmd),
                          capture_output=True, timeout=30)


def section2_loopback(holders):
    """Namespaces A and B joined by a veth pair. The handler (--debug)
    listens on 0.0.0.0:PORT in A, so one socket serves 127.0.0.1 and
    198.51.100.1. From B every debug route is 403 loopback_only and runs
    nothing; the main routes answer B; from A over 127.0.0.1 the debug
    routes are served; from A over its own non-loopback address they are
    not (the rule is the peer address, not "the same machine")."""
    host_addrs = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    if not t.ok("198.51.100." not in host_addrs,
                "[2] 198.51.100.0/24 is not in use on the host (else this test would not touch it)", host_addrs):
        return
    a, b = netns_holder(), netns_holder()
    holders += [a, b]
    steps = [(a, "ip", "link", "set", "lo", "up"),
             (a, "ip", "link", "add", "cdbg0", "type", "veth", "peer", "name", "cdbg1", "netns", str(b.pid)),
             (a, "ip", "addr", "add", NET_A + "/24", "dev", "cdbg0"), (a, "ip", "link", "set", "cdbg0", "up"),
             (b, "ip", "link", "set", "lo", "up"),
             (b, "ip", "addr", "add", NET_B + "/24", "dev", "cdbg1"), (b, "ip", "link", "set", "cdbg1", "up")]
    bad = []
    for p, *cmd in steps:
        r = in_ns(p.pid, *cmd)
        if r.returncode:
            bad.append((cmd, r.stderr.decode(errors="replace")))
    if not t.ok(not bad, "[2] namespaces A and B set up, joined by a veth pair (inside them only)", bad):
        return
    with NsServer("netns-debug", a.pid, "--debug", "--timeout", "20") as s:
        P = s.port
        deadline = time.time() + 30       # the veth link needs a moment to come up
        while not can_connect(P, NET_A, b.pid) and time.time() < deadline:
            time.sleep(0.1)
        fromB = dict(addr=NET_A, ns=b.pid)
        r = s.get("/healthz", key=None, **fromB)
        t.ok(r.status == 200 and (r.json or {}).get("status") == "ok",
             "[2] from B (198.51.100.2): GET /healthz → 200 (the path works; main routes serve any peer)", short(r))
        r = s.get("/v1/models", **fromB)
        t.ok(r.status == 200 and (r.json or {}).get("object") == "list",
             "[2] from B: GET /v1/models with the key → 200", short(r))
        r = s.post("/v1/chat/completions", {"model": "codellm", "messages": [
            {"role": "user", "content": block("python", "print(6 * 7)")}]}, **fromB)
        t.ok(r.status == 200 and content(r) == "42\n", "[2] from B: a chat completion runs (main route)",
             short(r))

        m = marker()
        tb = trap_body(m)
        with Watch("sleep " + m) as w:
            r = s.get("/", key=None, **fromB)
            expect_error(r, 403, "loopback_only", "[2] from B: GET / → 403 loopback_only (permission_error)",
                         etype="permission_error")
            r = s.get("/debug/blocks?body=" + urllib.parse.quote_plus(tb), key=None, **fromB)
            expect_error(r, 403, "loopback_only", "[2] from B: GET /debug/blocks?body= → 403 loopback_only")
            r = s.post("/debug/blocks", {"body": tb}, key=None, **fromB)
            expect_error(r, 403, "loopback_only", "[2] from B: POST /debug/blocks → 403 loopback_only")
            rb = s.post("/debug/run-block", {"body": tb, "block": 0}, **fromB)
            expect_error(rb, 403, "loopback_only", "[2] from B: POST /debug/run-block with the right key → 403 loopback_only")
            audit("run-block from B (loopback_only)", rb, "refused", "POST /debug/run-block", 403, NET_B + ":")
            rp = s.post("/debug/run-pipeline", {"body": tb}, **fromB)
            expect_error(rp, 403, "loopback_only",
                         "[2] from B: POST /debug/run-pipeline with the right key → 403 loopback_only")
            audit("run-pipeline from B (loopback_only)", rp, "refused", "POST /debug/run-pipeline", 403, NET_B + ":")
            r = s.post("/debug/run-block", {"body": tb, "block": 0}, key=None, **fromB)
            expect_error(r, 403, "loopback_only", "[2] from B: run-block without a key → 403 loopback_only (peer before auth)")
            r = s.get("/", key=None, headers={"Host": "evil.example:%d" % P}, **fromB)
            expect_error(r, 403, "loopback_only",
                         "[2] from B: GET / with Host evil.example → loopback_only (peer before Host)")
            r = s.req("PUT", "/debug/blocks", {"body": "x"}, key=None, **fromB)
            t.ok(r.status == 405 and error_shape(r), "[2] from B: PUT /debug/blocks → 405 (route before peer)",
                 short(r))
            expect_error(s.get("/debug/nope", key=None, **fromB), 404, "not_found",
                         "[2] from B: GET /debug/nope → 404 (route before peer)")
            # A's own non-loopback address: same machine, not a loopback peer
            r = s.get("/", key=None, addr=NET_A, ns=a.pid)
            expect_error(r, 403, "loopback_only", "[2] from A to its own 198.51.100.1: GET / → 403 loopback_only")
        t.ok(not w.seen, "[2] the refused run-block/run-pipeline ran nothing (no `sleep %s` process ever)" % m,
             sorted(w.seen))

        fromA = dict(addr="127.0.0.1", ns=a.pid)
        r = s.get("/", key=None, **fromA)
        t.ok(r.status == 200 and (r.header("content-type") or "").startswith("text/html") and b"<" in r.body,
             "[2] from A over 127.0.0.1 (the same socket): GET / → 200 text/html", short(r)[:600])
        r = s.post("/debug/blocks", {"body": block("python", "print(1)")}, key=None, **fromA)
        t.ok(r.status == 200 and len((r.json or {}).get("blocks") or []) == 1,
             "[2] from A over 127.0.0.1: POST /debug/blocks → 200", short(r))
        r = s.post("/debug/run-block", {"body": block("python", "print('served')"), "block": 0}, **fromA)
        t.ok(r.status == 200 and (r.json or {}).get("stdout") == "served\n" and (r.json or {}).get("ok") is True,
             "[2] from A over 127.0.0.1: run-block with the key runs the block", short(r))
        t.ok(s.leftovers() == [], "[2] no run directory left by the netns server", s.leftovers())


# ==== 3. the Host header ================================================================

def section3_host(dbg):
    """A loopback peer is not enough: a browser tricked by DNS rebinding
    connects from loopback but names another host. Host must name
    loopback; the check comes before auth and before anything runs."""
    P = dbg.port
    m = marker()
    tb = trap_body(m)
    evil = {"Host": "evil.example:%d" % P}
    with Watch("sleep " + m) as w:
        r = dbg.get("/", key=None, headers=evil)
        expect_error(r, 403, "host_not_allowed", "[3] GET / with Host evil.example:PORT → 403 host_not_allowed")
        audit("GET / Host evil (host_not_allowed)", r, "refused", "GET /", 403)
        r = dbg.get("/debug/blocks?body=" + urllib.parse.quote_plus(tb), key=None, headers=evil)
        expect_error(r, 403, "host_not_allowed", "[3] GET /debug/blocks with Host evil.example → 403 host_not_allowed")
        r = dbg.post("/debug/run-block", {"body": tb, "block": 0}, headers=evil)
        expect_error(r, 403, "host_not_allowed",
                     "[3] run-block with the key and Host evil.example → 403 host_not_allowed")
        r = dbg.post("/debug/run-pipeline", {"body": tb}, headers=evil)
        expect_error(r, 403, "host_not_allowed", "[3] run-pipeline with Host evil.example → 403 host_not_allowed")
        r = dbg.post("/debug/run-block", {"body": tb, "block": 0}, key=None, headers=evil)
        expect_error(r, 403, "host_not_allowed", "[3] run-block without a key, Host evil.example → 403 (Host before auth)")
        for h in ("evil.example", "127.0.0.1.evil.example:%d" % P, "localhost.evil.example:%d" % P,
                  "[::2]:%d" % P, "10.1.2.3:%d" % P):
            expect_error(dbg.get("/", key=None, headers={"Host": h}), 403, "host_not_allowed",
                         "[3] GET / with Host %s → 403 host_not_allowed" % h)
        # no Host at all (HTTP/1.0 allows it) and two Host headers
        r = Resp(raw(P, b"GET / HTTP/1.0\r\n\r\n"))
        expect_error(r, 403, "host_not_allowed", "[3] HTTP/1.0 GET / without a Host → 403 host_not_allowed")
        r = Resp(raw(P, ("GET / HTTP/1.1\r\nHost: localhost:%d\r\nHost: evil.example\r\n\r\n" % P).encode()))
        t.ok(r.status in (400, 403), "[3] GET / with two Host headers is refused", short(r))
    t.ok(not w.seen, "[3] the Host-refused runs ran nothing", sorted(w.seen))
    for h in ("localhost:%d" % P, "127.0.0.1:%d" % P, "[::1]:%d" % P, "localhost", "127.0.0.1",
              "app.localhost:%d" % P, "127.1.2.3:%d" % P):
        r = dbg.get("/", key=None, headers={"Host": h})
        t.ok(r.status == 200 and (r.header("content-type") or "").startswith("text/html"),
             "[3] GET / with Host %s → 200" % h, short(r)[:600])
    r = dbg.post("/debug/run-block", {"body": block("bash", "echo via-localhost"), "block": 0},
                 headers={"Host": "localhost:%d" % P})
    t.ok(r.status == 200 and (r.json or {}).get("stdout") == "via-localhost\n",
         "[3] run-block with Host localhost:PORT and the key runs", short(r))
    r = dbg.get("/healthz", key=None, headers=evil)
    t.ok(r.status == 200, "[3] /healthz with Host evil.example → 200 (main routes have no Host rule)", short(r))


# ==== 4. /debug/blocks ==================================================================

# Line numbers (1-based) of every fence in BODY4; the expected answer is
# written from this table, not from the parser.
BODY4_LINES = [
    "# parse me",                    # 1
    "",                              # 2
    "```python run me",              # 3  block 0 opens (label = first word)
    "print(1+2)",                    # 4  a '+' that must survive form decoding
    "```",                           # 5  block 0 closes
    "some prose, 100% text",         # 6
    "```text",                       # 7  skipped: not an interpreter
    "not code",                      # 8
    "```",                           # 9
    "   ~~~~sh",                     # 10 block 1 opens: 3 spaces indent, ~~~~, alias sh
    "echo 'a ~~~ b'",                # 11
    "~~~",                           # 12 shorter than the opener: content
    "~~~~~",                         # 13 block 1 closes
    "```rb",                         # 14 block 2: ruby (not allowed on this server)
    "puts 1",                        # 15
    "```",                           # 16
    "```",                           # 17 unlabeled: skipped
    "x & y = z",                     # 18
    "```",                           # 19
    "```js",                         # 20 block 3: node (not allowed)
    "console.log(1)",                # 21
    "```",                           # 22
]
BODY4 = "\n".join(BODY4_LINES) + "\n"
WANT4_BLOCKS = [
    {"index": 0, "label": "python", "lang": "python", "program": "python3", "allowed": True,
     "start_line": 3, "end_line": 5},
    {"index": 1, "label": "sh", "lang": "bash", "program": "bash", "allowed": True,
     "start_line": 10, "end_line": 13},
    {"index": 2, "label": "rb", "lang": "ruby", "program": "ruby", "allowed": False,
     "start_line": 14, "end_line": 16},
    {"index": 3, "label": "js", "lang": "node", "program": "node", "allowed": False,
     "start_line": 20, "end_line": 22},
]


def section4_blocks(narrow, max2, nokey):
    """The parse of a body, no key needed, nothing run; GET with a
    form-encoded query gives the same answer as POST."""
    r = narrow.post("/debug/blocks", {"body": BODY4}, key=None)
    j = r.json or {}
    t.ok(r.status == 200 and j.get("object") == "codellm.debug.blocks" and
         (r.header("content-type") or "").startswith("application/json") and bool(r.header("x-request-id")),
         "[4] POST /debug/blocks without a key → 200 codellm.debug.blocks (JSON, x-request-id)", short(r))
    audit("POST /debug/blocks", r, "nothing", "POST /debug/blocks", 200)
    got = [{k: b.get(k) for k in WANT4_BLOCKS[0]} for b in (j.get("blocks") or [])]
    t.eq(got, WANT4_BLOCKS, "[4] blocks: index from 0, label, lang, program, allowed "
                            "(--allowed-programs python,bash), start_line/end_line of the real fences")
    t.ok(all(type(b.get(k)) is int for b in (j.get("blocks") or []) for k in ("index", "start_line", "end_line"))
         and all(type(b.get("allowed")) is bool for b in (j.get("blocks") or [])),
         "[4] index/start_line/end_line are integers, allowed a boolean", j.get("blocks"))
    sk = j.get("skipped_fences") or []
    t.ok(len(sk) == 2 and sk[0] == {"label": "text", "line": 7} and sk[1].get("line") == 17
         and sk[1].get("label") in ("", None),
         "[4] skipped_fences: ```text at line 7, the unlabeled fence at line 17", sk)

    # GET, form-encoded: '+' is a space, %XX a byte; same answer as POST
    q = narrow.get("/debug/blocks?body=" + urllib.parse.quote_plus(BODY4), key=None)
    audit("GET /debug/blocks?body=", q, "nothing", "GET /debug/blocks", 200)
    t.ok(q.status == 200 and q.json == r.json,
         "[4] GET /debug/blocks?body=<quote_plus> → the same answer as POST (spaces as '+', '+' as %2B)",
         "POST %r\nGET  %s" % (r.json, short(q)))
    q2 = narrow.get("/debug/blocks?body=" + urllib.parse.quote(BODY4, safe=""), key=None)
    t.ok(q2.status == 200 and q2.json == r.json, "[4] GET with spaces as %20 → the same answer", short(q2))
    q3 = narrow.get("/debug/blocks?x=1&body=" + urllib.parse.quote_plus(BODY4) + "&y=2", key=None)
    t.ok(q3.status == 200 and q3.json == r.json, "[4] GET with body among other parameters → the same answer",
         short(q3))
    # undecoded '+' would make the label "python+run+me" (not an interpreter)
    raw_plus = "/debug/blocks?body=" + urllib.parse.quote(BODY4, safe="").replace("%20", "+")
    q4 = narrow.get(raw_plus, key=None)
    t.ok(q4.status == 200 and ((q4.json or {}).get("blocks") or [{}])[0].get("label") == "python",
         "[4] GET: '+' decodes to a space (info string \"python run me\" → label python)", short(q4))

    r = nokey.post("/debug/blocks", {"body": block("py", "print(1)")}, key=None)
    t.ok(r.status == 200 and [b.get("lang") for b in (r.json or {}).get("blocks") or []] == ["python"],
         "[4] a server with no key configured still answers /debug/blocks (parse only, no 503)", short(r))
    r = narrow.post("/debug/blocks", {"body": "just prose\n```json\n{}\n```\n"}, key=None)
    t.ok(r.status == 200 and (r.json or {}).get("blocks") == [] and
         (r.json or {}).get("skipped_fences") == [{"label": "json", "line": 2}],
         "[4] a body with no runnable block → 200, blocks [] (json fence skipped at line 2)", short(r))
    r = narrow.post("/debug/blocks", {"body": ""}, key=None)
    t.ok(r.status == 200 and (r.json or {}).get("blocks") == [], "[4] an empty body → 200, blocks []", short(r))

    # --max-blocks 2 (another server)
    two = block("python", "print(1)") + block("bash", "cat")
    r = max2.post("/debug/blocks", {"body": two}, key=None)
    t.ok(r.status == 200 and len((r.json or {}).get("blocks") or []) == 2,
         "[4] --max-blocks 2: two blocks → 200", short(r))
    r = max2.post("/debug/blocks", {"body": two + block("python", "print(3)")}, key=None)
    expect_error(r, 400, "too_many_blocks", "[4] --max-blocks 2: three blocks → 400 too_many_blocks")
    r = max2.get("/debug/blocks?body=" + urllib.parse.quote_plus(two + block("bash", "x")), key=None)
    expect_error(r, 400, "too_many_blocks", "[4] GET with three blocks → 400 too_many_blocks")

    # errors
    r = narrow.req("POST", "/debug/blocks", b'{"body": "x"', key=None)
    expect_error(r, 400, "invalid_json", "[4] truncated JSON → 400 invalid_json")
    audit("POST /debug/blocks bad JSON", r, "refused", "POST /debug/blocks", 400)
    expect_error(narrow.req("POST", "/debug/blocks", b'["body"]', key=None), 400, "invalid_json",
                 "[4] a JSON array → 400 invalid_json")
    expect_error(narrow.req("POST", "/debug/blocks", b'"body"', key=None), 400, "invalid_json",
                 "[4] a JSON string → 400 invalid_json")
    expect_error(narrow.post("/debug/blocks", {}, key=None), 400, "invalid_value",
                 "[4] missing body → 400 param body, invalid_value", param="body")
    expect_error(narrow.post("/debug/blocks", {"body": 5}, key=None), 400, "invalid_value",
                 "[4] body a number → 400 param body", param="body")
    expect_error(narrow.post("/debug/blocks", {"body": ["```python", "x"]}, key=None), 400, "invalid_value",
                 "[4] body an array → 400 param body", param="body")
    expect_error(narrow.post("/debug/blocks", {"body": None}, key=None), 400, "invalid_value",
                 "[4] body null → 400 param body", param="body")
    expect_error(narrow.get("/debug/blocks", key=None), 400, None,
                 "[4] GET without a query → 400 param body", param="body")
    expect_error(narrow.get("/debug/blocks?other=1", key=None), 400, None,
                 "[4] GET without a body parameter → 400 param body", param="body")
    expect_error(narrow.get("/debug/blocks?body=%zz%4", key=None), 400, "invalid_value",
                 "[4] GET with a broken %XX escape → 400 invalid_value", param="body")
    expect_error(narrow.get("/debug/blocks?body=%60%60%60py%0A%00%0A%60%60%60", key=None), 400,
                 "invalid_value", "[4] GET with %00 in the body → 400 param body", param="body")
    expect_error(narrow.get("/debug/blocks?body=%60%60%60py%0A%ff%0A%60%60%60", key=None), 400,
                 "invalid_value", "[4] GET with invalid UTF-8 in the body → 400 param body", param="body")


# ==== 5. /debug/run-block ===============================================================

BLOCK_TYPES = {"object": str, "id": str, "index": int, "label": str, "lang": str, "stdout": str,
               "stdout_bytes": int, "stdout_truncated": bool, "stderr": str, "exit_code": int,
               "signal": int, "ok": bool, "timed_out": bool, "duration_ms": int, "sandbox": dict}

SANDBOX_PROBE = r'''
import json, os, socket
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
                  "seccomp": st["Seccomp"].strip(), "nnp": st["NoNewPrivs"].strip(),
                  "capeff": st["CapEff"].strip(), "pid": os.getpid(), "host": socket.gethostname(),
                  "cwd": os.getcwd(), "env": dict(os.environ), "ifaces": sorted(os.listdir("/sys/class/net"))
                  if os.path.isdir("/sys/class/net") else None,
                  "fds": sorted(os.listdir("/proc/self/fd"))},
                 sort_keys=True))
'''


def run_block(s, body, idx=0, **kw):
    payload = {"body": body, "block": idx}
    for k in ("stdin", "input"):
        if k in kw:
            payload[k] = kw.pop(k)
    return s.post("/debug/run-block", payload, **kw)


def section5_run_block(dbg, narrow, nokey, disabled, tmo, capped):
    m = marker()
    tb = trap_body(m)
    with Watch("sleep " + m) as w:
        r = run_block(dbg, tb, key=None)
        expect_error(r, 401, "invalid_api_key", "[5] run-block without a key → 401 invalid_api_key")
        audit("run-block no key (401)", r, "refused", "POST /debug/run-block", 401)
        expect_error(run_block(dbg, tb, key="wrong-" + KEY), 401, "invalid_api_key",
                     "[5] run-block with a wrong key → 401")
        r = run_block(nokey, tb)
        expect_error(r, 503, None, "[5] run-block on a server without a key file → 503")
        t.eq(r.header("x-should-retry"), "false", "[5] that 503 says x-should-retry: false")
        expect_error(nokey.post("/debug/run-pipeline", {"body": tb}), 503, None,
                     "[5] run-pipeline on a server without a key file → 503")
        expect_error(dbg.post("/debug/run-pipeline", {"body": tb}, key=None), 401, "invalid_api_key",
                     "[5] run-pipeline without a key → 401")
        for idx, what in ((2, "2 (two blocks)"), (-1, "-1"), (99, "99"), ("0", "\"0\" (a string)"),
                          (0.5, "0.5"), (None, "null")):
            expect_error(run_block(dbg, tb, idx), 400, "invalid_value",
                         "[5] block %s → 400 param block, invalid_value" % what, param="block")
        expect_error(dbg.post("/debug/run-block", {"body": tb}), 400, "invalid_value",
                     "[5] block missing → 400 param block", param="block")
        expect_error(dbg.req("POST", "/debug/run-block", b'{"body":', key=KEY), 400, "invalid_json",
                     "[5] run-block with bad JSON → 400 invalid_json")
        expect_error(dbg.post("/debug/run-block", {"block": 0}), 400, "invalid_value",
                     "[5] run-block without body → 400 param body", param="body")
        expect_error(run_block(narrow, block("ruby", "sleep %s" % m)), 403, "program_not_allowed",
                     "[5] a ruby block with --allowed-programs python,bash → 403 program_not_allowed")
        expect_error(run_block(disabled, tb), 403, "execution_disabled",
                     "[5] empty --allowed-programs → 403 execution_disabled")
        r = run_block(dbg, "no fences, only prose\n```text\nsleep %s\n```\n" % m)
        expect_error(r, 400, "no_runnable_block", "[5] a body with no runnable block → 400 no_runnable_block")
    t.ok(not w.seen, "[5] every refused run-block ran nothing", sorted(w.seen))

    # a successful run: exact result fields and types
    body = block("python", "print('zero')") + block("bash", "echo one; cat; echo err-%s >&2" % U)
    r = run_block(dbg, body, 1, stdin="line A\nline B")
    j = r.json or {}
    audit("run-block", r, "ran", "POST /debug/run-block", 200)
    t.ok(r.status == 200 and (r.header("content-type") or "").startswith("application/json") and
         (r.header("connection") or "").lower() == "close", "[5] run-block → 200 JSON, Connection: close", short(r))
    bad_types = {k: type(j.get(k)).__name__ for k, ty in BLOCK_TYPES.items() if type(j.get(k)) is not ty}
    t.ok(not bad_types and "error" in j and j.get("error") is None,
         "[5] result fields have exact types (stdout str, stdout_bytes int, exit_code int, ok bool, "
         "timed_out bool, duration_ms int, error null, …)", "wrong: %r\n%s" % (bad_types, short(r)))
    t.eq((j.get("object"), j.get("id")), ("codellm.debug.block", r.header("x-request-id")),
         "[5] object codellm.debug.block, id = x-request-id")
    t.eq((j.get("index"), j.get("label"), j.get("lang")), (1, "bash", "bash"),
         "[5] block 1 selected: index, label, lang")
    t.eq(j.get("stdout"), "one\nline A\nline B", "[5] only block 1 ran, and stdin reached it")
    t.eq((j.get("exit_code"), j.get("signal"), j.get("ok"), j.get("timed_out"), j.get("stdout_truncated"),
          j.get("stdout_bytes")), (0, 0, True, False, False, len("one\nline A\nline B")),
         "[5] exit_code 0, signal 0, ok, not timed out, not truncated, stdout_bytes")
    t.ok("err-%s" % U in (j.get("stderr") or "") and j.get("duration_ms", -1) >= 0,
         "[5] stderr captured, duration_ms ≥ 0", short(r))

    # each interpreter, stdin into each
    for lang, code in (("python", "import sys\nprint('py:' + sys.stdin.read().upper())"),
                       ("bash", "printf 'sh:%s\\n' \"$(tr a-z A-Z)\""),
                       ("node", "let d='';process.stdin.on('data',c=>d+=c);"
                                "process.stdin.on('end',()=>console.log('js:'+d.toUpperCase()))")):
        r = run_block(dbg, block(lang, code), stdin="hello")
        t.ok(r.status == 200 and (r.json or {}).get("stdout") == "%s:HELLO\n" % {"python": "py", "bash": "sh",
                                                                                "node": "js"}[lang]
             and (r.json or {}).get("ok") is True and (r.json or {}).get("lang") == lang,
             "[5] %s block: stdin in, stdout out, ok" % lang, short(r))

    # the bag
    bagcode = block("python", "import os\np = os.environ.get('FLEET_INPUT')\nprint(p)\n"
                              "print(open(p).read() if p else '-', end='')")
    r = run_block(dbg, bagcode, input={"a": 1, "b": [1, 2], "s": "x y", "n": None})
    t.eq((r.json or {}).get("stdout"), '/work/fleet_input.json\n{"a":1,"b":[1,2],"s":"x y","n":null}',
         "[5] input as an object → /work/fleet_input.json holds its compact JSON")
    raw_bag = 'verbatim {not json} "q"\n  second line\t'
    r = run_block(dbg, bagcode, input=raw_bag)
    t.eq((r.json or {}).get("stdout"), "/work/fleet_input.json\n" + raw_bag,
         "[5] input as a string → written verbatim")
    r = run_block(dbg, bagcode, input=[1, "two", 3.5])
    t.eq((r.json or {}).get("stdout"), '/work/fleet_input.json\n[1,"two",3.5]', "[5] input as an array → compact JSON")
    r = run_block(dbg, bagcode)
    t.eq((r.json or {}).get("stdout"), "None\n-", "[5] no input → no bag, FLEET_INPUT unset")

    # failures are HTTP 200 with ok false
    r = run_block(dbg, block("bash", "echo out; echo bad >&2; exit 3"))
    j = r.json or {}
    t.ok(r.status == 200 and j.get("ok") is False and j.get("exit_code") == 3 and
         isinstance(j.get("error"), str) and "3" in j.get("error") and j.get("stdout") == "out\n" and
         "bad" in (j.get("stderr") or "") and j.get("timed_out") is False,
         "[5] exit 3 → HTTP 200, ok false, exit_code 3, error names 3, stdout/stderr kept", short(r))
    m = marker()
    t0 = time.time()
    r = run_block(tmo, block("bash", "echo started; sleep %s" % m))
    took = time.time() - t0
    j = r.json or {}
    t.ok(r.status == 200 and j.get("timed_out") is True and j.get("ok") is False and
         "timed out" in (j.get("error") or "") and j.get("stdout") == "started\n" and took < 15,
         "[5] --timeout 3 with sleep → 200, timed_out true, ok false, error says timed out (%.1f s)" % took,
         short(r))
    t.ok(wait_gone("sleep " + m, 30), "[5] the timed-out block is gone", procs_matching("sleep " + m))
    r = run_block(capped, block("python", "print('y' * 9999)"))
    j = r.json or {}
    t.ok(r.status == 200 and j.get("stdout") == "y" * 4096 and j.get("stdout_bytes") == 10000 and
         j.get("stdout_truncated") is True and j.get("ok") is False and
         "--max-stdout-bytes" in (j.get("error") or ""),
         "[5] --max-stdout-bytes 4096, 10000 bytes out → stdout cut at 4096, stdout_bytes 10000, "
         "truncated, ok false, error names the option", short(r)[:1000] + "…" + repr(
             {k: v for k, v in j.items() if k != "stdout"}))

    # invalid UTF-8 → U+FFFD (maximal subparts, as Python's errors="replace"), NUL kept
    raw = b"a\xffb\xe2\x82c\x00d\xf0\x9f\x98\x80\xc3"
    r = run_block(dbg, block("python", "import sys\nsys.stdout.buffer.write(%r)" % raw))
    j = r.json or {}
    t.ok(r.status == 200 and j.get("stdout") == raw.decode("utf-8", "replace") and j.get("stdout_bytes") == len(raw),
         "[5] invalid UTF-8 in stdout → U+FFFD per maximal subpart, NUL kept, stdout_bytes counts bytes",
         "got %r\nwant %r" % (j.get("stdout"), raw.decode("utf-8", "replace")))

    # the same sandbox as a chat run
    r = run_block(dbg, block("python", SANDBOX_PROBE))
    c = dbg.post("/v1/chat/completions", {"model": "codellm", "messages": [
        {"role": "user", "content": block("python", SANDBOX_PROBE)}]})
    try:
        dj = json.loads((r.json or {}).get("stdout") or "")
        cj = json.loads(content(c) or "")
    except ValueError:
        dj, cj = {}, {}
    t.ok(dj.get("uid") == NOBODY and dj.get("gid") == NOBODY and dj.get("seccomp") == "2" and
         dj.get("nnp") == "1" and int(dj.get("capeff") or "1", 16) == 0 and dj.get("host") == "codellm" and
         dj.get("cwd") == "/work",
         "[5] the block is sandboxed: uid/gid 65534, Seccomp 2, NoNewPrivs, no capabilities, hostname codellm, "
         "cwd /work", short(r))
    t.ok(dj and dj == cj, "[5] the run-block sandbox probe prints exactly what the same block prints in a "
                          "chat completion (uid, seccomp, env, fds, pid, interfaces…)",
         "run-block: %r\nchat:      %r" % (dj, cj))
    t.eq((r.json or {}).get("sandbox"), field(c, "codellm", "sandbox"),
         "[5] run-block's sandbox object equals the chat completion's")
    t.eq(((r.json or {}).get("sandbox") or {}).get("mode"), "native", "[5] sandbox mode native")


# ==== 6. /debug/run-pipeline ===========================================================

def b64(e):
    try:
        return base64.b64decode((e or {}).get("data_b64") or "", validate=True)
    except Exception:
        return None


def section6_pipeline(dbg, tap8m, tap1000, capped):
    """The whole pipeline with every edge tapped: edge i is exactly what
    block i printed and block i+1 read."""
    body = (block("python", "import os, sys\ndata = sys.stdin.read()\nprint('got:' + data.strip())\n"
                            "print('bag:' + open(os.environ['FLEET_INPUT']).read())") +
            block("bash", "tr a-z A-Z; echo mid-%s >&2" % U) +
            block("python", "import sys\ns = sys.stdin.read()\nprint(len(s))\nprint(s[::-1], end='')"))
    e0 = 'got:hello\nbag:{"k":"v"}\n'
    e1 = e0.upper()
    final = "%d\n%s" % (len(e1), e1[::-1])
    r = dbg.post("/debug/run-pipeline", {"body": body, "stdin": "hello\n", "input": {"k": "v"}})
    audit("run-pipeline", r, "ran", "POST /debug/run-pipeline", 200)
    j = r.json or {}
    t.ok(r.status == 200 and j.get("object") == "codellm.debug.pipeline" and j.get("id") == r.header("x-request-id"),
         "[6] run-pipeline → 200 codellm.debug.pipeline, id = x-request-id", short(r))
    t.eq((j.get("stdout"), j.get("stdout_bytes"), j.get("stdout_truncated"), j.get("exit_code"), j.get("ok"),
          j.get("timed_out"), j.get("error")), (final, len(final), False, 0, True, False, None),
         "[6] top level: stdout is the last block's, exit 0, ok, error null")
    bl = j.get("blocks") or []
    t.eq([(b.get("index"), b.get("label"), b.get("lang"), b.get("exit_code"), b.get("ok"), b.get("timed_out"))
          for b in bl], [(0, "python", "python", 0, True, False), (1, "bash", "bash", 0, True, False),
                         (2, "python", "python", 0, True, False)],
         "[6] per-block results: index, label, lang, exit_code, ok, timed_out")
    t.ok(len(bl) == 3 and all(type(b.get("duration_ms")) is int and type(b.get("stdout_bytes")) is int and
                              type(b.get("signal")) is int and isinstance(b.get("stderr"), str) for b in bl)
         and [b.get("stdout_bytes") for b in bl] == [len(e0), len(e1), len(final)],
         "[6] per-block duration_ms, signal, stderr, stdout_bytes (bytes produced)", bl)
    t.ok(len(bl) == 3 and "mid-%s" % U in (bl[1].get("stderr") or ""), "[6] block 1's stderr is its own", bl)
    ed = j.get("edges") or []
    t.eq([(e.get("from"), e.get("to")) for e in ed], [(0, 1), (1, 2)], "[6] n-1 edges, from i to i+1")
    t.ok(len(ed) == 2 and b64(ed[0]) == e0.encode() and ed[0].get("text") == e0 and ed[0].get("bytes") == len(e0)
         and ed[0].get("truncated") is False,
         "[6] edge 0 = block 0's stdout (stdin and bag reached block 0): data_b64, text, bytes, not truncated", ed)
    t.ok(len(ed) == 2 and b64(ed[1]) == e1.encode() and ed[1].get("text") == e1 and ed[1].get("bytes") == len(e1),
         "[6] edge 1 = block 1's stdout", ed)
    t.eq(j.get("max_tap_bytes"), 1048576, "[6] max_tap_bytes defaults to --max-stdout-bytes (1 MiB)")
    t.ok(isinstance(j.get("sandbox"), dict) and j["sandbox"].get("mode") == "native", "[6] sandbox object, native",
         j.get("sandbox"))

    # pipefail: a failing middle block
    r = dbg.post("/debug/run-pipeline", {"body": block("python", "print('x')") +
                                         block("bash", "cat; exit 4") + block("bash", "cat")})
    j = r.json or {}
    bl = j.get("blocks") or [{}, {}, {}]
    t.ok(r.status == 200 and j.get("exit_code") == 4 and j.get("ok") is False and bl[1].get("exit_code") == 4 and
         bl[1].get("ok") is False and bl[2].get("ok") is True and j.get("stdout") == "x\n" and
         "4" in (j.get("error") or "") and [e.get("text") for e in j.get("edges") or []] == ["x\n", "x\n"],
         "[6] a middle block exits 4 → 200, exit_code 4 (pipefail), ok false, edges still tapped", short(r))
    r = dbg.post("/debug/run-pipeline", {"body": "prose only\n"})
    expect_error(r, 400, None, "[6] run-pipeline of a body with no runnable block → 400")

    # a 5 MiB binary edge under --max-tap-bytes 8M
    n = 5 * 2 ** 20
    data = det_bytes(n)
    t0 = time.time()
    r = tap8m.post("/debug/run-pipeline", {"body": gen_block(n) + HASH_BLOCK})
    took = time.time() - t0
    j = r.json or {}
    ed = (j.get("edges") or [{}])[0]
    printed = (j.get("stdout") or "").split()
    kept = b64(ed)
    t.eq(printed, [str(n), hashlib.sha256(data).hexdigest()],
         "[6] 5 MiB edge: block 1 read all 5 MiB of the generator's bytes (length and sha256)")
    t.ok(r.status == 200 and ed.get("bytes") == n and ed.get("truncated") is False and kept is not None and
         len(kept) == n and len(printed) == 2 and hashlib.sha256(kept).hexdigest() == printed[1],
         "[6] 5 MiB edge: bytes 5242880, not truncated, data_b64 decodes to exactly what block 1 hashed (%.1f s)"
         % took, {k: (v if k not in ("data_b64", "text") else "%d chars" % len(v or "")) for k, v in ed.items()})
    t.ok(isinstance(ed.get("text"), str) and ed.get("text") == data.decode("utf-8", "replace"),
         "[6] 5 MiB edge: text is the same bytes as UTF-8 with U+FFFD (valid JSON string)",
         "text %d chars, want %d" % (len(ed.get("text") or ""), len(data.decode("utf-8", "replace"))))
    t.eq(j.get("max_tap_bytes"), 8 * 2 ** 20, "[6] max_tap_bytes reports --max-tap-bytes 8M")

    # a small tap cap: the tap keeps the first 1000 bytes, the pipe carries all
    n = 10000
    data = det_bytes(n)
    r = tap1000.post("/debug/run-pipeline", {"body": gen_block(n) + HASH_BLOCK})
    j = r.json or {}
    ed = (j.get("edges") or [{}])[0]
    t.ok(r.status == 200 and ed.get("bytes") == n and ed.get("truncated") is True and b64(ed) == data[:1000] and
         ed.get("text") == data[:1000].decode("utf-8", "replace") and j.get("max_tap_bytes") == 1000,
         "[6] --max-tap-bytes 1000: bytes 10000, data_b64 = the first 1000 bytes sent, text likewise, truncated",
         short(r)[:1500])
    t.eq((j.get("stdout") or "").split(), [str(n), hashlib.sha256(data).hexdigest()],
         "[6] --max-tap-bytes 1000: the pipe itself is not cut (block 1 read all 10000 bytes)")

    # default cap = --max-stdout-bytes
    r = capped.post("/debug/run-pipeline", {"body": gen_block(n) + HASH_BLOCK})
    j = r.json or {}
    ed = (j.get("edges") or [{}])[0]
    t.ok(r.status == 200 and j.get("max_tap_bytes") == 4096 and ed.get("bytes") == n and
         ed.get("truncated") is True and b64(ed) == data[:4096] and
         (j.get("stdout") or "").split() == [str(n), hashlib.sha256(data).hexdigest()] and j.get("ok") is True,
         "[6] --max-stdout-bytes 4096, no --max-tap-bytes: max_tap_bytes 4096, edge keeps 4096 of 10000, "
         "truncated; the run is ok", short(r)[:1500])


# ==== 7. the control plane from inside (class 14) ======================================

def reach_code(ports):
    lines = ["import errno, json, socket",
             "def c(fam, addr):",
             "    s = socket.socket(fam, socket.SOCK_STREAM)",
             "    s.settimeout(3)",
             "    try:",
             "        s.connect(addr)",
             "        return 'ok:connected'",
             "    except OSError as e:",
             "        return errno.errorcode.get(e.errno, 'E?') if e.errno else 'exc:' + str(e)",
             "    finally:",
             "        s.close()",
             "R = {}"]
    for name, p in ports.items():
        lines += ["R['%s@127.0.0.1'] = c(socket.AF_INET, ('127.0.0.1', %d))" % (name, p),
                  "R['%s@0.0.0.0'] = c(socket.AF_INET, ('0.0.0.0', %d))" % (name, p),
                  "R['%s@[::1]'] = c(socket.AF_INET6, ('::1', %d))" % (name, p)]
    lines.append("print(json.dumps(R, sort_keys=True))")
    return block("python", "\n".join(lines))


def section7_control_plane(dbg, plain):
    """A block can reach neither the debug port (P) nor the service port
    (Q), through run-block, run-pipeline or a chat completion; the test
    itself reaches both, so the failure is the sandbox's doing."""
    P, Q = dbg.port, plain.port
    t.ok(can_connect(P) and can_connect(Q) and dbg.get("/healthz", key=None).status == 200 and
         plain.get("/healthz", key=None).status == 200,
         "[7] the test itself reaches the debug port P and the service port Q (both /healthz 200)")
    code = reach_code({"debug": P, "service": Q, "debug-default-8090": 8090})

    def judged(r, out, how):
        try:
            res = json.loads(out or "")
        except ValueError:
            res = {}
        t.ok(r.status == 200 and len(res) == 9 and all(v in FAILS_NET for v in res.values()),
             "[7] %s: every connect to 127.0.0.1/0.0.0.0/[::1] on P, Q, 8090 fails at once, and the answer "
             "arrived" % how, "%r\n%s" % (res, short(r)[:800]))

    r = run_block(dbg, code)
    judged(r, (r.json or {}).get("stdout"), "run-block on the debug server")
    r = dbg.post("/debug/run-pipeline", {"body": code + block("bash", "cat")})
    judged(r, (r.json or {}).get("stdout"), "run-pipeline on the debug server")
    r = plain.post("/v1/chat/completions", {"model": "codellm", "messages": [{"role": "user", "content": code}]})
    judged(r, content(r), "chat completion on the plain server")
    t.ok(can_connect(P) and can_connect(Q), "[7] both ports still serve afterwards")


# ==== 8. audit ==========================================================================

def section8_audit():
    """Each debug request gave exactly one journal record (found by its
    x-request-id) with the contract's MESSAGE_ID, route and status; runs
    say mode debug; the loopback refusal names the real peer; no record
    holds the key or code."""
    # each record goes out after its answer's end: read until all are in
    rids = [r.header("x-request-id") for _, r, _, _, _, _ in AUDIT]
    recs = records(until=lambda rs: all(any(x.get("CODELLM_REQUEST_ID") == i for x in rs) for i in rids),
                   wait=30)
    for name, r, kind, route, status, peer in AUDIT:
        rid = r.header("x-request-id")
        mine = [x for x in recs if rid and x.get("CODELLM_REQUEST_ID") == rid]
        x = mine[0] if len(mine) == 1 else {}
        good = (len(mine) == 1 and x.get("MESSAGE_ID") == KIND_ID[kind] and x.get("CODELLM_ROUTE") == route and
                x.get("CODELLM_STATUS") == str(status) and
                (kind != "ran" or x.get("CODELLM_MODE") == "debug") and
                (peer is None or (x.get("CODELLM_PEER") or "").startswith(peer)))
        t.ok(good, "[8] %s: one record, MESSAGE_ID \"%s\", CODELLM_ROUTE \"%s\", status %s%s%s"
             % (name, kind, route, status, ", mode debug" if kind == "ran" else "",
                ", peer %s…" % peer if peer else ""),
             "x-request-id %r: %d record(s)\n%r" % (rid, len(mine), {k: v for k, v in x.items()
                                                                     if k.startswith(("CODELLM_", "MESSAGE_ID",
                                                                                      "PRIORITY"))}))
    blob = json.dumps(recs)
    t.ok(KEY not in blob, "[8] no record holds the key")
    t.ok(CODE_MARK not in blob and "python run me" not in blob,
         "[8] no record holds code (not even from a GET /debug/blocks?body= query string)")


# ==== 9. nothing left behind ============================================================

def section9_leftovers(holders, links_before):
    t.ok(LEFT and all(not left for _, left, _ in LEFT),
         "[9] no run directory left in any server's TMPDIR (%d servers)" % len(LEFT),
         [(n, left) for n, left, _ in LEFT if left])
    t.ok(LEFT and all(not pids for _, _, pids in LEFT),
         "[9] no handler process left under any server after its requests",
         [(n, pids) for n, _, pids in LEFT if pids])
    tmps = [s.tmp for s in SERVERS]
    alive = [(p, d) for d in tmps for p in procs_matching(d)]
    t.ok(not alive, "[9] after stop, no process of any server remains", alive)
    t.ok(not any(procs_matching("sleep 7.%s" % U)), "[9] no marker `sleep` ever left running",
         procs_matching("sleep 7.%s" % U))
    t.ok(all(not os.path.exists("/proc/%d/ns" % p.pid) for p in holders),
         "[9] the namespace holders are gone (the namespaces and the veth pair with them)",
         [p.pid for p in holders])
    links_after = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    t.eq(strip_stats(links_after), strip_stats(links_before), "[9] the host's interfaces are unchanged")


def strip_stats(links):
    """interface names of `ip -o link` output"""
    return sorted(ln.split(":")[1].strip() for ln in links.splitlines() if ln.count(":") >= 2)


# ==== main ==============================================================================

def main():
    links_before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    holders = []
    try:
        if CAN_PRIV:
            start_journal()
        with DServer("plain") as plain, \
                DServer("debug", "--debug", "--timeout", "30") as dbg, \
                DServer("narrow", "--debug", allowed="python,bash") as narrow, \
                DServer("max2", "--debug", "--max-blocks", "2") as max2, \
                DServer("nokey", "--debug", key=False) as nokey, \
                DServer("disabled", "--debug", allowed=None) as disabled, \
                DServer("timeout3", "--debug", "--timeout", "3") as tmo, \
                DServer("stdout4096", "--debug", "--max-stdout-bytes", "4096") as capped:
            section1_hidden(plain, dbg)
            if CAN_PRIV and shutil.which("nsenter") and shutil.which("ip"):
                section2_loopback(holders)
            else:
                t.skip("[2] the loopback rule from a second network namespace", "needs root, unshare, nsenter, ip")
            section3_host(dbg)
            section4_blocks(narrow, max2, nokey)
            section5_run_block(dbg, narrow, nokey, disabled, tmo, capped)
            with DServer("tap8M", "--debug", "--max-tap-bytes", "8M") as tap8m, \
                    DServer("tap1000", "--debug", "--max-tap-bytes", "1000") as tap1000:
                section6_pipeline(dbg, tap8m, tap1000, capped)
            section7_control_plane(dbg, plain)
        if CAN_PRIV:
            section8_audit()
        else:
            t.skip("[8] journal records of debug requests", "needs root and unshare(1)")
    finally:
        for p in holders:
            if p.poll() is None:
                p.kill()
            p.wait()
        kill_leftovers("sleep 7.%s" % U)
        if JOURNALD is not None:
            JOURNALD.terminate()
            try:
                JOURNALD.wait(5)
            except subprocess.TimeoutExpired:
                JOURNALD.kill()
    section9_leftovers(holders, links_before)
    t.diag("took %.1f s" % (time.time() - T0))
    t.done()


main()
