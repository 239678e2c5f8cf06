#!/usr/bin/env python3
"""Fail closed (SPEC §7): a layer that cannot be applied refuses the run in
native mode, is reported in besteffort, and is absent on purpose with off;
--probe and /healthz tell the same story; and the shared network namespace.

A layer is taken away by putting tests/helpers/deny-syscalls in front of
the handler: its seccomp filter (inherited by the handler and everything
it starts) makes the calls a layer needs fail:
  landlock_create_ruleset,_add_rule,_restrict_self  -> "landlock"
  prctl(PR_SET_SECCOMP, ...)                        -> "seccomp"
  sethostname                                       -> "utsns"
  pivot_root                                        -> "root"
  prctl(PR_SET_NO_NEW_PRIVS) -> "no_new_privs" (landlock, seccomp with it)
  prctl(PR_CAPBSET_DROP)     -> "caps"
  prlimit64 setting a limit  -> "rlimits"
  clone with CLONE_NEWCGROUP / NEWNET / NEWPID     -> that namespace
  unshare/clone with CLONE_NEWIPC (the handler makes each block's IPC
      namespace itself, to bound its SysV limits)   -> "ipcns"
  execveat (the block's first process becomes the clean codellm-init)
                                                    -> "init"
  setresuid to the run slot's own uid (root handler) -> "ucounts"
A non-root handler with supplementary groups        -> "groups"
Landlock ABI 5 (deny-syscalls --landlock-abi 5) with --sandbox-network
                                                    -> "landlock"
  unshare/clone with CLONE_NEWUSER                  -> "workdir" (the
      first layer needing a user namespace: the request's own tmpfs)

"Nothing ran" is proven without host files (a sandboxed block cannot
write any): the refused request holds a block that would run
`sleep <unique>` (longer than the run's --timeout 20), and no such
process may ever appear while the request is handled; the answer is a
503 head (never a 200 head first) and fast: well within 10 s, where a
run of the block would take the whole 20 s.

The shared network namespace: one empty namespace (lo down) held by an
`unshare --net sleep` process of this test, which every handler joins
through an `nsenter --net` wrapper, as the systemd holder unit's
namespace is joined by every per-connection service. The holder gets
SIGKILL as its parent-death signal and is killed at the end: the
namespace dies with it. The host's interfaces are never touched.
"""
import ctypes
import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
T0 = time.time()
DENY = os.path.join(TOP, "tests", "helpers", "deny-syscalls")
U = str(os.getpid())
ALL_LAYERS = ["userns", "pidns", "mountns", "netns", "ipcns", "utsns", "cgroupns",
              "workdir", "groups", "ucounts", "root", "proc", "init", "rlimits",
              "no_new_privs", "caps", "landlock", "seccomp"]
LANDLOCK_CALLS = "landlock_create_ruleset,landlock_add_rule,landlock_restrict_self"
MARKS = []


# ---- helpers ------------------------------------------------------------------

def wrapper(cmd):
    return handler_wrapper(cmd, "codellm-failclosed-")


def deny_cmd(rules, err=None):
    return [DENY] + (["--errno", str(err)] if err else []) + [rules, "--"]


def one(lang, code):
    return block(lang, code)


def sandbox_of(r):
    return field(r, "codellm", "sandbox") or {}


def error_of(r):
    return r.error() or {}


def probe(cmd_prefix=(), *args):
    p = subprocess.run(list(cmd_prefix) + [HANDLER, "--probe"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    try:
        j = json.loads(p.stdout.decode())
    except ValueError:
        j = None
    return p.returncode, j, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def healthz(s):
    r = s.request("GET", "/healthz", key=None)
    return r, (r.json or {})


def consistent(sb):
    """No layer both applied and missing; together they are every layer
    (the network layer may be left out on purpose when net is not own)."""
    layers, missing = sb.get("layers") or [], sb.get("missing") or []
    both = set(layers) & set(missing)
    union = set(layers) | set(missing)
    # without a netns of its own a block is on the handler's network:
    # on purpose (shared, --sandbox-network) netns is in neither list, and
    # when besteffort could not create one it is missing
    ok_union = union == set(ALL_LAYERS) or (
        sb.get("net") != "own" and union == set(ALL_LAYERS) - {"netns"})
    return not both and ok_union and len(layers) == len(set(layers)) \
        and len(missing) == len(set(missing))


def refused_run(s, layer, tag):
    """A request whose blocks would leave a trace (a `sleep` process with a
    unique argument; a python block): it must be refused before any
    header, naming `layer`, with nothing run."""
    # a number sleep(1) accepts, unique to this request; were the block
    # run, it would last until the run's --timeout (20 s)
    MARKS.append(tag)
    marker = "57.%s%03d" % (U, len(MARKS))
    body = one("bash", "sleep %s" % marker) + one("python", "print('ran')")
    with Watch("sleep " + marker) as w:
        t0 = time.time()
        r = s.run(body)
        took = time.time() - t0
    e = error_of(r)
    t.ok(r.status == 503 and r.raw.startswith(b"HTTP/1.1 503 ") and not r.interim,
         "%s: native refuses with a 503 head, no 200 head first" % tag, repr(r)[:800])
    t.eq(e.get("code"), "sandbox_unavailable", "%s: error.code is sandbox_unavailable" % tag)
    t.ok(('layer "%s"' % layer) in (e.get("message") or ""),
         "%s: the message names the layer \"%s\"" % (tag, layer), e.get("message"))
    t.eq(r.header("x-should-retry"), "false", "%s: x-should-retry: false" % tag)
    t.ok(not w.seen and took < 10.0,
         "%s: nothing ran (no `sleep %s` process ever, answer in %.2f s)" % (tag, marker, took),
         "seen %r" % sorted(w.seen))
    return r


def besteffort_run(s, tag, want_missing, exact=True):
    """A python run under besteffort: it runs, and reports what is missing."""
    r = s.run(one("python", "print('ran', 6 * 7)"))
    sb = sandbox_of(r)
    t.ok(r.status == 200 and content(r) == "ran 42\n",
         "%s: besteffort runs the code" % tag,
         "status %s content %r stderr %r\n%r" % (r.status, content(r), field(r, "codellm", "stderr"),
                                                 r.body[:600]))
    if exact:
        t.eq(sb.get("missing"), want_missing, "%s: sandbox.missing is exactly %r" % (tag, want_missing))
    else:
        m = sb.get("missing") or []
        t.ok(m and all(x in m for x in want_missing),
             "%s: sandbox.missing is non-empty and holds %r" % (tag, want_missing), repr(sb))
    t.ok(not (set(want_missing) & set(sb.get("layers") or [])) and consistent(sb),
         "%s: layers and missing are consistent (disjoint, every layer in one)" % tag, repr(sb))
    t.eq(sb.get("mode"), "besteffort", "%s: sandbox.mode is besteffort" % tag)
    names = ", ".join(sb.get("missing") or ["?"])
    line = "--sandbox besteffort: running without: %s" % names
    log = s.log_text()
    t.ok(any(ln.endswith(": " + line) for ln in log.splitlines()),
         "%s: the handler logs \"%s\"" % (tag, line), log[-2000:])
    return r


def ensure_helper():
    if not os.access(DENY, os.X_OK):
        subprocess.run(["make", "-s", "-C", TOP, "tests/helpers/deny-syscalls"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.access(DENY, os.X_OK)


# ---- preconditions ----------------------------------------------------------------

if not t.ok(ensure_helper(), "tests/helpers/deny-syscalls is built (make check builds it)"):
    t.done()

rc, base, out, err = probe()
t.ok(rc == 0 and isinstance(base, dict) and base.get("available") is True,
     "--probe: exit 0 and \"available\": true on this host", "rc %s\n%s\n%s" % (rc, out, err))
NATIVE_WORKS = rc == 0
if NATIVE_WORKS:
    t.ok(base.get("mode") == "native" and base.get("userns") is True and
         isinstance(base.get("landlock_abi"), int) and base["landlock_abi"] >= 3 and
         base.get("seccomp") is True and isinstance(base.get("cgroup2"), bool),
         "--probe: JSON has mode native, userns true, landlock_abi >= 3, seccomp true, cgroup2",
         out)
    sb = base.get("sandbox") or {}
    t.ok(sb.get("layers") == ALL_LAYERS and sb.get("missing") == [] and
         sb.get("net") in ("own", "shared") and "failed_layer" not in base,
         "--probe: every layer applies, none missing, no failed_layer", out)
    t.ok("can run code" in err, "--probe: says so on stderr", err)

# the helper itself: really denies, sets no_new_privs, keeps fork working
p = subprocess.run([DENY, LANDLOCK_CALLS, "--", "python3", "-c",
                    "import ctypes, os; l = ctypes.CDLL(None, use_errno=True); "
                    "r = l.syscall(444, 0, 0, 1); "
                    "print(r, ctypes.get_errno(), open('/proc/self/status').read().count('NoNewPrivs:\\t1'))"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
t.eq(p.stdout.decode().split(), ["-1", str(errno.ENOSYS), "1"],
     "deny-syscalls: landlock_create_ruleset fails with ENOSYS, no_new_privs is set")
p = subprocess.run([DENY, "--errno", "1", "clone-newuser", "--", "sh", "-c",
                    "unshare -U true 2>/dev/null; echo $?; (echo forked); "
                    "unshare -i true 2>/dev/null; echo $?"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
t.eq(p.stdout.decode().split(), ["1", "forked", "0" if os.geteuid() == 0 else "1"],
     "deny-syscalls clone-newuser: unshare -U fails, fork (and, as root, unshare -i) still work")
p = subprocess.run([DENY, "--errno", "1", "prctl:0=22", "--", "python3", "-c",
                    "import ctypes; l = ctypes.CDLL(None, use_errno=True); "
                    "print(l.prctl(22, 2, 0, 0, 0), ctypes.get_errno(), l.prctl(21, 0, 0, 0, 0))"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
t.eq(p.stdout.decode().split(), ["-1", str(errno.EPERM), "2"],
     "deny-syscalls NAME:ARG=VALUE: prctl(PR_SET_SECCOMP) fails with EPERM, PR_GET_SECCOMP works")
p = subprocess.run([DENY, "no_such_call", "--", "true"], stderr=subprocess.PIPE, timeout=30)
t.eq(p.returncode, 2, "deny-syscalls: an unknown name is a usage error (exit 2)")

if not NATIVE_WORKS:
    t.skip("fail-closed checks", "the native sandbox cannot run on this host")
    t.done()


# ---- a layer taken away: native refuses, besteffort reports -------------------------

# tag, rule for deny-syscalls, errno, the layer native names, what
# besteffort misses (exactly, or at least when the tag is in INEXACT)
CASES = [
    ("landlock", LANDLOCK_CALLS, None, "landlock", ["landlock"]),
    ("seccomp", "prctl:0=22", 1, "seccomp", ["seccomp"]),          # PR_SET_SECCOMP
    ("utsns", "sethostname", None, "utsns", ["utsns"]),
    ("root", "pivot_root", None, "root", ["root", "proc"]),          # proc needs the root
    ("no_new_privs", "prctl:0=38", 1, "no_new_privs",                 # PR_SET_NO_NEW_PRIVS
     ["no_new_privs", "landlock", "seccomp"]),                        # both need it
    ("caps", "prctl:0=24", 1, "caps", ["caps"]),                      # PR_CAPBSET_DROP
    ("rlimits", "prlimit64:2!=0", 1, "rlimits", ["rlimits"]),         # setting a limit
    ("ipcns", "clone:0&0x08000000,unshare:0&0x08000000", 1, "ipcns", ["ipcns"]),  # CLONE_NEWIPC
    ("init", "execveat", None, "init", ["init"]),
    ("cgroupns", "clone:0&0x02000000", 1, "cgroupns", ["cgroupns"]),  # CLONE_NEWCGROUP
    ("netns", "clone:0&0x40000000", 1, "netns", ["netns"]),           # CLONE_NEWNET
    ("pidns", "clone:0&0x20000000", 1, "pidns", ["pidns"]),           # CLONE_NEWPID
]
INEXACT = {"pidns"}   # a private /proc needs a PID namespace: proc may go too

for tag, rules, e, layer, missing in CASES:
    w = wrapper(deny_cmd(rules, e))
    # AddressSanitizer's runtime sets RLIMIT_CORE itself at start (and
    # aborts when it cannot): under `make sanitize` it must leave core
    # limits alone where setting limits is what the test denies
    env = None
    if tag == "rlimits" and "ASAN_OPTIONS" in os.environ:
        env = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":disable_coredump=0"}
    with Server("--timeout", "20", handler=w, env=env) as s:
        refused_run(s, layer, tag)
        # the same refusal through a single python block
        r = s.run(one("python", "print('ran')"))
        t.ok(r.status == 503 and ('layer "%s"' % layer) in (error_of(r).get("message") or ""),
             "%s: a lone python block is refused naming \"%s\" too" % (tag, layer), repr(r)[:600])
        if tag == "landlock":
            h, hj = healthz(s)
            t.ok(h.status == 503 and h.header("x-should-retry") == "false" and
                 hj.get("status") == "unavailable",
                 "landlock: /healthz is 503, status unavailable, x-should-retry: false",
                 repr(h)[:800])
            hs = hj.get("sandbox") or {}
            t.ok(hs.get("available") is False and hs.get("failed_layer") == "landlock",
                 "landlock: /healthz sandbox.available false, failed_layer landlock", repr(hs))
        t.ok("sandbox setup failed" in s.log_text() or "sandbox unavailable" in s.log_text(),
             "%s: the refusal is logged" % tag, s.log_text()[-1000:])
        t.ok(not s.leftovers(), "%s: no run directory left after refusals" % tag)
    with Server("--timeout", "20", handler=w, sandbox="besteffort", env=env) as s:
        r = besteffort_run(s, tag, missing, exact=tag not in INEXACT)
        t.ok(layer not in (sandbox_of(r).get("layers") or []),
             "%s: sandbox.layers lacks \"%s\"" % (tag, layer), repr(sandbox_of(r)))
        if tag == "landlock":
            h, hj = healthz(s)
            hs = hj.get("sandbox") or {}
            t.ok(h.status == 200 and hs.get("available") is True and
                 (hs.get("sandbox") or {}).get("missing") == ["landlock"],
                 "landlock: besteffort /healthz is 200 with sandbox.sandbox.missing [\"landlock\"]",
                 repr(h)[:800])
        if tag == "netns":
            # without a namespace of its own the block is in the handler's
            # (here the host's): the report must not say "own"
            r = s.run(one("python", "import os; print(os.stat('/proc/self/ns/net').st_ino)"))
            ino = (content(r) or "").strip()
            in_host = ino == str(os.stat("/proc/self/ns/net").st_ino)
            t.ok(r.status == 200 and not (in_host and sandbox_of(r).get("net") == "own"),
                 "netns: besteffort does not report net \"own\" for a block in the handler's namespace",
                 "block netns inode %s (host's: %s), reported %r" % (ino, in_host, sandbox_of(r)))
            # the filter allows netlink route sockets only in a block's
            # own namespace: rebuilt without them when netns is dropped
            r = s.run(one("python", "import socket\ntry:\n"
                          "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close(); print('ok')\n"
                          "except OSError as e:\n    print(e.errno)"))
            t.ok(r.status == 200 and (content(r) or "").strip() == "97",
                 "netns: besteffort on the handler's network refuses netlink route sockets (EAFNOSUPPORT)",
                 repr(r)[:600])
        if tag == "utsns":
            # the report is honest: without the UTS namespace the
            # hostname is not the sandbox's
            r = s.run(one("python", "import socket; print(socket.gethostname())"))
            t.ok(r.status == 200 and content(r) not in ("codellm\n", None),
                 "utsns: besteffort block really has no UTS namespace (hostname %r)" % content(r))

# no user namespace: the first layer needing one is the request's workdir
w = wrapper(deny_cmd("clone-newuser", 1))
with Server("--timeout", "20", handler=w) as s:
    r = refused_run(s, "workdir", "userns")
with Server("--timeout", "20", handler=w, sandbox="besteffort") as s:
    r = besteffort_run(s, "userns", ["userns", "workdir"], exact=False)
    sb = sandbox_of(r)
    t.ok("userns" not in (sb.get("layers") or []) and "workdir" not in (sb.get("layers") or []),
         "userns: besteffort sandbox.layers lacks userns and workdir", repr(sb))
    # a root handler without a user namespace still drops the block to nobody
    if os.geteuid() == 0:
        r = s.run(one("python", "import os; print(os.getuid(), os.getgid())"))
        t.eq(content(r), "65534 65534\n", "userns: besteffort block of a root handler runs as 65534")
    t.ok(not s.leftovers(), "userns: besteffort run directory (on disk) removed")


# ---- the run's own uid, supplementary groups, a lower Landlock ABI -------------------

# ucounts: a root handler cannot become its run slot's uid (setresuid to
# exactly that uid fails): the run would share its per-user kernel limits
if os.geteuid() == 0:
    w = wrapper(deny_cmd("setresuid:0=3000000", 1))
    with Server("--timeout", "20", "--slot-uid-base", "3000000", "--max-concurrent", "1",
                handler=w) as s:
        refused_run(s, "ucounts", "ucounts")
        t.ok(not s.leftovers(), "ucounts: no run directory left after the refusal")
    with Server("--timeout", "20", "--slot-uid-base", "3000000", "--max-concurrent", "1",
                handler=w, sandbox="besteffort") as s:
        besteffort_run(s, "ucounts", ["ucounts"])
    # and where it can, the blocks are that uid on the host (slot 0 of 1).
    # The block's sleep outlasts the run's --timeout: it ends when this
    # test, having read its uid, kills it (the --timeout is the backstop)
    with Server("--timeout", "20", "--slot-uid-base", "3000000", "--max-concurrent", "1") as s:
        import concurrent.futures as cf
        with cf.ThreadPoolExecutor(1) as ex:
            held = "sleep 51.%s92" % U
            fut = ex.submit(s.run, one("bash", held + " || true"))
            pids = wait_procs(held, 30)
            uids = []
            for p in pids:
                try:
                    with open("/proc/%d/status" % p) as f:
                        uids += [ln.split()[1] for ln in f if ln.startswith("Uid:")]
                except OSError:
                    pass
            kill_leftovers(held)
            r = fut.result()
        t.ok(uids and all(u == "3000000" for u in uids) and r.status == 200,
             "ucounts: a root handler's block runs as its slot's own uid on the host (3000000)",
             (uids, r))
else:
    for d in ("ucounts refused", "ucounts besteffort", "ucounts own uid"):
        t.skip(d, "needs root")

# the new options' bounds: out of range is the operator's mistake (503
# server_misconfigured, nothing runs); at the edge they hold
for args, what in ((("--shm-bytes", "63K"), "--shm-bytes below 64K"),
                   (("--shm-bytes", "2T"), "--shm-bytes above 1T"),
                   (("--slot-uid-base", "4294963198"), "--slot-uid-base past 4294963197"),
                   (("--slot-uid-base", "-1"), "--slot-uid-base -1")):
    with Server("--timeout", "20", *args) as s:
        r = s.run(one("python", "print('ran')"))
        t.ok(r.status == 503 and error_of(r).get("code") == "server_misconfigured",
             "options: %s is a configuration error (503 server_misconfigured)" % what, repr(r)[:300])
SHM_FILL = ("import errno\nn = 0\ntry:\n    with open('/dev/shm/f', 'wb') as f:\n"
            "        while n < 1 << 20:\n            f.write(b'x' * 4096); f.flush(); n += 4096\n"
            "except OSError as e:\n    print(n, errno.errorcode[e.errno])\n")
with Server("--timeout", "20", env={"CODELLM_SHM_BYTES": "64K"}) as s:
    r = s.run(one("python", SHM_FILL))
    t.eq(content(r), "65536 ENOSPC\n",
         "options: CODELLM_SHM_BYTES=64K (the least): /dev/shm takes 64 KiB, then ENOSPC")
if os.geteuid() == 0:
    # --slot-uid-base 0: a root handler's runs share root's uid, and each
    # run's user namespace gets 1/N of the per-user limits (here 4)
    INOTIFY_PY = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nn = 0\n"
                  "while n < 1000 and libc.inotify_init() >= 0:\n    n += 1\n"
                  "print(n)\n")
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        share = int(f.read()) // 4
    with Server("--timeout", "20", "--slot-uid-base", "0", "--max-concurrent", "4") as s:
        r = s.run(one("python", INOTIFY_PY))
        got = (content(r) or "").split()
        # other root processes may hold some of root's instances: at most
        # the run's share, never the uid's whole limit
        t.ok(len(got) == 1 and 0 < int(got[0]) <= share
             and "ucounts" in (sandbox_of(r).get("layers") or []),
             "options: --slot-uid-base 0 shares root's uid; the run gets at most its share of "
             "inotify instances, %d (1/4): it got %s" % (share, got[:1]), repr(r)[:500])
else:
    t.skip("options: --slot-uid-base 0 shares root's uid", "needs root")

GROUPS_PY = ("print([ln.split()[1:] for ln in open('/proc/self/status')"
             " if ln.startswith('Groups:')][0])")

# groups: a non-root handler keeps its supplementary groups (a block would
# read what they grant): native refuses, besteffort says so
if os.geteuid() == 0 and shutil.which("setpriv"):
    with unprivileged_server("--timeout", "20", uid=4243, groups=(4, 4243)) as s:
        refused_run(s, "groups", "groups")
    with unprivileged_server("--timeout", "20", uid=4243, groups=(4,), sandbox="besteffort") as s:
        besteffort_run(s, "groups", ["groups"])
    # without supplementary groups the same non-root handler runs, every
    # layer applied (its runs share the uid: ucounts is their share)
    with unprivileged_server("--timeout", "20", uid=4243) as s:
        r = s.run(one("python", GROUPS_PY))
        sb = sandbox_of(r)
        t.ok(r.status == 200 and sb.get("layers") == ALL_LAYERS and sb.get("missing") == [],
             "groups: a non-root handler without groups runs with every layer", repr(sb))
        t.eq(content(r), "[]\n", "groups: the block has no supplementary group")
    # a root handler with supplementary groups drops them
    w = wrapper(["setpriv", "--groups=4,27", "--"])
    with Server("--timeout", "20", handler=w) as s:
        r = s.run(one("python", GROUPS_PY))
        t.ok(r.status == 200 and content(r) == "[]\n" and
             "groups" in (sandbox_of(r).get("layers") or []),
             "groups: a root handler started with groups 4,27 drops them; the block has none",
             repr(r)[:600])
else:
    for d in ("groups refused", "groups besteffort", "groups none", "groups dropped"):
        t.skip(d, "needs root and setpriv")

# --sandbox-network on a kernel whose Landlock cannot scope abstract unix
# sockets (ABI < 6): the block would reach the host's (D-Bus, X11,
# container shims). Forced here by answering ABI 5 to the version query.
w = wrapper([DENY, "--landlock-abi", "5", "--"])
rc, j, out, err = probe([DENY, "--landlock-abi", "5", "--"], "--sandbox-network")
t.ok(rc == 1 and isinstance(j, dict) and j.get("failed_layer") == "landlock" and
     j.get("landlock_abi") == 5,
     "abi5: --probe --sandbox-network at Landlock ABI 5: exit 1, failed_layer landlock", out + err)
with Server("--timeout", "20", "--sandbox-network", handler=w) as s:
    r = refused_run(s, "landlock", "abi5-network")
    t.ok("ABI 6" in (error_of(r).get("message") or ""),
         "abi5: the refusal says Landlock ABI 6 is needed", error_of(r))
with Server("--timeout", "20", "--sandbox-network", handler=w, sandbox="besteffort") as s:
    r = s.run(one("python", "print('ran', 6 * 7)"))
    sb = sandbox_of(r)
    t.ok(r.status == 200 and content(r) == "ran 42\n" and sb.get("missing") == ["landlock"] and
         "landlock" not in (sb.get("layers") or []) and sb.get("net") == "host",
         "abi5: besteffort --sandbox-network runs, landlock reported missing, net host", repr(sb))
with Server("--timeout", "20", handler=w) as s:
    r = s.run(one("python", "print('ran', 6 * 7)"))
    sb = sandbox_of(r)
    t.ok(r.status == 200 and sb.get("net") == "own" and sb.get("missing") == [],
         "abi5: without --sandbox-network a block has its own network namespace, nothing missing",
         repr(sb))


# ---- --probe ----------------------------------------------------------------------

rc, j, out, err = probe(deny_cmd(LANDLOCK_CALLS))
t.ok(rc == 1 and isinstance(j, dict) and j.get("available") is False and
     j.get("failed_layer") == "landlock",
     "--probe under the Landlock denial: exit 1, available false, failed_layer landlock",
     "rc %s\n%s\n%s" % (rc, out, err))
t.ok(isinstance(j, dict) and "landlock" in (j.get("error") or "") and "cannot run code" in err,
     "--probe under the Landlock denial: the error names it, stderr says cannot", out + err)
rc, j, out, err = probe(deny_cmd(LANDLOCK_CALLS), "--sandbox", "besteffort")
t.ok(rc == 0 and isinstance(j, dict) and j.get("available") is True and
     (j.get("sandbox") or {}).get("missing") == ["landlock"],
     "--probe --sandbox besteffort under the denial: exit 0, missing [\"landlock\"]", out + err)
rc, j, out, err = probe(deny_cmd("sethostname"))
t.ok(rc == 1 and isinstance(j, dict) and j.get("failed_layer") == "utsns",
     "--probe under a sethostname denial: exit 1, failed_layer utsns", out + err)
for args in (["--sandbox", "bogus"], ["--no-such-option"], ["extra-argument"]):
    rc, j, out, err = probe((), *args)
    t.ok(rc == 2 and out == "" and "configuration error" in err,
         "--probe %s: configuration error, exit 2, nothing on stdout" % " ".join(args),
         "rc %s stdout %r stderr %r" % (rc, out[:300], err[:300]))
# the option that is wrong may come before --probe, too
p = subprocess.run([HANDLER, "--sandbox", "bogus", "--probe"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
t.ok(p.returncode == 2 and p.stdout == b"",
     "--sandbox bogus --probe: exit 2 and no HTTP answer on stdout (probe is a one-shot command)",
     "rc %s stdout %r" % (p.returncode, p.stdout[:300]))


# ---- /healthz normally ---------------------------------------------------------------

with Server("--timeout", "20") as s:
    h, hj = healthz(s)
    hs = hj.get("sandbox") or {}
    t.ok(h.status == 200 and hj.get("status") == "ok" and hs.get("available") is True and
         "failed_layer" not in hs,
         "/healthz: 200, status ok, sandbox.available true", repr(h)[:800])
    # the default: the host's network namespace has interfaces -> "own"
    t.eq((hs.get("sandbox") or {}).get("net"), "own", "/healthz in the host's namespace: net \"own\"")
    r = s.run(one("python", "import os; print(os.stat('/proc/self/ns/net').st_ino)"))
    sb = sandbox_of(r)
    t.eq((sb.get("net"), "netns" in (sb.get("layers") or []), sb.get("missing")),
         ("own", True, []), "a run in the host's namespace: net own, netns applied, nothing missing")
    host_ino = os.stat("/proc/self/ns/net").st_ino
    t.ok(r.status == 200 and (content(r) or "").strip().isdigit() and
         int(content(r)) != host_ino,
         "net own: the block's network namespace is not the host's", repr(content(r)))


# ---- --sandbox off ---------------------------------------------------------------------

with Server("--timeout", "20", sandbox="off") as s:
    r1 = s.run(one("python", "print('off one')"))
    r2 = s.run(one("bash", "echo off two"))
    sb = sandbox_of(r1)
    t.ok(r1.status == 200 and content(r1) == "off one\n" and content(r2) == "off two\n",
         "off: harmless blocks run", repr(r1)[:600])
    t.eq((sb.get("mode"), sb.get("layers"), sb.get("net")), ("off", [], "host"),
         "off: sandbox.mode off, layers [], net host")
    t.eq(sandbox_of(r2), sb, "off: the second run reports the same")
    lines = [ln for ln in s.log_text().splitlines()
             if ln.endswith(": --sandbox off: blocks run without confinement")]
    t.eq(len(lines), 2, "off: the handler logs \"--sandbox off: blocks run without confinement\" once per run")
    h, hj = healthz(s)
    t.ok(h.status == 200 and (hj.get("sandbox") or {}).get("mode") == "off" and
         ((hj.get("sandbox") or {}).get("sandbox") or {}).get("net") == "host",
         "off: /healthz 200, mode off, net host", repr(h)[:600])


# ---- the shared network namespace -------------------------------------------------------

def pdeathsig():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG


NET_PROBE = r'''
import errno, fcntl, json, os, socket, struct
res = {}
res["ino"] = os.stat("/proc/self/ns/net").st_ino
with open("/proc/net/dev") as f:
    res["ifaces"] = sorted(l.split(":")[0].strip() for l in f.readlines()[2:])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ifr = struct.pack("16sH14x", b"lo", 0)
flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]      # SIOCGIFFLAGS
res["lo_up"] = bool(flags & 1)
try:
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1 | 0x40))  # SIOCSIFFLAGS
    res["set_up"] = "ok"
except OSError as e:
    res["set_up"] = errno.errorcode[e.errno]
try:
    s.sendto(b"x", ("127.0.0.1", 9))
    res["udp"] = "ok"
except OSError as e:
    res["udp"] = errno.errorcode[e.errno]
c = socket.socket()
c.settimeout(2)
try:
    c.connect(("127.0.0.1", 9))
    res["tcp"] = "ok"
except OSError as e:
    res["tcp"] = errno.errorcode.get(e.errno, str(e))
print(json.dumps(res))
'''

ABSTRACT = "codellm-shared-test-" + U
# A listens and counts every connection it accepts until one says
# "outside": the test's own process, which connects only after run B has
# finished. A stops on that message, not after an interval of its own, so
# B surely tried while A listened (the run's --timeout is the backstop).
LISTENER = r'''
import socket, json
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0%s")
srv.listen(8)
# the same domain reaches its own socket: abstract sockets work here
me = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
me.connect("\0%s")
srv.accept()[0].close()
n = 0
while True:
    c = srv.accept()[0]
    n += 1
    said = b""
    while True:
        b = c.recv(64)
        if not b:
            break
        said += b
    c.close()
    if said == b"outside":
        break
print(json.dumps({"self": "ok", "others": n}))
''' % (ABSTRACT, ABSTRACT)
# B runs once A listens (the test saw A's socket); should the socket not
# be listening yet it retries on ECONNREFUSED. Landlock's scope answers
# EPERM, a missing scope lets it connect
CONNECTOR = r'''
import socket, time, errno, json
end = time.time() + 10
res = "none"
while time.time() < end:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect("\0%s")
        res = "ok"
        break
    except OSError as e:
        res = errno.errorcode[e.errno]
        if e.errno != errno.ECONNREFUSED:
            break
    finally:
        c.close()
    time.sleep(0.05)
print(json.dumps({"connect": res}))
''' % ABSTRACT


def run_json(s, code):
    r = s.run(one("python", code))
    try:
        return r, json.loads(content(r))
    except (TypeError, ValueError):
        return r, {}


if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
    t.skip("shared network namespace", "needs root, unshare and nsenter")
else:
    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"],
                              preexec_fn=pdeathsig, stdin=subprocess.DEVNULL)
    try:
        ns_path = "/proc/%d/ns/net" % holder.pid
        deadline = time.time() + 30          # a backstop: unshare takes milliseconds
        host_ino = os.stat("/proc/self/ns/net").st_ino
        while time.time() < deadline and os.stat(ns_path).st_ino == host_ino:
            time.sleep(0.01)
        shared_ino = os.stat(ns_path).st_ino
        t.ok(shared_ino != host_ino, "shared: the holder has a network namespace of its own")
        enter = ["nsenter", "--net=" + ns_path, "--"]
        w = wrapper(enter)

        rc, j, out, err = probe(enter, "--share-netns")
        t.ok(rc == 0 and isinstance(j, dict) and (j.get("sandbox") or {}).get("net") == "shared",
             "shared: --probe --share-netns in the empty namespace says net \"shared\"", out + err)

        # without --share-netns a block gets its own namespace even here,
        # so programs that use loopback work (the default)
        with Server("--timeout", "20", handler=w) as s:
            h, hj = healthz(s)
            t.eq(((hj.get("sandbox") or {}).get("sandbox") or {}).get("net"), "own",
                 "the empty namespace without --share-netns: /healthz net \"own\"")
            r, res = run_json(s, "import os, json, socket\n"
                                 "a = socket.socket(); a.bind(('127.0.0.1', 0)); a.listen()\n"
                                 "b = socket.create_connection(a.getsockname())\n"
                                 "print(json.dumps({'ino': os.stat('/proc/self/ns/net').st_ino, 'lo': 'ok'}))")
            t.ok(r.status == 200 and sandbox_of(r).get("net") == "own" and
                 res.get("ino") not in (None, shared_ino) and res.get("lo") == "ok",
                 "without --share-netns: the run has a namespace of its own, loopback works", repr(res))

        with Server("--timeout", "20", "--share-netns", handler=w) as s:
            h, hj = healthz(s)
            hsb = (hj.get("sandbox") or {}).get("sandbox") or {}
            t.ok(h.status == 200 and hsb.get("net") == "shared" and "netns" not in hsb.get("missing", ["?"]),
                 "shared: /healthz 200, net \"shared\", netns not missing", repr(h)[:800])
            r, res = run_json(s, NET_PROBE)
            sb = sandbox_of(r)
            t.eq((r.status, sb.get("net")), (200, "shared"), "shared: the run's sandbox.net is \"shared\"")
            t.ok("netns" not in (sb.get("missing") or ["?"]) and "netns" not in (sb.get("layers") or []) and
                 sb.get("missing") == [] and consistent(sb),
                 "shared: netns is neither applied nor missing; nothing else missing", repr(sb))
            t.eq(res.get("ino"), shared_ino, "shared: the block is in the holder's namespace (same inode)")
            t.eq(res.get("ifaces"), ["lo"], "shared: the block sees only lo")
            t.eq(res.get("lo_up"), False, "shared: lo is down")
            t.eq(res.get("set_up"), "EPERM", "shared: SIOCSIFFLAGS (bring lo up) fails with EPERM")
            t.eq(res.get("udp"), "ENETUNREACH", "shared: UDP to 127.0.0.1 fails with ENETUNREACH")
            t.ok(res.get("tcp") not in (None, "ok"), "shared: TCP connect to 127.0.0.1 fails (%s)"
                 % res.get("tcp"), repr(res))
            # lo is still down after the attempt, seen from outside
            p = subprocess.run(enter + ["ip", "-o", "link", "show"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=10)
            links = p.stdout.decode().splitlines()
            t.ok(p.returncode == 0 and len(links) == 1 and links[0].split()[1] == "lo:" and
                 "UP" not in links[0].split("<", 1)[1].split(">", 1)[0].split(","),
                 "shared: the namespace still has only lo, down (seen from outside)",
                 p.stdout + p.stderr)

            # two concurrent runs: no channel through an abstract socket.
            # Run B starts once run A listens: its socket is seen
            # listening (flags __SO_ACCEPTCON) in the namespace's
            # /proc/net/unix, read without connecting
            got = {}

            def a():
                got["a"] = run_json(s, LISTENER)

            def a_listens():
                try:
                    with open("/proc/%d/net/unix" % holder.pid) as f:
                        return any(ln.split()[3:4] == ["00010000"] and ln.split()[-1] == "@" + ABSTRACT
                                   for ln in f.readlines()[1:])
                except OSError:
                    return False

            th = threading.Thread(target=a)
            th.start()
            deadline = time.time() + 30      # a backstop: A listens within its run's start
            while time.time() < deadline and th.is_alive() and not a_listens():
                time.sleep(0.02)
            listening = a_listens()
            rb, jb = run_json(s, CONNECTOR)
            # an unsandboxed process in the same namespace does reach A's
            # socket; its message ends run A
            p = subprocess.run(enter + ["python3", "-c",
                                        "import socket; c = socket.socket(socket.AF_UNIX); "
                                        "c.connect('\\0%s'); c.sendall(b'outside'); print('ok')" % ABSTRACT],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
            outside = p.stdout.decode().strip() or "no"
            th.join(60)
            ra, ja = got.get("a", (None, {}))
            t.ok(listening and ra is not None and ra.status == 200 and ja.get("self") == "ok",
                 "shared: run A listens on an abstract socket (and reaches it itself)",
                 repr(ra)[:600])
            t.eq(outside, "ok", "shared: the abstract socket exists in the shared namespace (an outside process connects)")
            t.eq(jb.get("connect"), "EPERM",
                 "shared: run B cannot connect to run A's abstract socket (Landlock scope: EPERM)")
            t.eq(ja.get("others"), 1, "shared: run A was reached by the outside process only")
            t.ok(not s.leftovers(), "shared: no run directory left")

        with Server("--timeout", "20", "--sandbox-network", "--share-netns", handler=w) as s:
            h, hj = healthz(s)
            t.eq(((hj.get("sandbox") or {}).get("sandbox") or {}).get("net"), "host",
                 "shared + --sandbox-network: /healthz net \"host\"")
            r, res = run_json(s, "import os, json; print(json.dumps({'ino': os.stat('/proc/self/ns/net').st_ino}))")
            sb = sandbox_of(r)
            t.ok(r.status == 200 and sb.get("net") == "host" and "netns" not in (sb.get("missing") or ["?"]),
                 "shared + --sandbox-network: the run's net is \"host\", netns not missing", repr(sb))
            t.eq(res.get("ino"), shared_ino, "--sandbox-network: the block uses the handler's namespace")

        # the same namespace with lo up is not empty: each block gets its own
        subprocess.run(enter + ["ip", "link", "set", "lo", "up"], check=False, timeout=10)
        with Server("--timeout", "20", "--share-netns", handler=w) as s:
            h, hj = healthz(s)
            t.eq(((hj.get("sandbox") or {}).get("sandbox") or {}).get("net"), "own",
                 "--share-netns, but a namespace with lo up is not empty: net \"own\"")
            r, res = run_json(s, "import os, json; print(json.dumps({'ino': os.stat('/proc/self/ns/net').st_ino}))")
            t.ok(r.status == 200 and sandbox_of(r).get("net") == "own" and
                 res.get("ino") not in (None, shared_ino),
                 "lo up: the run gets a namespace of its own", repr(res))
    finally:
        holder.kill()
        holder.wait()

remove_wrappers()
t.diag("runtime %.1f s" % (time.time() - T0))
t.done()
