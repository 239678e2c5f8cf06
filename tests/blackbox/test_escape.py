#!/usr/bin/env python3
"""The escape battery (THREATS.md, classes 1-19) through the real handler,
--sandbox native.

Every case is a real code block, sent over a socket to the real
codellm-handler behind systemd-socket-activate, doing what an attacker
would do. Each TAP line asserts both halves: the attack failed (with the
exact evidence: an errno, a SIGSYS kill, a limit hit, a path absent) AND
the response still arrived (HTTP 200 with a well-formed completion, or
the status the case expects). The class number is in every description.

Many probes share one block, which prints a JSON dict of results; probes
that get the process killed (int 0x80, x32) run in a forked child inside
the block. Slow cases (timeouts, concurrent runs) run in threads.

Run it with CODELLM_MUST_SANDBOX=1 so that a case this host cannot run
counts as a failure, never as a silent pass.
"""
import atexit
import base64
import concurrent.futures
import json
import re
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
T_START = time.time()
# unique per test process: markers in sleep lengths, IPC keys, names
U = "%06d" % (os.getpid() % 1000000)
SECRET = "s3cr3t-" + U + "-e1b0f7"
ALL_LAYERS = ["userns", "pidns", "mountns", "netns", "ipcns", "utsns", "cgroupns",
              "workdir", "groups", "ucounts", "root", "proc", "init", "rlimits",
              "no_new_privs", "caps", "landlock", "seccomp"]
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=8)

# errno numbers (x86-64 Linux), as the blocks report them by name
FAILS_NET = {"EACCES", "EPERM", "ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL", "EHOSTUNREACH"}


# ---- the code that runs inside blocks -----------------------------------------------

# Helpers every python probe block starts with: a raw syscall, errno names,
# running a probe in a forked child (for probes that get killed), and
# running raw x86-64 machine code from an executable mapping.
PRELUDE = r'''
import ctypes, errno, fcntl, json, mmap, os, signal, socket, stat, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.shmat.restype = ctypes.c_void_p

def sc(nr, *a):
    """a raw system call: its result, or -errno"""
    conv = [ctypes.c_ulong(x & 0xffffffffffffffff) if isinstance(x, int) else x for x in a]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    return r if r != -1 else -ctypes.get_errno()

def en(e):
    """errno name of a -errno result (or 'ok:<value>')"""
    if isinstance(e, int) and e < 0:
        return errno.errorcode.get(-e, "E%d" % -e)
    return "ok:%r" % (e,)

def tryf(f):
    """'ok:<repr>' or the errno name of the OSError raised"""
    try:
        return "ok:" + repr(f())[:300]
    except OSError as e:
        return errno.errorcode.get(e.errno, "E%s" % e.errno) if e.errno else "OSError:" + str(e)[:80]
    except Exception as e:
        return "exc:%s:%s" % (type(e).__name__, str(e)[:100])

def in_child(fn):
    """fn() in a forked child: {'sig': N} when it was killed by a signal,
    else {'exit': N, 'out': fn()}"""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = json.dumps(fn())
        except BaseException as e:
            out = json.dumps("exc:%r" % (e,))
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return {"sig": os.WTERMSIG(st)}
    return {"exit": os.WEXITSTATUS(st), "out": json.loads(data) if data else None}

def machine_code(code):
    """a callable running raw x86-64 bytes from a PROT_EXEC mapping"""
    m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                  prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    f = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    f.keep = m
    return f

# mov eax, 20 (i386 getpid); int 0x80; ret
INT80_GETPID = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"
# mov eax, 0x40000027 (x32 getpid); syscall; ret
X32_GETPID = b"\xb8\x27\x00\x00\x40\x0f\x05\xc3"

def ipc(r):
    """a SysV IPC call's result: 'ok:<id>' or the errno name"""
    return "ok:%d" % r if r >= 0 else en(-ctypes.get_errno())

def connect_err(family, addr, kind=socket.SOCK_STREAM, timeout=2.0):
    s = socket.socket(family, kind)
    s.settimeout(timeout)
    t0 = time.time()
    try:
        s.connect(addr)
        return "ok:connected"
    except socket.timeout:
        return "TIMEOUT"
    except OSError as e:
        return errno.errorcode.get(e.errno, "E%s" % e.errno)
    finally:
        s.close()

R = {}
'''

EPILOGUE = "\nprint(json.dumps(R))\n"


def host_has_ia32():
    """Does this kernel run i386 code at all? An int 0x80 getpid in a
    plain python3 on the host, outside any sandbox: without IA32
    emulation it dies by SIGSEGV before seccomp could see the call."""
    probe = PRELUDE + "machine_code(INT80_GETPID)()\n"
    return subprocess.run([sys.executable, "-c", probe]).returncode != -signal.SIGSEGV


# the signal an int 0x80 dies by inside a block, and why
INT80_SIG, INT80_WHY = ((signal.SIGSYS, "process killed by SIGSYS") if host_has_ia32() else
                        (signal.SIGSEGV, "process dies by SIGSEGV: this host has no IA32 emulation "
                         "(int 0x80 dies by SIGSEGV outside the sandbox too)"))


def pyblock(body):
    return block("python", PRELUDE + body + EPILOGUE)


def diag_of(r, extra=None):
    if r is None:
        return "no response"
    d = "status %s body %r" % (r.status, r.body[:1500])
    if extra is not None:
        d = "%r\n%s" % (extra, d)
    return d


def case(r, cond, desc, evidence=None):
    """One TAP line: the attack failed (cond) and the response arrived."""
    ok = completion_ok(r)
    try:
        c = bool(cond() if callable(cond) else cond)
    except Exception as e:  # a missing key is a failed case, not a crash
        c = False
        evidence = "%r (%r)" % (evidence, e)
    return t.ok(ok and c, desc, diag_of(r, evidence))


get = dig


def mb_ok(res, cap=256):
    """an in_child() memory probe was held to the cap: killed by a limit
    (a signal), or the MiB it could hold stay within the cap"""
    if isinstance(res, dict) and res.get("sig"):
        return True
    mb = get(res, "out", "mb")
    return isinstance(mb, int) and mb <= cap


def not_refused(res):
    """an in_child() memory probe was not refused by the seccomp layer:
    shared memory is bounded, not refused (SPEC §0)"""
    return get(res, "out", "err") not in ("ENOSYS", "EPERM")


def bg(fn, *a, **kw):
    return POOL.submit(fn, *a, **kw)


def wait_held(fut, pattern):
    """Waits until a process matching `pattern` (a block's marker `sleep`
    that outlasts its run's --timeout) exists, or the run `fut` is over
    (the backstop); returns the PIDs found. The test kills the sleep
    when it has checked what it wanted while the block waited there."""
    while True:
        p = procs_matching(pattern)
        if p or fut.done():
            return p
        time.sleep(0.02)


class HWM:
    """Samples the peak RSS (VmHWM) of every handler of a server (the
    direct children of systemd-socket-activate) while a request runs."""

    def __init__(self, server):
        self.server = server
        self.peak_kb = 0
        self.seen = set()
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def sample(self):
        """one look at every handler now (the loop's, or the test's own
        at a moment it chose)"""
        for p in children_of(self.server.proc.pid):
            try:
                with open("/proc/%d/status" % p) as f:
                    for ln in f:
                        if ln.startswith("VmHWM:"):
                            self.peak_kb = max(self.peak_kb, int(ln.split()[1]))
                            self.seen.add(p)
            except (OSError, ValueError):
                pass

    def loop(self):
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.01)

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.th.join()


# ---- servers --------------------------------------------------------------------------

# Which handler the battery attacks: root (what `make run` as root starts;
# each run then gets its slot's own uid) or, with CODELLM_ESCAPE_AS=nonroot,
# a system user without capabilities or supplementary groups, as the
# shipped unit runs it (runs then share that uid). make check runs both.
AS_NONROOT = os.environ.get("CODELLM_ESCAPE_AS") == "nonroot"
ESC_UID = 4244
if AS_NONROOT and os.geteuid() != 0:
    t.skip("escape battery against a non-root handler", "the tests must run as root to start one")
    t.done()


# With CODELLM_ESCAPE_ENV=NAME every run of the battery is on the
# environment NAME (from CODELLM_TEST_ENVDIR, build/envs by default):
# each class holds as well against a block whose system trees are an
# environment's (make check runs it on "minimal", which has every
# language the battery uses).
ESC_ENV = os.environ.get("CODELLM_ESCAPE_ENV")
ESC_ENVDIR = os.environ.get("CODELLM_TEST_ENVDIR", os.path.join(TOP, "build", "envs"))
if ESC_ENV and not os.path.isfile(os.path.join(ESC_ENVDIR, ESC_ENV, "manifest.json")):
    t.ok(False, "the environment %s is built in %s (make envs)" % (ESC_ENV, ESC_ENVDIR))
    t.done()


def mkserver(*args, **kw):
    if ESC_ENV:
        args = args + ("--environments", ESC_ENVDIR)
        kw.setdefault("model", ESC_ENV)
    if AS_NONROOT:
        return unprivileged_server(*args, uid=ESC_UID, **kw)
    return Server(*args, **kw)


creds = tempfile.mkdtemp(prefix="codellm-esc-creds-")
with open(os.path.join(creds, "api-key"), "w") as f:
    f.write(KEY + "\n")
if AS_NONROOT:
    # as LoadCredential= does: the service's user reads its credentials
    os.chown(creds, ESC_UID, ESC_UID)
    os.chown(os.path.join(creds, "api-key"), ESC_UID, ESC_UID)
# the key comes from $CREDENTIALS_DIRECTORY/api-key (no --api-key-file on
# the command line), beside a secret in the environment and the variables
# systemd sets; it serves the debug routes too (--debug), so the port the
# blocks try in class 14 is a live service and debug port at once
MAIN = mkserver("--timeout", "20", "--debug", key=False, sandbox="native",
              env={"SECRET_TOKEN": SECRET, "CREDENTIALS_DIRECTORY": creds,
                   "INVOCATION_ID": "0123456789abcdef" + U, "CODELLM_MAX_BLOCKS": "16"})
# LIM and SHM test the per-process limits, which a run's cgroup (half of
# --memory-max by default) would otherwise reach first: its own bound is
# tests/blackbox/test_usage.py's
LIM = mkserver("--timeout", "10", "--sandbox", "native", "--max-procs", "64", "--memory-max", "256M",
               "--run-memory-max", "4G",
               "--workdir-bytes", "8M", "--workdir-inodes", "200", "--max-stdout-bytes", "1M",
               "--max-file-bytes", "1M")
KILLSRV = mkserver("--timeout", "30", sandbox="native")
# the wall timeout case of class 2: --timeout 6, long enough that four
# daemons have started before it, also under load
T3 = mkserver("--timeout", "6", "--max-stdout-bytes", "1M", sandbox="native")
# shared memory, each kind held to its own bound (class 12/18); its
# --timeout 20 is far above the timeout_s 3 a request sets in class 12
SHM = mkserver("--timeout", "20", "--sandbox", "native", "--memory-max", "256M", "--run-memory-max", "4G",
               "--address-space-max", "1G", "--max-file-bytes", "1M", "--shm-bytes", "16M",
               "--max-open-files", "64")
# per-user kernel limits between concurrent runs (class 17): 4 slots
UC = mkserver("--timeout", "20", "--sandbox", "native", "--max-concurrent", "4")
SERVERS = (MAIN, LIM, KILLSRV, T3, SHM, UC)
for srv in SERVERS:
    srv.start()


def _cleanup():
    """also when the file dies half-way: no socket-activate or temp dir left"""
    for srv in SERVERS:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.stop()
    shutil.rmtree(creds, ignore_errors=True)


atexit.register(_cleanup)

# ---- the guard: nothing below runs unless every server really sandboxes ----------------
# The probes below mount, write /proc/sys, ptrace and signal PID 1, fork-bomb
# and fill memory: harmless in the sandbox, damaging to the host if a block
# ran bare (--sandbox off, or CODELLM_SANDBOX=off in the environment). So
# first prove, per server, that a block is confined, and bail out if not.
GUARD = """
st = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
R['uid'] = os.getuid()
R['cwd'] = os.getcwd()
R['seccomp'] = st.get("Seccomp", "").strip()
R['pidns_init'] = os.getppid() == 1
"""
guard_ok = True
for name, srv in (("MAIN", MAIN), ("LIM", LIM), ("KILLSRV", KILLSRV), ("T3", T3), ("SHM", SHM),
                  ("UC", UC)):
    rg_ = srv.run(pyblock(GUARD))
    G = jcontent(rg_) or {}
    sbg = field(rg_, "codellm", "sandbox") or {}
    good = (completion_ok(rg_) and sbg.get("mode") == "native" and sbg.get("missing") == []
            and G.get("uid") == NOBODY and G.get("cwd") == "/work" and G.get("seccomp") == "2"
            and G.get("pidns_init") is True)
    guard_ok &= t.ok(good, "[15 fail-open] guard (%s): a block runs native, confined (uid 65534, "
                     "/work, seccomp, PID ns), missing []" % name, diag_of(rg_, G))
if not guard_ok:
    print("Bail out! a block is not sandboxed: the escape probes would hit the host")
    for srv in SERVERS:
        srv.stop()
    shutil.rmtree(creds, ignore_errors=True)
    sys.exit(1)

# the host files a block must not touch, as they are now
HOST_SHADOW = os.stat("/etc/shadow") if os.path.exists("/etc/shadow") else None
HOST_PASSWD = os.stat("/etc/passwd")


# ---- slow cases, started first and run in the background --------------------------------

# class 2: daemons that must die when the run times out
M2T = "87." + U
daemons_timeout_code = (
    "setsid sleep %s1 &\n"
    "( setsid bash -c 'sleep %s2 & exit 0' ) &\n"
    "nohup sleep %s3 >/dev/null 2>&1 &\n"
    "( trap '' TERM HUP INT; exec sleep %s4 ) &\n"
    "disown -a\n"
    "exec sleep 300\n") % (M2T, M2T, M2T, M2T)


def daemons_timeout():
    """the daemons are looked for as long as the run lasts (it ends only
    by its timeout: the block execs `sleep 300`), however late they start"""
    seen = {}
    t0 = time.time()
    f = bg(T3.run, block("bash", daemons_timeout_code))
    while not f.done() and len(seen) < 4:
        for i in "1234":
            if procs_matching(M2T + i):
                seen[i] = True
        time.sleep(0.05)
    r = f.result()
    return r, seen, time.time() - t0


F_DAEMONS_TIMEOUT = bg(daemons_timeout)

# class 2: everything dies when the handler dies
M2K = "88." + U
handler_death_code = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execv('/bin/sleep', ['sleep', '%s1'])\n"
    "    os._exit(0)\n"
    "if os.fork() == 0:\n"
    "    import signal\n"
    "    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
    "        signal.signal(s, signal.SIG_IGN)\n"
    "    os.execv('/bin/sleep', ['sleep', '%s2'])\n"
    "os.execv('/bin/sleep', ['sleep', '%s3'])\n") % (M2K, M2K, M2K)


def handler_death():
    # generous waits (the sleeps last 88 s; the run's --timeout 30 is the
    # backstop): a loaded machine may take seconds to start the block, and
    # dying is told from surviving by far more than the 20 s allowed
    f = bg(KILLSRV.run, block("python", handler_death_code))
    seen = wait_procs(M2K + "1", 30) and wait_procs(M2K + "2", 20) and wait_procs(M2K + "3", 20)
    marked = set(procs_matching(M2K))
    # the handler serving this request: the socket-activate child above them
    handlers = [h for h in children_of(KILLSRV.proc.pid) if marked & set(descendants(h))]
    for p in handlers:
        os.kill(p, signal.SIGKILL)
    t0 = time.time()
    gone = wait_gone(M2K, 20)
    el = time.time() - t0
    r = f.result()
    # socket-activate reaps the killed handler in its own time
    deadline = time.time() + 20
    while descendants(KILLSRV.proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    return bool(seen), handlers, gone, el, r


F_HANDLER_DEATH = bg(handler_death)

# class 12: a reader that stops reading while the writer floods it; the
# request lowers the server's --timeout 20 to 3 s (codellm.timeout_s)
def stopped_reader():
    t0 = time.time()
    r = SHM.run(block("python", "import sys\nfor i in range(100):\n    sys.stdout.buffer.write(b'y' * (1 << 20))\n") +
                block("python", "import time\ntime.sleep(300)\n"), extra={"codellm": {"timeout_s": 3}})
    return r, time.time() - t0


F_STOPPED_READER = bg(stopped_reader)

# class 5: SysV IPC and abstract unix sockets between two concurrent runs.
# Run A makes its objects, then waits in a `sleep M5` (longer than MAIN's
# --timeout 20) that this test kills only once run B has finished: B
# surely looked while A held them, however slowly either run started.
K5 = 0x5EC00000 + (os.getpid() & 0xffff)
M5 = "84.5" + U
ipc_a_code = r'''
K = %d
IPC_CREAT = 0o1000
R['shm'] = ipc(libc.shmget(K, 4096, IPC_CREAT | 0o600))
R['msg'] = ipc(libc.msgget(K, IPC_CREAT | 0o600))
R['sem'] = ipc(libc.semget(K, 1, IPC_CREAT | 0o600))
name = b'\0codellm-esc-%%d' %% K
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(name)
srv.listen(16)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
R['self_connect'] = tryf(lambda: c.connect(name))
R['self_shm'] = ipc(libc.shmget(K, 0, 0))
R['t_ready'] = time.time()
subprocess.run(["sleep", "%s"])       # the marker run B waits for; the test ends it
R['t_end'] = time.time()
''' % (K5, M5)
ipc_b_code = r'''
K = %d
R['t_check'] = time.time()
R['shm'] = ipc(libc.shmget(K, 0, 0))
R['msg'] = ipc(libc.msgget(K, 0))
R['sem'] = ipc(libc.semget(K, 0, 0))
R['abstract'] = connect_err(socket.AF_UNIX, b'\0codellm-esc-%%d' %% K)
R['abstract_dgram'] = tryf(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', b'\0codellm-esc-%%d' %% K))
''' % K5


def ipc_pair():
    fa = bg(MAIN.run, pyblock(ipc_a_code))
    wait_held(fa, "sleep " + M5)           # A has made its objects and listens
    rb = MAIN.run(pyblock(ipc_b_code))
    kill_leftovers("sleep " + M5)           # B is done: A may end
    ra = fa.result()
    # the next run, after A has ended
    rc = MAIN.run(pyblock(ipc_b_code))
    return ra, rb, rc


F_IPC = bg(ipc_pair)


# ======================================================================================
# The big probe: one block, many attacks (classes 1, 3, 4, 6, 8-11, 13-15)
# ======================================================================================

big_code = r'''
PORT = %d
# ---- 8 (first, before any probe opens a descriptor)
R['fds'] = sorted(os.listdir("/proc/self/fd"), key=int)
# ---- 1 terminal injection
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
ch = ctypes.create_string_buffer(b"\x06id\n")
R['tiocsti'] = [en(sc(16, fd, TIOCSTI, ch)) for fd in (0, 1, 2)]
R['tiocsti_hi'] = [en(sc(16, fd, 0x100000000 | TIOCSTI, ch)) for fd in (0, 1, 2)] + \
                  [en(sc(16, fd, 0xffffffff00000000 | TIOCSTI, ch)) for fd in (0, 1, 2)]
R['tioclinux'] = [en(sc(16, fd, TIOCLINUX, ch)) for fd in (0, 1, 2)] + \
                 [en(sc(16, fd, 0x100000000 | TIOCLINUX, ch)) for fd in (0, 1, 2)]
R['tiocsti_libc'] = tryf(lambda: fcntl.ioctl(1, TIOCSTI, b"x"))
R['fionread'] = en(sc(16, 1, 0x541B, ctypes.byref(ctypes.c_int())))   # control: ioctl itself works
R['dev_tty'] = tryf(lambda: os.open("/dev/tty", os.O_RDWR))
R['ctermid'] = tryf(lambda: os.open(os.ctermid(), os.O_RDWR))
def pty_probe():
    """the block's own pseudo-terminal: a new devpts instance that holds
    nothing else, and TIOCSTI refused on it too"""
    m, sl = os.openpty()
    try:
        return [os.ttyname(sl), sorted(os.listdir("/dev/pts")), en(sc(16, sl, TIOCSTI, ch)),
                en(sc(16, m, TIOCSTI, ch))]
    finally:
        os.close(m)
        os.close(sl)
R['pty'] = tryf(pty_probe)
R['isatty'] = [os.isatty(fd) for fd in (0, 1, 2)]
st = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
R['tty_nr'] = int(st[4])
R['sid'] = [os.getsid(0), os.getpid(), os.getppid()]
R['tiocsctty'] = en(sc(16, 0, 0x540E, 1))

# ---- 3 seccomp bypasses
R['x32_getpid'] = in_child(lambda: sc(0x40000000 | 39))
R['x32_asm'] = in_child(lambda: machine_code(X32_GETPID)())
R['x32_close'] = in_child(lambda: sc(0x40000000 | 3, 1))
R['int80_getpid'] = in_child(lambda: machine_code(INT80_GETPID)())
R['io_uring_setup'] = en(sc(425, 8, ctypes.create_string_buffer(120)))
R['io_uring_enter'] = en(sc(426, 0, 1, 1, 0, 0, 0))
R['io_uring_register'] = en(sc(427, 0, 0, 0, 0))
# the filter denies by default: a call it does not name is ENOSYS, also
# every call newer than its list; personality only PER_LINUX and the query
READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE = 0x0400000, 0x0040000
R['personality'] = [en(sc(135, 0xffffffff)), en(sc(135, READ_IMPLIES_EXEC)),
                    en(sc(135, ADDR_NO_RANDOMIZE)), en(sc(135, 0x0008)),
                    en(sc(135, (1 << 32) | READ_IMPLIES_EXEC)), en(sc(135, 1 << 32))]
R['personality_now'] = sc(135, 0xffffffff)
R['unlisted'] = {"modify_ldt": en(sc(154, 0, 0, 0)), "memfd_secret": en(sc(447, 0)),
                 "open_tree_attr": en(sc(467, -100, ctypes.c_char_p(b"/"), 0, 0, 0)),
                 "lsm_get_self_attr": en(sc(459, 0, 0, 0, 0)), "statmount": en(sc(457, 0, 0, 0, 0)),
                 "nr_500": en(sc(500)), "nr_1000": en(sc(1000)), "vhangup": en(sc(153)),
                 "syslog": en(sc(103, 3, 0, 0))}
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
def clone3(flags):
    args = ctypes.create_string_buffer(struct.pack("11Q", flags, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0), 88)
    r = sc(435, args, 88)
    if r == 0:
        os._exit(0)
    return r
R['clone3_plain'] = in_child(lambda: en(clone3(0)))
R['clone3_newuser'] = in_child(lambda: en(clone3(CLONE_NEWUSER)))
def clone_raw(flags):
    r = sc(56, flags | 17, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return en(r)
R['clone_newuser'] = in_child(lambda: clone_raw(CLONE_NEWUSER))
R['clone_newns'] = in_child(lambda: clone_raw(CLONE_NEWNS))
R['clone_newnet'] = in_child(lambda: clone_raw(CLONE_NEWNET))
R['clone_newpid'] = in_child(lambda: clone_raw(CLONE_NEWPID))
R['clone_plain'] = in_child(lambda: clone_raw(0))          # control: a plain fork works
R['unshare'] = {n: en(sc(272, f)) for n, f in (("user", CLONE_NEWUSER), ("ns", CLONE_NEWNS),
                                               ("net", CLONE_NEWNET), ("pid", CLONE_NEWPID),
                                               ("ipc", 0x08000000), ("uts", 0x04000000))}
R['setns'] = {n: en(sc(308, os.open("/proc/self/ns/" + n, os.O_RDONLY), 0))
              for n in ("user", "mnt", "net", "pid", "ipc")}
R['setns_init'] = tryf(lambda: os.open("/proc/1/ns/mnt", os.O_RDONLY))
R['subprocess_ok'] = subprocess.run(["true"]).returncode   # clone3 ENOSYS: runtimes fall back

# ---- 4 kernel attack surface
buf = ctypes.create_string_buffer(256)
R['bpf'] = [en(sc(321, cmd, buf, 128)) for cmd in (0, 5, 18)]    # MAP_CREATE, PROG_LOAD, BTF_LOAD
R['perf_event_open'] = en(sc(298, buf, 0, -1, -1, 0))
R['userfaultfd'] = en(sc(323, 0))
R['dev_userfaultfd'] = tryf(lambda: os.open("/dev/userfaultfd", os.O_RDWR))
R['keyctl'] = en(sc(250, 0, 0xfffffffd, 0))                 # KEYCTL_GET_KEYRING_ID session
R['keyctl_join'] = en(sc(250, 1, ctypes.c_char_p(b"esc")))  # KEYCTL_JOIN_SESSION_KEYRING
R['add_key'] = en(sc(248, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"esc"), ctypes.c_char_p(b"v"), 1, 0xfffffffd))
R['request_key'] = en(sc(249, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"esc"), 0, 0))
R['init_module'] = en(sc(175, buf, 16, ctypes.c_char_p(b"")))
R['finit_module'] = en(sc(313, os.open("/dev/null", os.O_RDONLY), ctypes.c_char_p(b""), 0))
R['delete_module'] = en(sc(176, ctypes.c_char_p(b"ext4"), 0))
R['kexec_load'] = en(sc(246, 0, 0, 0, 0))
R['kexec_file_load'] = en(sc(320, 0, 0, 0, ctypes.c_char_p(b""), 0))
fh = ctypes.create_string_buffer(struct.pack("II", 8, 1) + b"\x02" + b"\0" * 7, 16)
R['open_by_handle_at'] = en(sc(304, os.open("/usr", os.O_RDONLY), fh, 0))
R['name_to_handle_at'] = en(sc(303, -100, ctypes.c_char_p(b"/usr"), buf, ctypes.byref(ctypes.c_int()), 0))
# targets are relative to the working directory (the run's workdir): even
# where a layer were missing nothing outside the run could be hit
os.makedirs("mnt", exist_ok=True)
R['mount'] = en(sc(165, ctypes.c_char_p(b"none"), ctypes.c_char_p(b"mnt"), ctypes.c_char_p(b"tmpfs"), 0, 0))
R['mount_bind'] = en(sc(165, ctypes.c_char_p(b"/"), ctypes.c_char_p(b"mnt"), 0, 0x1000 | 0x4000, 0))
R['umount2'] = en(sc(166, ctypes.c_char_p(b"mnt"), 2))
R['pivot_root'] = en(sc(155, ctypes.c_char_p(b"mnt"), ctypes.c_char_p(b"mnt")))
R['chroot'] = in_child(lambda: en(sc(161, ctypes.c_char_p(b"mnt"))))
R['fsopen'] = en(sc(430, ctypes.c_char_p(b"tmpfs"), 0))
R['open_tree'] = en(sc(428, -100, ctypes.c_char_p(b"/"), 1 | 0x8000))
R['move_mount'] = en(sc(429, -100, ctypes.c_char_p(b"/"), -100, ctypes.c_char_p(b"mnt"), 0))
R['fspick'] = en(sc(433, -100, ctypes.c_char_p(b"/"), 0))
R['mount_setattr'] = en(sc(442, -100, ctypes.c_char_p(b"/"), 0, buf, 32))
kid = subprocess.Popen(["sleep", "30"])
R['ptrace_attach_child'] = en(sc(101, 16, kid.pid, 0, 0))
R['ptrace_seize_child'] = en(sc(101, 0x4206, kid.pid, 0, 0))
R['ptrace_attach_init'] = en(sc(101, 16, 1, 0, 0))
R['ptrace_traceme'] = in_child(lambda: en(sc(101, 0, 0, 0, 0)))
iov_l = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
iov_r = (ctypes.c_void_p * 2)(0x400000, 8)
R['process_vm_readv'] = en(sc(310, kid.pid, iov_l, 1, iov_r, 1, 0))
R['process_vm_writev'] = en(sc(311, kid.pid, iov_l, 1, iov_r, 1, 0))
R['process_vm_readv_init'] = en(sc(310, 1, iov_l, 1, iov_r, 1, 0))
R['kcmp'] = en(sc(312, os.getpid(), kid.pid, 0, 0, 0))
R['proc_mem_child'] = tryf(lambda: os.open("/proc/%%d/mem" %% kid.pid, os.O_RDWR))
kid.kill(); kid.wait()
R['unshare_bin'] = tryf(lambda: subprocess.run(["unshare", "-U", "-r", "id", "-u"], capture_output=True, timeout=5).returncode)
R['syslog'] = en(sc(103, 3, buf, 64))

# ---- 5 side channels (in-block parts)
R['dev_shm'] = tryf(lambda: os.stat("/dev/shm"))
R['dev_shm_own'] = [oct(stat.S_IMODE(os.stat("/dev/shm").st_mode)), os.listdir("/dev/shm"),
                    os.stat("/dev/shm").st_dev != os.stat("/work").st_dev]
R['shm_open'] = tryf(lambda: os.close(os.open("/dev/shm/codellm-esc", os.O_CREAT | os.O_RDWR, 0o600)))
R['dev_mqueue'] = tryf(lambda: os.stat("/dev/mqueue"))
R['af_vsock'] = en(sc(41, 40, 1, 0))
R['af_packet'] = en(sc(41, 17, 3, 0))
R['af_netlink'] = en(sc(41, 16, 3, 9))                      # NETLINK_AUDIT
R['af_netlink_route'] = tryf(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close())
R['af_alg'] = en(sc(41, 38, 5, 0))
R['af_netlink_hi'] = en(sc(41, 0x100000010, 3, 0))
R['socketpair_netlink'] = en(sc(53, 16, 3, 0, ctypes.create_string_buffer(8)))
R['af_unix_ok'] = tryf(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())   # control

# ---- 6 host sockets by path
for p in ("/run/systemd/private", "/run/systemd/journal/socket", "/var/run/docker.sock",
          "/run/docker.sock", "/tmp/.X11-unix/X0", "/run/dbus/system_bus_socket",
          "/var/run/postgresql/.s.PGSQL.5432", "/run/codellm"):
    R['path:' + p] = tryf(lambda: os.stat(p))
    R['connect:' + p] = connect_err(socket.AF_UNIX, p)
R['root_entries'] = {d: tryf(lambda: os.lstat("/" + d)) for d in
                     ("run", "home", "var", "sys", "root", "mnt", "srv", "opt", "boot", "media")}
st_tmp, st_work = os.stat("/tmp"), os.stat("/work")
R['tmp_own'] = [oct(stat.S_IMODE(st_tmp.st_mode)), st_tmp.st_dev == st_work.st_dev, os.listdir("/tmp")]
R['root_present'] = {d: os.path.lexists("/" + d) for d in ("usr", "etc", "dev", "proc", "work", "code")}

# ---- 8 leaked descriptors
R['fd_links'] = {fd: tryf(lambda: os.readlink("/proc/self/fd/" + fd)) for fd in ("0", "1", "2")}
R['fd_modes'] = {fd: stat.S_IFMT(os.fstat(int(fd)).st_mode) for fd in ("0", "1", "2")}
R['init_fds'] = tryf(lambda: os.listdir("/proc/1/fd"))
R['init_fd3'] = tryf(lambda: os.open("/proc/1/fd/3", os.O_RDONLY))
R['init_fd0'] = tryf(lambda: os.open("/proc/1/fd/0", os.O_RDONLY))
pidfd = sc(434, 1, 0)
R['pidfd_open_init'] = en(pidfd)
R['pidfd_getfd'] = [en(sc(438, pidfd, n, 0)) for n in range(0, 8)] if pidfd >= 0 else "no pidfd"
R['self_exe'] = os.readlink("/proc/self/exe")
R['init_exe'] = tryf(lambda: os.readlink("/proc/1/exe"))
R['init_exe_open'] = tryf(lambda: os.open("/proc/1/exe", os.O_RDONLY))
R['init_root'] = tryf(lambda: os.listdir("/proc/1/root/"))
R['init_cwd'] = tryf(lambda: os.readlink("/proc/1/cwd"))
R['pids'] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
socks = []
for p in R['pids']:
    try:
        for fd in os.listdir("/proc/%%d/fd" %% p):
            l = os.readlink("/proc/%%d/fd/%%s" %% (p, fd))
            if l.startswith("socket:") or "api-key" in l or "creds" in l:
                socks.append((p, fd, l))
    except OSError:
        pass
R['socket_fds'] = socks

# ---- 9 leaked secrets
R['env'] = dict(os.environ)
R['init_environ'] = tryf(lambda: open("/proc/1/environ", "rb").read().decode("latin-1"))
R['init_cmdline'] = tryf(lambda: open("/proc/1/cmdline", "rb").read().decode("latin-1"))
R['init_auxv'] = tryf(lambda: open("/proc/1/auxv", "rb").read(16))
R['init_mem'] = tryf(lambda: open("/proc/1/mem", "rb").read(16))
R['init_maps'] = tryf(lambda: open("/proc/1/maps").read(400))
dump = {}
for p in R['pids']:
    for f in ("environ", "cmdline"):
        try:
            dump["%%d/%%s" %% (p, f)] = open("/proc/%%d/%%s" %% (p, f), "rb").read().decode("latin-1")
        except OSError as e:
            dump["%%d/%%s" %% (p, f)] = "E:" + errno.errorcode.get(e.errno, "?")
R['proc_dump'] = dump
R['creds_dir'] = tryf(lambda: os.listdir(%r))

# ---- 10 privilege left behind
R['resuid'] = list(os.getresuid())
R['resgid'] = list(os.getresgid())
R['groups'] = os.getgroups()
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
R['status'] = {k: status.get(k, "").strip() for k in
               ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")}
R['uid_map'] = open("/proc/self/uid_map").read().split()
R['gid_map'] = open("/proc/self/gid_map").read().split()
R['setuid0'] = tryf(lambda: os.setuid(0))
R['setgid0'] = tryf(lambda: os.setgid(0))
R['setresuid0'] = en(sc(117, 0, 0, 0))
R['setgroups'] = tryf(lambda: os.setgroups([0]))
R['nnp_clear'] = en(sc(157, 38, 0, 0, 0, 0))               # PR_SET_NO_NEW_PRIVS 0
R['capset_all'] = en(sc(126, ctypes.create_string_buffer(struct.pack("Ii", 0x20080522, 0)),
                        ctypes.create_string_buffer(struct.pack("6I", *([0xffffffff] * 6)))))
R['uid_map_write'] = tryf(lambda: open("/proc/self/uid_map", "w").write("0 0 1\n"))
R['usr_mount'] = [l for l in open("/proc/self/mountinfo").read().splitlines() if " /usr " in l]
# the system trees are read-write binds kept read-only by ownership and
# Landlock: every write fails with the errno an unprivileged host user sees
R['usr_writes'] = [tryf(lambda: open("/usr/codellm-x", "w")),
                   tryf(lambda: os.unlink("/usr/codellm-missing")),
                   tryf(lambda: os.open("/usr/bin/env", os.O_WRONLY)),
                   tryf(lambda: os.chmod("/usr/bin/env", 0o4777)),
                   tryf(lambda: os.utime("/usr/bin/env", (0, 0))),
                   tryf(lambda: os.rename("/usr/bin/env", "/usr/bin/env2")),
                   tryf(lambda: os.mkfifo("/usr/codellm-fifo"))]

# ---- 11 network
R['net_dev'] = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ifr = struct.pack("16sH14x", b"lo", 0)
try:
    R['lo_flags'] = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), 0x8913, ifr))[1]
except OSError as e:
    R['lo_flags'] = errno.errorcode.get(e.errno)
R['lo_up'] = tryf(lambda: fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH14x", b"lo", 1)))
s.close()
R['tcp_handler_port'] = connect_err(socket.AF_INET, ("127.0.0.1", PORT))
R['tcp_metadata'] = connect_err(socket.AF_INET, ("169.254.169.254", 80))
R['tcp_public'] = connect_err(socket.AF_INET, ("1.1.1.1", 443))
R['tcp6_loopback'] = connect_err(socket.AF_INET6, ("::1", PORT))
t0 = time.time()
try:
    R['dns'] = "ok:%%r" %% (socket.getaddrinfo("example.com", 80)[:1],)
except socket.gaierror as e:
    R['dns'] = "gaierror:%%d" %% e.errno
R['dns_s'] = time.time() - t0
def udp(addr):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        return "ok:%%d" %% u.sendto(b"\0" * 12, addr)
    finally:
        u.close()
def dns_query(addr):
    """a DNS query and the answer, if anything answers within 1 s"""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(1.0)
    try:
        u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                 b"\x07example\x03com\x00\x00\x01\x00\x01", addr)
        return "answer:%%r" %% (u.recv(512)[:12],)
    except socket.timeout:
        return "TIMEOUT"
    finally:
        u.close()
R['udp_resolver'] = tryf(lambda: dns_query(("127.0.0.53", 53)))
R['udp_lo'] = tryf(lambda: dns_query(("127.0.0.1", 53)))
# a datagram to a port a process of the test listens on, on the host's
# loopback: it lands on the block's own loopback, where nobody listens
R['udp_host_listener'] = tryf(lambda: udp(("127.0.0.1", @UDP_PORT@)))
R['resolv_conf'] = os.path.exists("/etc/resolv.conf")
R['raw_inet'] = en(sc(41, 2, 3, 1))        # AF_INET SOCK_RAW ICMP
R['raw_inet6'] = en(sc(41, 10, 3, 58))
R['packet'] = en(sc(41, 17, 3, 0x0300))
def own_loopback():
    """listen on the handler's own port number (taken on the host, free
    on the block's own loopback) and reach it: a server and its client in
    one block, nothing of the host"""
    b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    b.bind(("127.0.0.1", PORT))
    b.listen(1)
    c = socket.create_connection(("127.0.0.1", PORT), timeout=2)
    a, _ = b.accept()
    a.sendall(b"own")
    got = c.recv(3)
    for x in (a, b, c):
        x.close()
    return got.decode()
R['tcp_own_loopback'] = tryf(own_loopback)

# ---- 13 kernel information
R['kallsyms'] = tryf(lambda: sorted(set(l.split()[0] for l in open("/proc/kallsyms").read(1 << 20).splitlines()[:-1])))
R['kcore'] = tryf(lambda: open("/proc/kcore", "rb").read(16))
R['kmsg'] = tryf(lambda: open("/proc/kmsg", "rb").read(16))
# each write puts back the value just read (sysrq: 'h', help only): the
# evidence is that the open for writing fails, not what would be written
def rewrite(path):
    v = open(path).read()
    with open(path, "w") as f:
        f.write(v)
R['sys_hostname_w'] = tryf(lambda: rewrite("/proc/sys/kernel/hostname"))
R['sys_core_pattern_w'] = tryf(lambda: rewrite("/proc/sys/kernel/core_pattern"))
R['sys_shmmax_w'] = tryf(lambda: rewrite("/proc/sys/kernel/shmmax"))
R['sysrq'] = tryf(lambda: open("/proc/sysrq-trigger", "w").write("h"))
R['sys'] = tryf(lambda: os.stat("/sys"))
R['sys_kernel'] = tryf(lambda: os.listdir("/sys/kernel"))
R['limits_core'] = [l for l in open("/proc/self/limits").read().splitlines() if l.startswith("Max core file size")]
R['proc_remount'] = en(sc(165, ctypes.c_char_p(b"proc"), ctypes.c_char_p(b"/proc"), 0, 0x20, 0))
# host-wide counters and leaks masked; meminfo, loadavg, stat the block's own
def rd(path):
    try:
        return open(path).read()
    except OSError as e:
        return "E:" + errno.errorcode.get(e.errno, "?")
R['proc_empty'] = {f: rd("/proc/" + f) for f in ("interrupts", "softirqs", "vmstat", "diskstats",
                                              "locks", "cmdline", "keys", "key-users")
                   if os.path.exists("/proc/" + f)}
R['proc_pressure'] = tryf(lambda: os.listdir("/proc/pressure"))
R['proc_meminfo'] = rd("/proc/meminfo").splitlines()[:3]
R['proc_loadavg'] = rd("/proc/loadavg")
R['proc_stat'] = [l for l in rd("/proc/stat").splitlines() if l.startswith(("cpu ", "btime", "ctxt"))]
R['proc_masks_ro'] = tryf(lambda: open("/proc/meminfo", "w"))

# ---- 14 the control plane
R['ctl_handler'] = connect_err(socket.AF_INET, ("127.0.0.1", PORT))
R['ctl_debug'] = connect_err(socket.AF_INET, ("127.0.0.1", 8090))
R['ctl_8080'] = connect_err(socket.AF_INET, ("127.0.0.1", 8080))
import urllib.request
try:
    urllib.request.urlopen("http://127.0.0.1:%%d/healthz" %% PORT, timeout=2).read()
    R['healthz'] = "ok:fetched"
except Exception as e:
    R['healthz'] = "%%s:%%s" %% (type(e).__name__, getattr(getattr(e, "reason", None), "errno", None))
try:
    urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%%d/debug/run-pipeline" %% PORT,
        data=b'{"body":"```sh\\nid\\n```"}', headers={"Authorization": "Bearer guess"}), timeout=2).read()
    R['debug_run'] = "ok:fetched"
except Exception as e:
    R['debug_run'] = "%%s:%%s" %% (type(e).__name__, getattr(getattr(e, "reason", None), "errno", None))
R['kill_init'] = tryf(lambda: os.kill(1, signal.SIGKILL))
R['kill_init_term'] = tryf(lambda: os.kill(1, signal.SIGTERM))

# ---- 15 fail-open
R['hostname'] = socket.gethostname()
R['landlock_abi'] = sc(444, 0, 0, 1)
R['ll_listdir_root'] = tryf(lambda: os.listdir("/"))
R['ll_listdir_dev'] = tryf(lambda: os.listdir("/dev"))
R['ll_write_random'] = tryf(lambda: os.open("/dev/random", os.O_WRONLY))
R['ll_write_etc'] = tryf(lambda: open("/etc/x", "w"))
R['ll_write_root'] = tryf(lambda: open("/x", "w"))
R['ll_read_etc'] = tryf(lambda: len(os.listdir("/etc")) > 0)                 # control
R['ll_write_work'] = tryf(lambda: open("ok", "w").write("ok"))                # control: the workdir
''' % (MAIN.port, creds)
UDP_HOST = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
UDP_HOST.bind(("127.0.0.1", 0))
big_code = big_code.replace("@UDP_PORT@", str(UDP_HOST.getsockname()[1]))

# the big probe and the SIGSYS blocks run while the slow cases do
F_BIG = bg(MAIN.run, pyblock(big_code))
F_SIGSYS = bg(MAIN.run, pyblock("machine_code(INT80_GETPID)()\nR['survived'] = True") +
              pyblock("sc(0x40000000 | 39)\nR['survived'] = True") +
              pyblock("machine_code(X32_GETPID)()\nR['survived'] = True"))

r = F_BIG.result()
B = jcontent(r) or {}
if not B:
    t.diag("big probe failed: " + diag_of(r))

# ---- 1 terminal injection ---------------------------------------------------------------
case(r, B.get("tiocsti") == ["EPERM"] * 3,
     "[1 tty] ioctl(TIOCSTI) on fds 0/1/2 → EPERM (seccomp)", B.get("tiocsti"))
case(r, B.get("tiocsti_hi") == ["EPERM"] * 6,
     "[1 tty] TIOCSTI with high bits set (0x100005412, 0xffffffff00005412) → EPERM", B.get("tiocsti_hi"))
case(r, B.get("tioclinux") == ["EPERM"] * 6,
     "[1 tty] ioctl(TIOCLINUX), also 0x10000541c, on fds 0/1/2 → EPERM", B.get("tioclinux"))
case(r, B.get("tiocsti_libc") == "EPERM" and B.get("fionread") == "ok:0",
     "[1 tty] fcntl.ioctl(1, TIOCSTI) → EPERM while an ordinary ioctl (FIONREAD) works",
     (B.get("tiocsti_libc"), B.get("fionread")))
case(r, B.get("dev_tty") == "ENXIO" and B.get("ctermid") == "ENXIO" and B.get("isatty") == [False] * 3,
     "[1 tty] no terminal to reach: /dev/tty and ctermid() → ENXIO (no controlling terminal); fds 0-2 are not ttys",
     {k: B.get(k) for k in ("dev_tty", "ctermid", "isatty")})
case(r, B.get("pty") == "ok:" + repr(["/dev/pts/0", ["0", "ptmx"], "EPERM", "EPERM"]),
     "[1 tty] openpty() gives the block's own pty: /dev/pts/0 of a devpts holding nothing else, "
     "TIOCSTI on it → EPERM", B.get("pty"))
case(r, B.get("tty_nr") == 0 and B.get("sid", [0])[0] == 1 and B.get("sid", [0, 0, 0])[2] == 1
     and B.get("tiocsctty") in ("ENOTTY", "EPERM"),
     "[1 tty] no controlling tty (tty_nr 0), session led by the block's init (getsid 1), TIOCSCTTY fails",
     {k: B.get(k) for k in ("tty_nr", "sid", "tiocsctty")})

# ---- 3 seccomp bypasses -----------------------------------------------------------------
case(r, B.get("x32_getpid") == {"sig": 31},
     "[3 seccomp] x32 getpid (syscall 0x40000027) via libc syscall() → killed by SIGSYS, no pid returned",
     B.get("x32_getpid"))
case(r, B.get("x32_asm") == {"sig": 31} and B.get("x32_close") == {"sig": 31},
     "[3 seccomp] x32 numbers from a raw `syscall` instruction (getpid, close) → SIGSYS",
     (B.get("x32_asm"), B.get("x32_close")))
case(r, B.get("int80_getpid") == {"sig": INT80_SIG},
     "[3 seccomp] int 0x80 (i386 getpid) from machine code → " + INT80_WHY,
     B.get("int80_getpid"))
case(r, (B.get("io_uring_setup"), B.get("io_uring_enter"), B.get("io_uring_register")) == ("EPERM",) * 3,
     "[3 seccomp] io_uring_setup / io_uring_enter / io_uring_register → EPERM",
     (B.get("io_uring_setup"), B.get("io_uring_enter"), B.get("io_uring_register")))
case(r, B.get("personality") == ["ok:0", "EPERM", "EPERM", "EPERM", "EPERM", "EPERM"]
     and B.get("personality_now") == 0,
     "[3 seccomp] personality: the query answers PER_LINUX; READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, "
     "PER_LINUX32 and values with high bits set → EPERM",
     (B.get("personality"), B.get("personality_now")))
un = B.get("unlisted") or {}
case(r, un and all(v == "ENOSYS" for k, v in un.items() if k not in ("vhangup", "syslog"))
     and un.get("vhangup") == "EPERM" and un.get("syslog") == "EPERM",
     "[3 seccomp] deny by default: modify_ldt, memfd_secret, open_tree_attr, lsm_get_self_attr, "
     "statmount and unknown numbers 500/1000 → ENOSYS (vhangup, syslog: EPERM)", un)
case(r, get(B, "clone3_plain", "out") == "ENOSYS" and get(B, "clone3_newuser", "out") == "ENOSYS"
     and B.get("subprocess_ok") == 0,
     "[3 seccomp] clone3 (plain and CLONE_NEWUSER) → ENOSYS; subprocess still works via clone",
     (B.get("clone3_plain"), B.get("clone3_newuser"), B.get("subprocess_ok")))
case(r, all(get(B, k, "out") == "EPERM" for k in ("clone_newuser", "clone_newns", "clone_newnet", "clone_newpid"))
     and get(B, "clone_plain", "out", ) not in (None, "EPERM"),
     "[3 seccomp] raw clone with CLONE_NEWUSER / NEWNS / NEWNET / NEWPID → EPERM (a plain clone works)",
     {k: B.get(k) for k in ("clone_newuser", "clone_newns", "clone_newnet", "clone_newpid", "clone_plain")})
case(r, B.get("unshare") and set(B["unshare"].values()) == {"EPERM"},
     "[3 seccomp] unshare(CLONE_NEWUSER/NEWNS/NEWNET/NEWPID/NEWIPC/NEWUTS) → EPERM", B.get("unshare"))
case(r, B.get("setns") and set(B["setns"].values()) == {"EPERM"} and B.get("setns_init") == "EACCES",
     "[3 seccomp] setns into user/mnt/net/pid/ipc → EPERM; the init's /proc/1/ns/mnt → EACCES",
     (B.get("setns"), B.get("setns_init")))

rs = F_SIGSYS.result()
br = results(rs) or []
case(rs, len(br) == 3 and [b.get("signal") for b in br] == [INT80_SIG, 31, 31]
     and [b.get("exit_code") for b in br] == [128 + INT80_SIG, 159, 159]
     and field(rs, "codellm", "exit_code") == 159 and content(rs) == "",
     "[3 seccomp] int 0x80 / x32 as whole blocks: x32 block_results signal 31, exit_code 159, nothing printed; "
     "int 0x80: " + INT80_WHY, br)

# ---- 4 kernel attack surface ----------------------------------------------------------------
case(r, B.get("bpf") == ["EPERM"] * 3, "[4 kernel] bpf(MAP_CREATE / PROG_LOAD / BTF_LOAD) → EPERM", B.get("bpf"))
case(r, B.get("perf_event_open") == "EPERM", "[4 kernel] perf_event_open → EPERM", B.get("perf_event_open"))
case(r, B.get("userfaultfd") == "EPERM" and B.get("dev_userfaultfd") == "ENOENT",
     "[4 kernel] userfaultfd → EPERM, /dev/userfaultfd absent",
     (B.get("userfaultfd"), B.get("dev_userfaultfd")))
case(r, [B.get(k) for k in ("keyctl", "keyctl_join", "add_key", "request_key")] == ["EPERM"] * 4,
     "[4 kernel] keyctl / add_key / request_key → EPERM",
     [B.get(k) for k in ("keyctl", "keyctl_join", "add_key", "request_key")])
case(r, [B.get(k) for k in ("init_module", "finit_module", "delete_module")] == ["EPERM"] * 3,
     "[4 kernel] init_module / finit_module / delete_module → EPERM",
     [B.get(k) for k in ("init_module", "finit_module", "delete_module")])
case(r, [B.get(k) for k in ("kexec_load", "kexec_file_load")] == ["EPERM"] * 2,
     "[4 kernel] kexec_load / kexec_file_load → EPERM", [B.get(k) for k in ("kexec_load", "kexec_file_load")])
case(r, [B.get(k) for k in ("open_by_handle_at", "name_to_handle_at")] == ["EPERM"] * 2,
     "[4 kernel] open_by_handle_at (Shocker) / name_to_handle_at → EPERM",
     [B.get(k) for k in ("open_by_handle_at", "name_to_handle_at")])
MNT = ("mount", "mount_bind", "umount2", "pivot_root")
case(r, [B.get(k) for k in MNT] == ["EPERM"] * len(MNT) and get(B, "chroot", "out") == "EPERM",
     "[4 kernel] mount (tmpfs, bind of /) / umount2 / pivot_root / chroot → EPERM", [B.get(k) for k in MNT + ("chroot",)])
NMNT = ("fsopen", "open_tree", "move_mount", "fspick", "mount_setattr")
case(r, [B.get(k) for k in NMNT] == ["EPERM"] * len(NMNT),
     "[4 kernel] new mount API fsopen / open_tree / move_mount / fspick / mount_setattr → EPERM",
     [B.get(k) for k in NMNT])
PT = ("ptrace_attach_child", "ptrace_seize_child", "ptrace_attach_init")
case(r, [B.get(k) for k in PT] == ["EPERM"] * 3 and get(B, "ptrace_traceme", "out") == "EPERM",
     "[4 kernel] ptrace(PTRACE_ATTACH/SEIZE) of another process (own child, init) and TRACEME → EPERM",
     [B.get(k) for k in PT + ("ptrace_traceme",)])
PV = ("process_vm_readv", "process_vm_writev", "process_vm_readv_init", "kcmp")
case(r, [B.get(k) for k in PV] == ["EPERM"] * 4,
     "[4 kernel] process_vm_readv / process_vm_writev (child, init), kcmp → EPERM", [B.get(k) for k in PV])
case(r, B.get("unshare_bin") not in (None, "ok:0") and B.get("syslog") == "EPERM",
     "[4 kernel] nested user namespace with /usr/bin/unshare -Ur fails; syslog(2) → EPERM",
     (B.get("unshare_bin"), B.get("syslog")))

# ---- 5 side channels (in-block) -----------------------------------------------------------
case(r, B.get("dev_shm_own") == ["0o1777", [], True] and B.get("shm_open") == "ok:None"
     and B.get("dev_mqueue") == "ENOENT",
     "[5 side] /dev/shm is the block's own tmpfs (mode 1777, empty at start, not the workdir's), "
     "shm_open-style create works; /dev/mqueue absent",
     (B.get("dev_shm_own"), B.get("shm_open"), B.get("dev_mqueue")))
AF = ("af_vsock", "af_packet", "af_netlink", "af_alg", "af_netlink_hi", "socketpair_netlink")
case(r, [B.get(k) for k in AF] == ["EAFNOSUPPORT"] * len(AF) and B.get("af_unix_ok") == "ok:None",
     "[5 side] socket(AF_VSOCK / AF_PACKET / AF_NETLINK audit / AF_ALG, netlink|1<<32), socketpair(netlink) → EAFNOSUPPORT",
     [B.get(k) for k in AF + ("af_unix_ok",)])
NET = field(r, "codellm", "sandbox", "net")
case(r, B.get("af_netlink_route") == ("ok:None" if NET == "own" else "EAFNOSUPPORT"),
     "[5 side] netlink route sockets only in the block's own network namespace (here: %s)" % NET,
     (NET, B.get("af_netlink_route")))
case(r, B.get("keyctl_join") == "EPERM" and B.get("keyctl") == "EPERM",
     "[5 side] keyrings shared by uid: KEYCTL_GET_KEYRING_ID / JOIN_SESSION_KEYRING → EPERM",
     (B.get("keyctl"), B.get("keyctl_join")))

# ---- 6 host sockets by path --------------------------------------------------------------
HOSTSOCK = ("/run/systemd/private", "/run/systemd/journal/socket", "/var/run/docker.sock",
            "/run/docker.sock", "/tmp/.X11-unix/X0", "/run/dbus/system_bus_socket",
            "/var/run/postgresql/.s.PGSQL.5432", "/run/codellm")
case(r, all(B.get("path:" + p) == "ENOENT" for p in HOSTSOCK),
     "[6 sockets] /run/systemd/private, journal, docker.sock, X11, dbus, postgres paths do not exist (ENOENT)",
     {p: B.get("path:" + p) for p in HOSTSOCK})
case(r, all(B.get("connect:" + p) == "ENOENT" for p in HOSTSOCK),
     "[6 sockets] connect() to those unix socket paths → ENOENT",
     {p: B.get("connect:" + p) for p in HOSTSOCK})
case(r, B.get("root_entries") and set(B["root_entries"].values()) == {"ENOENT"},
     "[6 sockets] /run /home /var /sys /root /mnt /srv /opt /boot /media do not exist in the root",
     B.get("root_entries"))
case(r, B.get("tmp_own") == ["0o1777", True, []],
     "[6 sockets] /tmp is the run's own: mode 1777, on the workdir's tmpfs, empty (no host file, "
     "no X11 socket)", B.get("tmp_own"))
case(r, B.get("root_present") == {d: True for d in ("usr", "etc", "dev", "proc", "work", "code")},
     "[6 sockets] the root holds the minimal set (/usr /etc /dev /proc /work /code present)", B.get("root_present"))

# ---- 8 leaked descriptors ---------------------------------------------------------------
case(r, B.get("fds") == ["0", "1", "2", "3"],
     "[8 fds] /proc/self/fd lists only 0, 1, 2 (+ the listing's own fd 3)", B.get("fds"))
links = B.get("fd_links") or {}
case(r, links and all(v.startswith("ok:'pipe:") or v == "ok:'/dev/null'" for v in links.values())
     and not B.get("socket_fds"),
     "[8 fds] fds 0-2 are pipes or /dev/null; no fd visible in the block points at a socket or the key",
     (links, B.get("socket_fds")))
case(r, B.get("init_fds") == "EACCES" and B.get("init_fd3") == "EACCES" and B.get("init_fd0") == "EACCES",
     "[8 fds] the block's init: /proc/1/fd listing and /proc/1/fd/3, /proc/1/fd/0 → EACCES",
     (B.get("init_fds"), B.get("init_fd3"), B.get("init_fd0")))
case(r, B.get("pidfd_getfd") == ["EPERM"] * 8,
     "[8 fds] pidfd_getfd(pidfd_open(1), 0..7) → EPERM: the init's descriptors cannot be copied",
     (B.get("pidfd_open_init"), B.get("pidfd_getfd")))
case(r, str(B.get("self_exe", "")).startswith("/usr/bin/python3") and B.get("init_exe") == "EACCES"
     and B.get("init_exe_open") == "EACCES",
     "[8 fds] /proc/self/exe is the interpreter; the handler image /proc/1/exe cannot be read or opened",
     (B.get("self_exe"), B.get("init_exe"), B.get("init_exe_open")))
case(r, B.get("init_root") == "EACCES" and B.get("init_cwd") == "EACCES"
     and (B.get("pids") or [])[:2] == [1, 2] and len(B.get("pids") or []) <= 3,
     "[8 fds] /proc/1/root and /proc/1/cwd → EACCES; only the block's own processes are visible",
     (B.get("init_root"), B.get("init_cwd"), B.get("pids")))

# ---- 9 leaked secrets --------------------------------------------------------------------
env = B.get("env") or {}
want_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/work", "TMPDIR": "/work",
            "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
case(r, env == want_env,
     "[9 secrets] the environment is exactly PATH HOME TMPDIR LANG PYTHONHASHSEED PYTHONDONTWRITEBYTECODE", env)
case(r, env and not any(k.startswith(("LISTEN_", "CODELLM_")) or k in ("CREDENTIALS_DIRECTORY", "INVOCATION_ID",
                                                                     "SECRET_TOKEN") for k in env)
     and SECRET not in json.dumps(env) and KEY not in json.dumps(env),
     "[9 secrets] no LISTEN_*, CREDENTIALS_DIRECTORY, INVOCATION_ID, CODELLM_*, SECRET_TOKEN, key value", sorted(env))
ie, ic = B.get("init_environ"), B.get("init_cmdline")
case(r, ie == "EACCES" and isinstance(ic, str) and SECRET not in ic and KEY not in ic and creds not in ic,
     "[9 secrets] /proc/1/environ of the block's init → EACCES; its cmdline holds no secret, key or creds path",
     (ie, ic))
case(r, [B.get(k) for k in ("init_auxv", "init_mem", "init_maps")] == ["EACCES"] * 3,
     "[9 secrets] /proc/1/auxv, /proc/1/mem, /proc/1/maps of the init → EACCES",
     [B.get(k) for k in ("init_auxv", "init_mem", "init_maps")])
dump = json.dumps(B.get("proc_dump") or {})
case(r, B.get("proc_dump") and SECRET not in dump and KEY not in dump and "LISTEN_FDS" not in dump
     and "INVOCATION_ID" not in dump and "CREDENTIALS_DIRECTORY" not in dump,
     "[9 secrets] neither the secret nor the API key appears in any /proc/*/environ or cmdline the block sees",
     dump[:3000])
case(r, B.get("creds_dir") == "ENOENT",
     "[9 secrets] the credentials directory (and key file) does not exist inside", B.get("creds_dir"))

# a bash block: printenv, the Judge0 #564 classic
rp = MAIN.run(block("bash", "printenv; echo ---; cat /proc/1/environ 2>&1 | tr '\\0' '\\n'"))
out = content(rp) or ""
case(rp, SECRET not in out and KEY not in out and "LISTEN_" not in out and "CREDENTIALS_DIRECTORY" not in out
     and "Permission denied" in out,
     "[9 secrets] bash printenv and cat /proc/1/environ show no secret (environ: Permission denied)", out)

# ---- 10 privilege left behind -------------------------------------------------------------
case(r, B.get("resuid") == [65534] * 3 and B.get("resgid") == [65534] * 3 and B.get("groups") == [],
     "[10 priv] uid and gid are 65534 (real, effective, saved), no supplementary groups",
     (B.get("resuid"), B.get("resgid"), B.get("groups")))
stt = B.get("status") or {}
case(r, all(stt.get(k) == "0000000000000000" for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")),
     "[10 priv] CapInh/CapPrm/CapEff/CapBnd/CapAmb all 0 in /proc/self/status", stt)
case(r, stt.get("NoNewPrivs") == "1" and B.get("nnp_clear") == "EINVAL",
     "[10 priv] NoNewPrivs 1, and it cannot be cleared (PR_SET_NO_NEW_PRIVS 0 → EINVAL)",
     (stt.get("NoNewPrivs"), B.get("nnp_clear")))
case(r, (B.get("uid_map") or [None])[::2] == ["65534", "1"]
     and (B.get("gid_map") or [None])[::2] == ["65534", "1"]
     and B.get("uid_map_write") in ("EACCES", "EPERM", "EROFS"),
     "[10 priv] no mapped root: uid_map/gid_map map only 65534 (one id); uid_map cannot be rewritten",
     (B.get("uid_map"), B.get("gid_map"), B.get("uid_map_write")))
case(r, B.get("setuid0") in ("EPERM", "EINVAL") and B.get("setgid0") in ("EPERM", "EINVAL")
     and B.get("setresuid0") in ("EPERM", "EINVAL") and B.get("setgroups") == "EPERM"
     and B.get("capset_all") == "EPERM",
     "[10 priv] setuid(0) / setgid(0) / setresuid(0) / setgroups / capset(all) fail",
     [B.get(k) for k in ("setuid0", "setgid0", "setresuid0", "setgroups", "capset_all")])
usr = B.get("usr_mount") or []
case(r, usr and all("nosuid" in l.split()[5] and "nodev" in l.split()[5] for l in usr),
     "[10 priv] /usr is bound nosuid, nodev", usr)
case(r, B.get("usr_writes") == ["EACCES", "ENOENT", "EACCES", "EPERM", "EPERM", "EACCES", "EACCES"],
     "[10 priv] /usr cannot be written: create/open-for-write/rename/mkfifo → EACCES, unlinking a "
     "missing file → ENOENT, chmod/utime of a host file → EPERM (as for an unprivileged host user)",
     B.get("usr_writes"))

setuid_code = r'''
def setuid_probe(path, args):
    """exec a setuid-root binary whose first write blocks on a full pipe,
    then read its credentials from /proc while it waits there"""
    if not os.path.exists(path):
        return None
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 4096)            # F_SETPIPE_SZ
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    p = subprocess.Popen([path] + args, stdin=subprocess.DEVNULL, stdout=w, stderr=w)
    os.close(w)
    # until it blocks on the full pipe (or has ended), however long its
    # start takes: the run's --timeout is the backstop
    st = None
    while True:
        try:
            st = open("/proc/%d/status" % p.pid).read()
        except OSError:
            break
        if "Name:\t" + os.path.basename(path)[:15] + "\n" in st and "State:\tS" in st:
            break
        if "State:\tZ" in st:
            break
        time.sleep(0.003)
    out = {l.split(":")[0]: l.split(":", 1)[1].split() for l in (st or "").splitlines()
           if l.split(":")[0] in ("Name", "State", "Uid", "Gid", "CapEff", "CapPrm")}
    while os.read(r, 65536):
        pass
    os.close(r)
    out["rc"] = p.wait()
    return out
SETUID = ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/chsh", "/usr/bin/newgrp")
R['mode'] = {p: oct(os.stat(p).st_mode) for p in SETUID if os.path.exists(p)}
for p in SETUID:
    R[p] = setuid_probe(p, ["--help"])
# (an environment may lack one: what is not there cannot be run, and says so)
def run_if(argv):
    if not os.path.exists(argv[0]):
        return ["absent"]
    cp = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=15)
    return [cp.returncode, cp.stdout.decode(), cp.stderr.decode()[:200]]
R['su_c'] = run_if(["/usr/bin/su", "-c", "id -u"])
os.makedirs("mnt", exist_ok=True)
R['mount_bin'] = run_if(["/usr/bin/mount", "-t", "tmpfs", "none", "mnt"])
'''
r10 = MAIN.run(pyblock(setuid_code))
S10 = jcontent(r10) or {}
probes = {p: S10.get(p) for p in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/chsh",
                                  "/usr/bin/newgrp")
          if S10.get(p) is not None}
setuid_present = any(int(m, 8) & 0o4000 for m in (S10.get("mode") or {}).values())
if not setuid_present and completion_ok(r10):
    t.skip("[10 priv] setuid-root binaries run as 65534", "no setuid binary under /usr on this host")
else:
    case(r10, len(probes) >= 2 and all(v.get("Uid") == ["65534"] * 4 and v.get("Gid") == ["65534"] * 4
                                       and v.get("CapEff") == ["0000000000000000"] for v in probes.values()),
         "[10 priv] setuid-root su / passwd / mount / chsh / newgrp, caught while running: Uid and Gid "
         "stay 65534, CapEff 0",
         (S10.get("mode"), probes))
case(r10, get(S10, "su_c", 0) not in (None, 0, "absent") and get(S10, "su_c", 1) != "0\n"
     and get(S10, "mount_bin", 0) not in (None, 0),
     "[10 priv] `su -c 'id -u'` fails (no root) and the setuid mount binary cannot mount (or is "
     "not there)",
     (S10.get("su_c"), S10.get("mount_bin")))

# ---- 11 network ----------------------------------------------------------------------------
case(r, B.get("net_dev") == ["lo"] and isinstance(B.get("lo_flags"), int) and (B["lo_flags"] & 1),
     "[11 net] the only interface is lo (the block's own, up)", (B.get("net_dev"), B.get("lo_flags")))
case(r, B.get("lo_up") == "EPERM",
     "[11 net] changing lo's flags (SIOCSIFFLAGS) → EPERM", B.get("lo_up"))
case(r, B.get("tcp_handler_port") in FAILS_NET and B.get("tcp6_loopback") in FAILS_NET,
     "[11 net] connect to 127.0.0.1:<the handler's port> and [::1] fails at once",
     (B.get("tcp_handler_port"), B.get("tcp6_loopback")))
case(r, B.get("tcp_metadata") in FAILS_NET and B.get("tcp_public") in FAILS_NET,
     "[11 net] connect to the metadata address 169.254.169.254:80 and to 1.1.1.1:443 fails at once",
     (B.get("tcp_metadata"), B.get("tcp_public")))
case(r, str(B.get("dns", "")).startswith("gaierror") and not B.get("resolv_conf"),
     "[11 net] DNS resolution fails (no resolv.conf, no route to a resolver)",
     (B.get("dns"), B.get("dns_s"), B.get("resolv_conf")))
NO_ANSWER = ("ECONNREFUSED", "ok:'TIMEOUT'")
case(r, B.get("udp_resolver") in NO_ANSWER and B.get("udp_lo") in NO_ANSWER,
     "[11 net] a DNS query to 127.0.0.53:53 / 127.0.0.1:53 gets no answer (the block's own loopback)",
     (B.get("udp_resolver"), B.get("udp_lo")))
try:
    UDP_HOST.settimeout(0.5)
    got_udp = UDP_HOST.recv(64)
except (socket.timeout, BlockingIOError):
    got_udp = None
case(r, got_udp is None and str(B.get("udp_host_listener", "")).startswith("ok:"),
     "[11 net] a datagram to a port listening on the host's 127.0.0.1 never reaches the host",
     (B.get("udp_host_listener"), got_udp))
case(r, B.get("raw_inet") == "EPERM" and B.get("raw_inet6") == "EPERM" and B.get("packet") == "EAFNOSUPPORT",
     "[11 net] raw sockets (AF_INET/AF_INET6 SOCK_RAW) → EPERM, AF_PACKET → EAFNOSUPPORT",
     (B.get("raw_inet"), B.get("raw_inet6"), B.get("packet")))
case(r, B.get("tcp_own_loopback") == "ok:'own'",
     "[11 net] a TCP server and its client in one block work on its own loopback, even on the "
     "handler's port number (taken on the host's loopback)", B.get("tcp_own_loopback"))

# ---- 13 kernel information ----------------------------------------------------------------
ks = B.get("kallsyms") or ""
case(r, ks in ("EACCES", "EPERM", "ENOENT") or ks == "ok:['0000000000000000']",
     "[13 kinfo] /proc/kallsyms shows only zero addresses (or is unreadable)", ks[:300])
case(r, B.get("kcore") in ("ENOENT", "EACCES", "EPERM") and B.get("kmsg") in ("ENOENT", "EACCES", "EPERM"),
     "[13 kinfo] /proc/kcore and /proc/kmsg cannot be read", (B.get("kcore"), B.get("kmsg")))
case(r, all(B.get(k) in ("EROFS", "EACCES", "EPERM") for k in ("sys_hostname_w", "sys_core_pattern_w", "sys_shmmax_w")),
     "[13 kinfo] /proc/sys is read-only: kernel/hostname, core_pattern, shmmax writes fail",
     [B.get(k) for k in ("sys_hostname_w", "sys_core_pattern_w", "sys_shmmax_w")])
case(r, B.get("sysrq") in ("EROFS", "EACCES", "EPERM", "ENOENT"),
     "[13 kinfo] writing /proc/sysrq-trigger fails", B.get("sysrq"))
case(r, B.get("sys") == "ENOENT" and B.get("sys_kernel") == "ENOENT",
     "[13 kinfo] /sys is absent", (B.get("sys"), B.get("sys_kernel")))
lc = B.get("limits_core") or [""]
case(r, lc[0].split()[4:6] == ["0", "0"],
     "[13 kinfo] core dumps off: RLIMIT_CORE 0/0 in /proc/self/limits", lc)
case(r, B.get("proc_remount") == "EPERM",
     "[13 kinfo] remounting /proc read-write → EPERM", B.get("proc_remount"))

case(r, B.get("proc_empty") and set(B["proc_empty"].values()) == {""}
     and B.get("proc_pressure") in ("ok:[]", "ENOENT"),
     "[13 kinfo] host-wide /proc files are masked empty: interrupts, softirqs, vmstat, diskstats, "
     "locks, cmdline, keys, key-users; /proc/pressure is an empty directory",
     (B.get("proc_empty"), B.get("proc_pressure")))
mi = B.get("proc_meminfo") or []
case(r, len(mi) == 3 and all(l.split()[1] == "2097152" for l in mi)
     and B.get("proc_loadavg") == "0.00 0.00 0.00 1/1 1\n"
     and (B.get("proc_stat") or [""])[0].split()[1:] == ["0"] * 10
     and any(l.startswith("btime ") for l in B.get("proc_stat") or [])
     and B.get("proc_masks_ro") in ("EROFS", "EACCES"),
     "[13 kinfo] /proc/meminfo shows --memory-max (2G) total/free/available, loadavg zero, stat "
     "zero counters (btime kept); none of them writable", (mi, B.get("proc_loadavg"), B.get("proc_stat"),
                                                           B.get("proc_masks_ro")))

# ---- 14 the control plane ---------------------------------------------------------------
case(r, B.get("ctl_handler") in FAILS_NET, "[14 control] the handler's own port 127.0.0.1:%d unreachable" % MAIN.port,
     B.get("ctl_handler"))
case(r, B.get("ctl_debug") in FAILS_NET and B.get("ctl_8080") in FAILS_NET,
     "[14 control] the debug port 127.0.0.1:8090 (and :8080) unreachable", (B.get("ctl_debug"), B.get("ctl_8080")))
case(r, str(B.get("healthz", "")).startswith("URLError"),
     "[14 control] urllib GET http://127.0.0.1:<port>/healthz fails", B.get("healthz"))
case(r, str(B.get("debug_run", "")).startswith("URLError"),
     "[14 control] POST /debug/run-pipeline to the live --debug port fails to connect (no HTTP answer at all)",
     B.get("debug_run"))
case(r, B.get("kill_init") == "EPERM" and B.get("kill_init_term") == "EPERM",
     "[14 control] signals to the supervising init (kill 1 SIGKILL/SIGTERM) → EPERM (Landlock signal scope)",
     (B.get("kill_init"), B.get("kill_init_term")))

# ---- 15 fail-open ----------------------------------------------------------------------------
sb = field(r, "codellm", "sandbox") or {}
case(r, sb.get("mode") == "native" and sorted(sb.get("layers") or []) == sorted(ALL_LAYERS)
     and sb.get("missing") == [],
     "[15 fail-open] codellm.sandbox: native, all %d layers applied, missing []" % len(ALL_LAYERS), sb)
# a second filter only without a run cgroup: memfd_create → ENOSYS
NFILT = "1" if (field(r, "codellm", "usage") or {}).get("memory_bound") != "none" else "2"
case(r, stt.get("Seccomp") == "2" and stt.get("Seccomp_filters") == NFILT,
     "[15 fail-open] /proc/self/status Seccomp: 2 (filter mode), %s filter(s)" % NFILT,
     (stt.get("Seccomp"), stt.get("Seccomp_filters")))
ROOT_MIN = {"code", "dev", "etc", "proc", "tmp", "usr", "work"}
DEV_SET = {"fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
           "tty", "urandom", "zero"}
def listed(v):
    try:
        return set(eval(v[3:])) if str(v).startswith("ok:") else None
    except Exception:
        return None
lr, ld = listed(B.get("ll_listdir_root")), listed(B.get("ll_listdir_dev"))
case(r, lr is not None and ROOT_MIN <= lr and not lr & {"run", "home", "var", "sys", "root"}
     and ld is not None and ld <= DEV_SET and {"null", "shm", "pts", "ptmx"} <= ld
     and B.get("ll_write_random") == "EACCES" and B.get("ll_read_etc") == "ok:True"
     and B.get("ll_write_work") == "ok:2",
     "[15 fail-open] Landlock in force: writing /dev/random (mode 0666) → EACCES; / and /dev list "
     "only the minimal root (/etc, /work allowed)",
     [B.get(k) for k in ("ll_listdir_root", "ll_listdir_dev", "ll_write_random", "ll_read_etc", "ll_write_work")])
case(r, B.get("ll_write_etc") in ("EROFS", "EACCES") and B.get("ll_write_root") in ("EROFS", "EACCES"),
     "[15 fail-open] writing /etc/x or /x fails", (B.get("ll_write_etc"), B.get("ll_write_root")))
case(r, B.get("hostname") == "codellm" and sb.get("net") == "own",
     "[15 fail-open] the hostname is codellm (own UTS ns); net is the block's own namespace",
     (B.get("hostname"), sb.get("net")))
case(r, isinstance(B.get("landlock_abi"), int) and B["landlock_abi"] >= 6,
     "[15 fail-open] Landlock ABI ≥ 6 (abstract-socket and signal scoping available)", B.get("landlock_abi"))

# fail-open for real: a handler that cannot create user namespaces
# (user.max_user_namespaces=0 in a user namespace of the wrapper's own)
wrap_dir = tempfile.mkdtemp(prefix="codellm-esc-wrap-")
os.chmod(wrap_dir, 0o755)
wrapper = os.path.join(wrap_dir, "handler")
with open(wrapper, "w") as f:
    f.write("#!/bin/sh\n"
            "exec unshare --user --map-root-user /bin/sh -c "
            "'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' %s \"$@\"\n" % HANDLER)
os.chmod(wrapper, 0o755)
M15 = "89." + U
fail_code = "import os\nopen('ran', 'w').write('x')\nos.execv('/bin/sleep', ['sleep', '%s'])\n" % M15
if shutil.which("unshare"):
    with Server("--timeout", "20", sandbox="native", handler=wrapper) as sw:
        rw = sw.run(block("python", fail_code))
        err = rw.error() or {}
        ran = bool(procs_matching(M15))
        t.ok(rw.status == 503 and err.get("code") == "sandbox_unavailable" and not ran,
             "[15 fail-open] native without user namespaces: 503 sandbox_unavailable, the block never runs",
             diag_of(rw, (err, ran)))
        t.ok("workdir" in json.dumps(err) or "userns" in json.dumps(err),
             "[15 fail-open] the 503 names the layer that could not be applied", diag_of(rw, err))
    with Server("--timeout", "20", "--sandbox", "besteffort", handler=wrapper) as sw:
        rw = sw.run(pyblock("R['uid'] = os.getuid()"))
        miss = field(rw, "codellm", "sandbox", "missing") or []
        t.ok((completion_ok(rw) and field(rw, "codellm", "sandbox", "mode") == "besteffort" and len(miss) > 0)
             or (rw.status == 503 and (rw.error() or {}).get("code") == "sandbox_unavailable"),
             "[15 fail-open] besteffort on the same host either reports the missing layers or refuses (503)",
             diag_of(rw, miss))
    kill_leftovers(M15)
else:
    t.skip("[15 fail-open] native without user namespaces → 503", "no unshare(1) on this host")
    t.skip("[15 fail-open] the 503 names the layer", "no unshare(1) on this host")
    t.skip("[15 fail-open] besteffort reports what is missing", "no unshare(1) on this host")
shutil.rmtree(wrap_dir, ignore_errors=True)


# ======================================================================================
# 2 outliving the run
# ======================================================================================
M2 = "86." + U
daemons_code = r'''
M = %r
def spawn_daemon():
    if os.fork() == 0:                     # setsid + double fork
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", M + "1"])
        os._exit(0)
    os.wait()
spawn_daemon()
subprocess.run(["bash", "-c", "nohup sleep %%s2 >/dev/null 2>&1 & disown" %% M])
subprocess.Popen(["bash", "-c", "trap '' TERM HUP INT; exec sleep %%s3" %% M], start_new_session=True)
if os.fork() == 0:                         # a python daemon ignoring TERM/HUP, in its own session
    os.setsid()
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    os.execv("/bin/sleep", ["sleep", M + "4"])
# until all four have exec'd their sleep, however slowly they start (the
# run's --timeout is the backstop: then nothing is printed)
alive = {}
while len(alive) < 4:
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                c = open("/proc/%%s/cmdline" %% p, "rb").read().split(b"\0")
                if len(c) > 1 and c[1].decode().startswith(M):
                    alive[c[1].decode()[-1]] = open("/proc/%%s/status" %% p).read().split("SigIgn:\t")[1][:16]
            except OSError:
                continue
    time.sleep(0.01)
R['alive'] = alive
''' % M2
r2 = MAIN.run(pyblock(daemons_code))
D2 = jcontent(r2) or {}
gone = {i: wait_gone(M2 + i, 20) for i in "1234"}    # they would live 86 s
alive2 = D2.get("alive") or {}
case(r2, alive2.get("1") is not None and gone["1"],
     "[2 outlive] setsid + double-fork daemon: alive in the block, gone after the response", (alive2, gone))
case(r2, alive2.get("2") is not None and gone["2"],
     "[2 outlive] `nohup sleep MARKER & disown`: gone after the response", (alive2, gone))
case(r2, alive2.get("3") is not None and alive2.get("4") is not None and int(alive2["4"], 16) & 0x4003
     and gone["3"] and gone["4"],
     "[2 outlive] processes ignoring SIGTERM/SIGHUP/SIGINT (own session): gone after the response", (alive2, gone))
kill_leftovers(M2)

rt, seen_t, _ = F_DAEMONS_TIMEOUT.result()
gone_t = wait_gone(M2T, 20)                               # they would live 87 s
case(rt, field(rt, "codellm", "exit_code") == 124 and field(rt, "codellm", "timed_out") is True
     and len(seen_t) == 4 and gone_t,
     "[2 outlive] run timed out (--timeout 6, exit 124): its setsid/nohup/TERM-ignoring daemons are all gone",
     (seen_t, gone_t, procs_matching(M2T)))
kill_leftovers(M2T)

seen_k, handlers, gone_k, el_k, rk = F_HANDLER_DEATH.result()
t.ok(seen_k and len(handlers) == 1 and gone_k and rk.json is None and not descendants(KILLSRV.proc.pid),
     "[2 outlive] SIGKILL of the handler mid-run: every block process (daemons included) dies within %.2f s"
     % el_k, diag_of(rk, (seen_k, handlers, gone_k, procs_matching(M2K), descendants(KILLSRV.proc.pid))))
kill_leftovers(M2K)

# ======================================================================================
# 5 side channels across runs
# ======================================================================================
ra, rb, rc = F_IPC.result()
A5, B5, C5 = jcontent(ra) or {}, jcontent(rb) or {}, jcontent(rc) or {}
overlap = (isinstance(A5.get("t_ready"), float) and isinstance(B5.get("t_check"), float)
           and A5["t_ready"] < B5["t_check"] < A5["t_end"])
# A made its objects (and sees them itself), or SysV IPC is denied
# outright (ENOSYS/EPERM): either way B must find nothing
IPC_CLOSED = ("ENOSYS", "EPERM")
ipc_ok = all(str(A5.get(k, "")).startswith("ok:") for k in ("shm", "msg", "sem", "self_shm"))
ipc_denied = all(A5.get(k) in IPC_CLOSED for k in ("shm", "msg", "sem"))
a_ready = A5.get("self_connect") == "ok:None"
case(rb, completion_ok(ra) and a_ready and overlap and (ipc_ok or ipc_denied) and
     all(B5.get(k) in ("ENOENT",) + IPC_CLOSED for k in ("shm", "msg", "sem")),
     "[5 side] SysV shm/msg/sem key made by a concurrent run is not visible (ENOENT, or SysV IPC denied)",
     (A5, B5))
case(rb, completion_ok(ra) and a_ready and overlap and B5.get("abstract") in ("ECONNREFUSED", "EPERM")
     and B5.get("abstract_dgram") in ("ECONNREFUSED", "EPERM"),
     "[5 side] abstract unix socket listening in a concurrent run: connect/sendto → refused", (A5, B5))
case(rc, all(C5.get(k) in ("ENOENT",) + IPC_CLOSED for k in ("shm", "msg", "sem"))
     and C5.get("abstract") in ("ECONNREFUSED", "EPERM"),
     "[5 side] the next run does not see the previous run's SysV objects or socket name either", C5)

same_run = (
    pyblock(r'''
K = %d
name = b"\0codellm-esc-same-%%d" %% K
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(name)
srv.listen(4)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
R['self'] = tryf(lambda: c.connect(name))
R['shm'] = ipc(libc.shmget(K + 1, 4096, 0o1000 | 0o600))
sys.stdout.write(json.dumps(R) + "\n")
sys.stdout.flush()
# listening (and holding the segment) until block 1 has tried: it leaves
# a file in the run's shared working directory (the run's --timeout is
# the backstop)
while not os.path.exists("block1-tried"):
    time.sleep(0.01)
sys.exit(0)
''' % K5).replace(EPILOGUE, "\n") +
    pyblock(r'''
K = %d
R['block0'] = json.loads(sys.stdin.readline())
R['connect'] = connect_err(socket.AF_UNIX, b"\0codellm-esc-same-%%d" %% K)
R['shm'] = ipc(libc.shmget(K + 1, 0, 0))
open("block1-tried", "w").close()
''' % K5))
rsr = MAIN.run(same_run)
S5 = jcontent(rsr) or {}
case(rsr, get(S5, "block0", "self") == "ok:None" and S5.get("connect") in ("ECONNREFUSED", "EPERM"),
     "[5 side] abstract socket of block 0 (listening, self-connect works) unreachable from block 1 of the same run",
     S5)
case(rsr, (str(get(S5, "block0", "shm")).startswith("ok:") and S5.get("shm") == "ENOENT")
     or (get(S5, "block0", "shm") in IPC_CLOSED and S5.get("shm") in IPC_CLOSED),
     "[5 side] SysV shm of block 0 is not visible to block 1 of the same run (IPC ns per block, or SysV denied)",
     S5)

# ======================================================================================
# 7 the supervisor's own files
# ======================================================================================
plant_code = r'''
# everything relative to the working directory (the run's workdir)
for name, target in (("shadow", "/etc/shadow"), ("init-root", "/proc/1/root"), ("root", "/"),
                     ("passwd", "/etc/passwd"), ("up", ".."), ("self", "/work")):
    os.symlink(target, name)
os.mkfifo("fifo")
os.mkfifo("code-fifo")
os.makedirs("locked/inner/deeper")
for i in range(5):
    open("locked/inner/f%d" % i, "w").write("x")
d = "deep"
os.mkdir(d)
for i in range(200):
    d = os.path.join(d, "d")
    try:
        os.mkdir(d)
    except OSError:
        break
os.chmod("locked/inner/deeper", 0)
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
os.symlink("fifo", "fleet_input.json") if not os.path.lexists("fleet_input.json") else None
R['cwd'] = os.getcwd()
R['planted'] = sorted(os.listdir("."))
R['follow_shadow'] = tryf(lambda: open("shadow").read())
R['chmod_via_link'] = tryf(lambda: os.chmod("passwd", 0o644))     # its usual mode: no harm either way
R['hardlink_code'] = tryf(lambda: os.link("/code/block-0.py", "hl-code"))
R['hardlink_passwd'] = tryf(lambda: os.link("/etc/passwd", "hl-passwd"))
R['write_code'] = tryf(lambda: open("/code/block-0.py", "a").write("x"))
R['create_code'] = tryf(lambda: open("/code/evil.py", "w"))
R['unlink_code'] = tryf(lambda: os.unlink("/code/block-0.py"))
R['chmod_code'] = tryf(lambda: os.chmod("/code/block-0.py", 0o777))
R['rename_code'] = tryf(lambda: os.rename("/code/block-0.py", "moved.py"))
R['mkfifo_code'] = tryf(lambda: os.mkfifo("/code/fifo"))
here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
os.chmod(".", 0)
R['work_mode'] = oct(os.fstat(here).st_mode & 0o777)
'''
r7 = MAIN.run(pyblock(plant_code))
P7 = jcontent(r7) or {}
case(r7, "shadow" in (P7.get("planted") or []) and "fifo" in P7["planted"] and P7.get("work_mode") == "0o0"
     and P7.get("cwd") == "/work",
     "[7 files] symlinks to /etc/shadow, /proc/1/root, /, a FIFO, chmod 000 dirs and /work: the response arrives",
     P7)
case(r7, P7.get("follow_shadow") == "ENOENT" and P7.get("chmod_via_link") in ("EROFS", "EACCES", "EPERM"),
     "[7 files] the planted links lead nowhere inside (shadow ENOENT, chmod through link fails)",
     (P7.get("follow_shadow"), P7.get("chmod_via_link")))
case(r7, P7.get("hardlink_code") in ("EXDEV", "EPERM", "EACCES") and P7.get("hardlink_passwd") in ("EXDEV", "EPERM", "EACCES"),
     "[7 files] hardlink of /code/block-0.py or /etc/passwd into /work → EXDEV",
     (P7.get("hardlink_code"), P7.get("hardlink_passwd")))
CW = ("write_code", "create_code", "unlink_code", "chmod_code", "rename_code", "mkfifo_code")
case(r7, all(P7.get(k) in ("EROFS", "EACCES", "EPERM", "EXDEV") for k in CW),
     "[7 files] /code is read-only: append, create, unlink, chmod, rename, mkfifo all fail",
     {k: P7.get(k) for k in CW})
# the host is untouched and the next run starts clean
host_ok = os.stat("/etc/passwd") == HOST_PASSWD and (
    HOST_SHADOW is None or os.stat("/etc/shadow") == HOST_SHADOW)
r7b = MAIN.run(pyblock("R['work'] = sorted(os.listdir('/work'))\nR['mode'] = oct(os.stat('/work').st_mode & 0o777)"))
W7 = jcontent(r7b) or {}
case(r7b, W7.get("work") == [] and W7.get("mode") == "0o700" and host_ok,
     "[7 files] the next run's /work is empty (0700; no out/ until a block makes it) and host /etc/passwd, "
     "/etc/shadow are unchanged",
     (W7, host_ok))
case(r7b, MAIN.leftovers() == [] and LIM.leftovers() == [],
     "[7 files] no run directory left in the servers' TMPDIR", (MAIN.leftovers(), LIM.leftovers()))

bag_code = r'''
p = os.environ.get("FLEET_INPUT", "")
R['path'] = p
R['before'] = open(p).read() if p else None
R['write'] = tryf(lambda: open(p, "a").write("x"))
R['trunc'] = tryf(lambda: os.truncate(p, 0))
R['trunc_open'] = tryf(lambda: os.open(p, os.O_WRONLY | os.O_TRUNC))
R['chmod'] = tryf(lambda: os.chmod(p, 0o666))
R['unlink'] = tryf(lambda: os.unlink(p))
R['rename'] = tryf(lambda: os.rename(p, "moved.json"))
R['rename_over'] = tryf(lambda: (open("new.json", "w").write("{}"), os.rename("new.json", p)))
R['symlink_over'] = tryf(lambda: os.symlink("/etc/passwd", p))
R['after'] = open(p).read() if p else None
'''
bag = json.dumps({"bag": U, "items": [1, 2, 3]})
r7c = MAIN.chat({"model": "codellm", "messages": [
    {"role": "user", "name": "fleet_input", "content": bag},
    {"role": "user", "content": pyblock(bag_code) + block("python", "import os\nprint(open(os.environ['FLEET_INPUT']).read())")}]})
r7d = MAIN.chat({"model": "codellm", "messages": [
    {"role": "user", "name": "fleet_input", "content": bag},
    {"role": "user", "content": pyblock(bag_code)}]})
F7 = jcontent(r7d) or {}
BW = ("write", "trunc", "trunc_open", "chmod", "unlink", "rename", "rename_over", "symlink_over")
case(r7d, F7.get("path") == "/work/fleet_input.json" and F7.get("before") == bag and F7.get("after") == bag
     and all(F7.get(k) in ("EROFS", "EACCES", "EPERM", "EBUSY", "EEXIST") for k in BW),
     "[7 files] FLEET_INPUT cannot be written, truncated, chmod'ed, deleted, renamed or replaced",
     {k: F7.get(k) for k in ("path", "before", "after") + BW})
case(r7c, content(r7c) == bag + "\n",
     "[7 files] after block 0 attacked the bag, block 1 of the same run reads it intact", content(r7c))

# the artifacts: after the run the handler reads /work/out from outside;
# what the code planted there must not make it read anything else or block
# (the run makes no out/: the code makes it, then plants)
out_code = r"""
import base64
open("input.txt", "w").write("in")
os.makedirs("out/sub", exist_ok=True)
os.symlink("/etc/shadow", "out/shadow")
os.symlink("/proc/self/root/etc/passwd", "out/proc-passwd")
os.symlink("/etc", "out/etc-dir")
os.symlink("../input.txt", "out/sub/up")
os.mkfifo("out/fifo")
os.link("input.txt", "out/hard")
s = socket.socket(socket.AF_UNIX); s.bind("out/sock")
with open("out/sparse", "wb") as f:
    f.truncate(1 << 33)
open("out/ok.txt", "w").write("fine")
open("out/locked", "w").write("own file")
os.chmod("out/locked", 0)
R['planted'] = sorted(os.listdir("out"))
"""
t0 = time.time()
r7e = MAIN.run(pyblock(out_code))
el7 = time.time() - t0
F7E = {f.get("name"): f for f in (field(r7e, "codellm", "files") or [])}
def omitted(name):
    return (F7E.get(name) or {}).get("omitted")
case(r7e, sorted(F7E) == ["out/etc-dir", "out/fifo", "out/hard", "out/locked", "out/ok.txt",
                          "out/proc-passwd", "out/shadow", "out/sock", "out/sparse", "out/sub/up"]
     and el7 < 60,
     "[7 files] /work/out planted with symlinks, a FIFO, a socket, a hard link and an 8 GiB sparse file: "
     "the answer arrives (in %.1f s) and lists each" % el7, (sorted(F7E), el7))
case(r7e, all(omitted(n) == "a symbolic link" for n in ("out/shadow", "out/proc-passwd", "out/etc-dir", "out/sub/up"))
     and all("data_b64" not in F7E.get(n, {}) for n in ("out/shadow", "out/proc-passwd", "out/etc-dir", "out/sub/up")),
     "[7 files] a symlink in out/ (to /etc/shadow, through /proc/self/root, to a directory, up the tree) is never followed",
     {n: F7E.get(n) for n in ("out/shadow", "out/proc-passwd", "out/etc-dir", "out/sub/up")})
case(r7e, omitted("out/fifo") == "not a regular file" and omitted("out/sock") == "not a regular file",
     "[7 files] a FIFO and a socket in out/ are listed, never opened (the answer did not wait on the FIFO)",
     (F7E.get("out/fifo"), F7E.get("out/sock")))
case(r7e, (omitted("out/hard") or "").startswith("a hard link"),
     "[7 files] a hard link in out/ (to a file outside it) is refused", F7E.get("out/hard"))
case(r7e, omitted("out/sparse") == "over --max-artifact-bytes" and (F7E.get("out/sparse") or {}).get("bytes") == 1 << 33,
     "[7 files] an 8 GiB sparse file is listed with its size, never read", F7E.get("out/sparse"))
case(r7e, base64.b64decode((F7E.get("out/ok.txt") or {}).get("data_b64", "")) == b"fine"
     and base64.b64decode((F7E.get("out/locked") or {}).get("data_b64", "")) == b"own file",
     "[7 files] the run's own regular files come back (a chmod 000 one too)",
     (F7E.get("out/ok.txt"), F7E.get("out/locked")))
# out/ made with a file in it, then replaced
MKOUT = 'import shutil\nos.makedirs("out", exist_ok=True)\nopen("out/x", "w").write("x")\nshutil.rmtree("out")\n'
r7f = MAIN.run(pyblock(MKOUT + 'os.symlink("/etc", "out")\nR["out"] = os.readlink("out")'))
case(r7f, r7f.status == 200 and field(r7f, "codellm", "files") is None,
     "[7 files] out/ replaced by a symlink to /etc: nothing is read through it", field(r7f, "codellm"))
r7g = MAIN.run(pyblock(MKOUT + 'os.mkfifo("out")\nR["out"] = "fifo"'))
case(r7g, r7g.status == 200 and field(r7g, "codellm", "files") is None,
     "[7 files] out/ replaced by a FIFO: the answer arrives, nothing listed", field(r7g, "codellm"))


# ======================================================================================
# 12 resource exhaustion (LIM: --max-procs 64 --memory-max 256M --workdir-bytes 8M
#    --workdir-inodes 200 --max-stdout-bytes 1M --max-file-bytes 1M --timeout 10)
# ======================================================================================
M12 = "85." + U
forkbomb = r'''
M = %r
forked, err = 0, None
for i in range(100000):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno)
        break
    if pid == 0:
        os.execv("/bin/bash", ["bash", "-c", ":(){ : | : & }; : ; exec sleep " + M])
    forked += 1
R['forked'] = forked
R['err'] = err
# a listing of /proc is not atomic: while the bombs churn, a process
# that exits after it was listed and one forked after it can both be
# counted; the fewest of three listings is what existed at once
R['procs'] = min(len([p for p in os.listdir("/proc") if p.isdigit()]) for _ in range(3))
''' % M12
t0 = time.time()
r12 = LIM.run(pyblock(forkbomb))
el12 = time.time() - t0
FB = jcontent(r12) or {}
gone12 = wait_gone(M12, 20)               # a survivor would sleep 85 s
deadline = time.time() + 20
while descendants(LIM.proc.pid) and time.time() < deadline:
    time.sleep(0.05)
left12 = descendants(LIM.proc.pid)
case(r12, FB.get("err") == "EAGAIN" and FB.get("forked", 999) < 64 and (FB.get("procs") or 999) <= 66,
     "[12 exhaust] fork bomb (bash :(){ :|:& } under python forks) stops at --max-procs 64 (EAGAIN)", FB)
r12b = LIM.run(block("python", "print('fine')"))
case(r12b, gone12 and not left12 and content(r12b) == "fine\n",
     "[12 exhaust] after the fork bomb (%.1f s) nothing of it survives below the server, the next run works"
     % el12, (gone12, left12[:10], procs_matching(M12)[:10]))
kill_leftovers(M12)

mem_code = r'''
try:
    b = bytearray(4 << 30)
    R['big'] = "allocated"
except MemoryError:
    R['big'] = "MemoryError"
chunks = []
try:
    while len(chunks) < 1024:
        chunks.append(bytearray(16 << 20))
    R['chunks'] = "no limit"
except MemoryError:
    R['chunks'] = "MemoryError"
R['mb'] = 16 * len(chunks)
del chunks
R['mmap'] = tryf(lambda: mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
'''
r12m = LIM.run(pyblock(mem_code))
MB = jcontent(r12m) or {}
case(r12m, MB.get("big") == "MemoryError" and MB.get("chunks") == "MemoryError" and MB.get("mb", 999) <= 256
     and MB.get("mmap") == "ENOMEM",
     "[12 exhaust] memory bomb: 4 GiB → MemoryError, 16 MiB chunks stop below --memory-max 256M, 1 GiB mmap ENOMEM",
     MB)
# the limit ends it at once; without one, LIM's --timeout 10 would
t0 = time.time()
r12n = LIM.run(block("node", "const a = []; for (;;) a.push(Buffer.alloc(16 << 20, 1));"))
el12n = time.time() - t0
nb = get(results(r12n), 0) or {}
case(r12n, nb.get("exit_code") not in (None, 0) and field(r12n, "codellm", "timed_out") is False,
     "[12 exhaust] node memory bomb (Buffer.alloc loop) dies by the limit, the response arrives "
     "(in %.1f s)" % el12n,
     (nb.get("exit_code"), nb.get("signal"), (nb.get("stderr") or "")[-300:]))

shm_code = r'''
def memfd_big():
    try:
        fd = os.memfd_create("bomb")
    except OSError as e:
        return ["memfd_create:" + errno.errorcode.get(e.errno, "?")]
    return [tryf(lambda: os.ftruncate(fd, 1 << 30)), tryf(lambda: os.write(fd, b"\1" * (2 << 20)))]
R['memfd_big'] = in_child(memfd_big)
def memfd_touch():
    try:
        fd = os.memfd_create("bomb2")
    except OSError as e:
        return "memfd_create:" + errno.errorcode.get(e.errno, "?")
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    addr = libc.mmap(None, 512 << 20, 3, 1, fd, 0)        # MAP_SHARED, 512 MiB of an empty memfd
    if addr in (None, ctypes.c_void_p(-1).value):
        return en(-ctypes.get_errno())
    ctypes.memset(addr + (256 << 20), 1, 4096)            # beyond EOF: SIGBUS
    return "touched"
R['memfd_touch'] = in_child(memfd_touch)
def memfd_fanout(n):
    fds = []
    try:
        for i in range(n):
            fd = os.memfd_create("x%d" % i)
            os.write(fd, b"\1" * (1 << 20))
            fds.append(fd)
    except OSError as e:
        return {"mb": len(fds), "err": errno.errorcode.get(e.errno)}
    return {"mb": len(fds)}
R['memfd_fanout'] = in_child(lambda: memfd_fanout(320))
def one_segment(mb):
    sid = libc.shmget(0, ctypes.c_size_t(mb << 20), 0o1000 | 0o600)
    return "ok" if sid >= 0 else en(-ctypes.get_errno())
R['sysv_seg_big'] = in_child(lambda: one_segment(32))
def sysv_shm(total_mb, seg_mb):
    got = 0
    while got < total_mb:
        sid = libc.shmget(0, ctypes.c_size_t(seg_mb << 20), 0o1000 | 0o600)
        if sid < 0:
            return {"mb": got, "err": en(-ctypes.get_errno()), "at": "shmget"}
        addr = libc.shmat(sid, None, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return {"mb": got, "err": en(-ctypes.get_errno()), "at": "shmat"}
        ctypes.memset(addr, 1, seg_mb << 20)
        libc.shmdt(ctypes.c_void_p(addr))          # the segment lives on in the IPC ns
        got += seg_mb
    return {"mb": got}
R['sysv_shm'] = in_child(lambda: sysv_shm(320, 4))
def sysv_msg(total_mb):
    class Msg(ctypes.Structure):
        _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 8192)]
    m = Msg(1, b"\1" * 8192)
    got = 0
    while got < total_mb << 20:
        q = libc.msgget(0, 0o1000 | 0o600)
        if q < 0:
            return {"mb": got >> 20, "err": en(-ctypes.get_errno()), "at": "msgget"}
        for i in range(2):                  # msgmnb 16 KiB per queue
            if libc.msgsnd(q, ctypes.byref(m), 8192, 0o4000) < 0:   # IPC_NOWAIT
                return {"mb": got >> 20, "err": en(-ctypes.get_errno()), "at": "msgsnd"}
            got += 8192
    return {"mb": got >> 20}
R['sysv_msg'] = in_child(lambda: sysv_msg(320))
def shared_anon(mb):
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    got = 0
    while got < mb:
        addr = libc.mmap(None, 32 << 20, 3, 0x01 | 0x20, -1, 0)       # MAP_SHARED | MAP_ANONYMOUS
        if addr in (None, ctypes.c_void_p(-1).value):
            return {"mb": got, "err": en(-ctypes.get_errno())}
        ctypes.memset(addr, 1, 32 << 20)
        got += 32
    return {"mb": got}
R['shared_anon'] = in_child(lambda: shared_anon(2048))
def dev_shm_fill(mb):
    got = 0
    try:
        for i in range(mb):                       # files of 1 MiB (--max-file-bytes)
            with open("/dev/shm/fill%d" % i, "wb") as f:
                for k in range(4):
                    f.write(b"\1" * (256 << 10))
                    f.flush()
                    got += 256 << 10
    except OSError as e:
        return {"mb": got >> 20, "err": errno.errorcode.get(e.errno)}
    return {"mb": got >> 20}
R['dev_shm_fill'] = in_child(lambda: dev_shm_fill(64))
R['oom_score_adj'] = open('/proc/self/oom_score_adj').read().strip()
'''
sock_code = r'''
def sock_buffers(procs, pairs):
    """procs processes, each filling both directions of `pairs` unix
    socketpairs and holding them: kernel memory no rlimit counts"""
    r, w = os.pipe()
    go_r, go_w = os.pipe()               # closed by the parent once all are full
    kids = []
    for k in range(procs):
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            total = 0
            keep = []
            chunk = b"\1" * 65536
            try:
                for i in range(pairs):
                    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                    keep.append((a, b))
                    for s in (a, b):
                        s.setblocking(False)
                        while True:
                            try:
                                total += s.send(chunk)
                            except BlockingIOError:
                                break
            except OSError:
                pass
            os.write(w, b"%d\n" % total)
            os.close(w)
            os.read(go_r, 1)                  # hold it while the others fill theirs
            os._exit(0)
        kids.append(pid)
    os.close(w)
    os.close(go_r)
    data = b""
    while True:                           # EOF: each has written its total (or died)
        b = os.read(r, 4096)
        if not b:
            break
        data += b
    os.close(go_w)                        # every one is full: all may end
    for pid in kids:
        os.waitpid(pid, 0)
    return {"mb": sum(int(x) for x in data.split()) >> 20, "procs": len(data.split())}
R['sock_buffers'] = in_child(lambda: sock_buffers(2, 480))
R['oom_score_adj'] = open('/proc/self/oom_score_adj').read().strip()
'''
# SHM: --memory-max 256M --address-space-max 1G --max-file-bytes 1M
# --shm-bytes 16M --max-open-files 64
r12s = SHM.run(pyblock(shm_code))
SH = jcontent(r12s) or {}
r12k = LIM.run(pyblock(sock_code))
SK = jcontent(r12k) or {}
# With a run cgroup (a root handler here) memfds are files within the
# rlimits and the cgroup bounds their sum; without one (a non-root
# handler on these hosts) memfd_create fails with ENOSYS (issue 32).
BOUND12 = ((field(r12s, "codellm", "usage") or {}).get("memory_bound"))
if BOUND12 == "none":
    case(r12s, get(SH, "memfd_big", "out") == ["memfd_create:ENOSYS"]
         and SH.get("memfd_touch", {}).get("out") == "memfd_create:ENOSYS"
         and get(SH, "memfd_fanout", "out") == {"mb": 0, "err": "ENOSYS"},
         "[12 exhaust][18 memory] no run cgroup (memory_bound none): memfd_create fails with "
         "ENOSYS, so no memfd holds memory nothing bounds",
         (SH.get("memfd_big"), SH.get("memfd_touch"), SH.get("memfd_fanout")))
else:
    case(r12s, get(SH, "memfd_big", "out") == ["EFBIG", "ok:1048576"],
         "[12 exhaust] memfd bomb: ftruncate(1 GiB) → EFBIG, write stops at --max-file-bytes 1M "
         "(run cgroup: %s)" % BOUND12, SH.get("memfd_big"))
    case(r12s, SH.get("memfd_touch") == {"sig": signal.SIGBUS},
         "[12 exhaust] memfd mapped 512 MiB past its (empty) end: touching it → SIGBUS",
         SH.get("memfd_touch"))
    case(r12s, get(SH, "memfd_fanout", "out", "err") == "EMFILE" and get(SH, "memfd_fanout", "out", "mb") < 64,
         "[18 memory] memfds: each is a file within --max-file-bytes 1M, as many as --max-open-files 64 "
         "allows (EMFILE): %s MiB" % get(SH, "memfd_fanout", "out", "mb"), SH.get("memfd_fanout"))
case(r12s, get(SH, "sysv_seg_big", "out") == "EINVAL"
     and get(SH, "sysv_shm", "out", "err") == "ENOSPC" and get(SH, "sysv_shm", "out", "mb") <= 16,
     "[18 memory] SysV shm: a 32 MiB segment → EINVAL (shmmax = --shm-bytes 16M); 4 MiB segments "
     "stop at 16 MiB in all (shmall, ENOSPC), though nobody maps them",
     (SH.get("sysv_seg_big"), SH.get("sysv_shm")))
case(r12s, get(SH, "sysv_msg", "out", "err") == "ENOSPC" and get(SH, "sysv_msg", "out", "mb") <= 17,
     "[18 memory] SysV message queues: at most msgmni = --shm-bytes / 16 KiB queues of 16 KiB "
     "(ENOSPC at %s MiB)" % get(SH, "sysv_msg", "out", "mb"), SH.get("sysv_msg"))
case(r12s, get(SH, "shared_anon", "out", "err") == "ENOMEM" and get(SH, "shared_anon", "out", "mb") < 1024,
     "[18 memory] MAP_SHARED|MAP_ANONYMOUS mappings stop at --address-space-max 1G (ENOMEM at %s MiB)"
     % get(SH, "shared_anon", "out", "mb"), SH.get("shared_anon"))
case(r12s, get(SH, "dev_shm_fill", "out", "err") == "ENOSPC" and get(SH, "dev_shm_fill", "out", "mb") <= 16,
     "[18 memory] /dev/shm is full at --shm-bytes 16M (ENOSPC)", SH.get("dev_shm_fill"))
# Socket buffers are kernel memory no rlimit counts: only a memory cgroup
# (the unit's MemoryMax) bounds them -- a documented residual risk. What
# the handler guarantees here: the flood ends with the run, the answer
# arrives, and every block process is the OOM killer's first choice.
case(r12k, isinstance(get(SK, "sock_buffers", "out"), dict) and SK.get("oom_score_adj") == "1000"
     and SH.get("oom_score_adj") == "1000",
     "[12 exhaust] unix socketpair buffers filled by 2 processes (%s MiB, bounded only by the unit's MemoryMax): "
     "the answer arrives and blocks run with oom_score_adj 1000" % get(SK, "sock_buffers", "out", "mb"),
     (SK.get("sock_buffers"), SK.get("oom_score_adj")))

# class 18: block 0's standard input is a sealed memfd opened read-only:
# 1 MiB handed in cannot grow into shared memory past the limits
stdin_code = r'''
st0 = os.fstat(0)
R['size'] = st0.st_size
R['write0'] = tryf(lambda: os.write(0, b"x"))
def reopened():
    fd = os.open("/proc/self/fd/0", os.O_RDWR)
    out = [tryf(lambda: os.write(fd, b"x")), tryf(lambda: os.ftruncate(fd, 200 << 20)),
           tryf(lambda: os.posix_fallocate(fd, 0, 200 << 20)),
           tryf(lambda: mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))]
    os.close(fd)
    return out
R['reopened_rw'] = tryf(reopened)
R['ftruncate0'] = tryf(lambda: os.ftruncate(0, 200 << 20))
R['size_after'] = os.fstat(0).st_size
R['dev_stdin'] = tryf(lambda: len(open("/dev/stdin", "rb").read()))
R['read'] = len(sys.stdin.buffer.read())
'''
rsi = MAIN.chat({"model": "codellm", "messages": [
    {"role": "user", "name": "stdin", "content": "s" * (1 << 20)},
    {"role": "user", "content": pyblock(stdin_code)}]})
SI = jcontent(rsi) or {}
case(rsi, SI.get("size") == 1 << 20 and SI.get("size_after") == 1 << 20 and SI.get("write0") == "EBADF"
     and SI.get("ftruncate0") in ("EINVAL", "EBADF", "EPERM")
     and SI.get("reopened_rw") == "ok:" + repr(["EPERM"] * 4)
     and SI.get("dev_stdin") == "ok:%d" % (1 << 20) and SI.get("read") == 1 << 20,
     "[18 memory] stdin (1 MiB) is a sealed memfd opened read-only: write → EBADF, reopened "
     "read-write its write, ftruncate(200M), fallocate and shared writable mmap → EPERM; "
     "/dev/stdin reads it whole", SI)

disk_code = r'''
total = 0
try:
    for i in range(100):
        with open("fill%d" % i, "wb") as f:
            for k in range(4):
                f.write(b"\0" * (256 << 10))
                f.flush()
                total += 256 << 10
    R['disk'] = "no limit"
except OSError as e:
    R['disk'] = errno.errorcode.get(e.errno)
R['disk_bytes'] = total
for n in os.listdir("."):
    if n.startswith("fill"):
        os.unlink(n)
count = 0
try:
    for i in range(100000):
        open("i%d" % i, "w").close()
        count += 1
    R['inodes'] = "no limit"
except OSError as e:
    R['inodes'] = errno.errorcode.get(e.errno)
R['inode_count'] = count
R['mkdir_after'] = tryf(lambda: os.mkdir("one-more"))
'''
r12d = LIM.run(pyblock(disk_code))
DK = jcontent(r12d) or {}
case(r12d, DK.get("disk") == "ENOSPC" and 7 << 20 <= (DK.get("disk_bytes") or 0) <= 8 << 20,
     "[12 exhaust] disk fill of /work stops with ENOSPC at --workdir-bytes 8M",
     (DK.get("disk"), DK.get("disk_bytes")))
case(r12d, DK.get("inodes") == "ENOSPC" and 150 <= (DK.get("inode_count") or 0) <= 200
     and DK.get("mkdir_after") == "ENOSPC",
     "[12 exhaust] inode fill of /work stops with ENOSPC at --workdir-inodes 200",
     (DK.get("inodes"), DK.get("inode_count"), DK.get("mkdir_after")))

r12f = LIM.run(block("bash", "head -c 3000000 /dev/zero > big2; echo rc=$?"))
case(r12f, (content(r12f) or "").strip() == "rc=153",
     "[12 exhaust] bash: writing a file over --max-file-bytes 1M → the writer dies by SIGXFSZ (rc 153)",
     content(r12f))
r12g = LIM.run(pyblock(r'''
def big():
    with open("big", "wb") as f:
        f.write(b"\0" * (2 << 20))
R['python'] = tryf(big)
R['size'] = os.stat("big").st_size
'''))
FS = jcontent(r12g) or {}
case(r12g, FS.get("python") == "EFBIG" and FS.get("size") == 1 << 20,
     "[12 exhaust] python (SIGXFSZ ignored): writing 2 MiB → EFBIG, the file stops at 1 MiB", FS)

# output floods: the handler's memory must not grow with them. Once its
# 100 MB have passed the handler the block waits in a `sleep` (longer than
# LIM's --timeout 10, the backstop): the handler's peak RSS (VmHWM) is
# read then, whatever the sampling thread caught, and the sleep killed.
# The time is the flood's, up to that point: a handler that stopped
# draining would hold the block until the --timeout 10.
MG = "83.12" + U
with HWM(LIM) as hw:
    t0 = time.time()
    fg = bg(LIM.run, block("python", "import subprocess, sys\nfor i in range(100):\n    sys.stdout.buffer.write(b'x' * (1 << 20))\n"
                                     "sys.stdout.flush()\nsubprocess.run(['sleep', '%s1'])\n" % MG))
    wait_held(fg, "sleep %s1" % MG)
    elg = time.time() - t0
    hw.sample()
    kill_leftovers("sleep %s1" % MG)
    rg = fg.result()
jg = rg.json or {}
case(rg, get(jg, "choices", 0, "finish_reason") == "length" and len(content(rg) or "") <= 1 << 20
     and get(results(rg), 0, "stdout_bytes") == 100 << 20 and elg < 10,
     "[12 exhaust] one giant 100 MB line → finish_reason length, 1 MiB kept, in %.1f s" % elg,
     (get(jg, "choices", 0, "finish_reason"), len(content(rg) or ""), get(results(rg), 0, "stdout_bytes")))
t.ok(hw.seen and 0 < hw.peak_kb < 48 * 1024,
     "[12 exhaust] the handler's peak RSS during the giant line stays small (%d KiB)" % hw.peak_kb,
     "handlers seen %r" % hw.seen)

with HWM(LIM) as hw2:
    t0 = time.time()
    fe = bg(LIM.run, block("python", "import subprocess, sys\nfor i in range(100):\n    sys.stderr.buffer.write(b'e' * (1 << 20))\n"
                                     "sys.stderr.flush()\nsubprocess.run(['sleep', '%s2'])\nprint('done')" % MG))
    wait_held(fe, "sleep %s2" % MG)
    ele = time.time() - t0
    hw2.sample()
    kill_leftovers("sleep %s2" % MG)
    re_ = fe.result()
case(re_, content(re_) == "done\n" and len(field(re_, "codellm", "stderr") or "") <= 65536 + 256
     and get(results(re_), 0, "stderr_bytes") == 100 << 20 and ele < 10 and hw2.seen
     and 0 < hw2.peak_kb < 48 * 1024,
     "[12 exhaust] 100 MB stderr flood: stderr capped to 64 KiB, handler peak RSS %d KiB, %.1f s" % (hw2.peak_kb, ele),
     (len(field(re_, "codellm", "stderr") or ""), get(results(re_), 0, "stderr_bytes"), hw2.seen))

# ended by timeout_s 3: within 12 s also on a loaded machine, where the
# server's --timeout would take 20 s and a hang the client's 30 s
rsr_, els = F_STOPPED_READER.result()
case(rsr_, field(rsr_, "codellm", "exit_code") == 124 and field(rsr_, "codellm", "timed_out") is True
     and els < 12,
     "[12 exhaust] block 0 floods a block 1 that never reads: timeout_s 3 ends it (exit 124) in %.1f s" % els,
     field(rsr_, "codellm"))

# ======================================================================================
# 17 one kernel uid for every run: per-user kernel limits
# ======================================================================================
# Run A takes every inotify instance and queues real-time signals until
# the kernel says no, and holds them (an exec'd sleep keeps the
# descriptors and the pending signals); run B, concurrent, must still get
# both. A root handler gives each run its slot's own uid; a non-root one
# gives each run 1/N of the uid's limits (N = --max-concurrent, 4 here).
# A's sleep outlasts UC's --timeout 20 (the backstop): the test kills it
# once B has finished, and checks that A still held everything then.
M17 = "83.17" + U
uc_a = r"""
libc.inotify_init.restype = ctypes.c_int
fds, err = [], None
while len(fds) < 100000:
    fd = libc.inotify_init()
    if fd < 0:
        err = errno.errorcode.get(ctypes.get_errno())
        break
    fds.append(fd)
R['inotify'] = [len(fds), err]
# sigqueue, not kill: only queued signals (SI_QUEUE) count against
# RLIMIT_SIGPENDING
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n, serr, me, rt = 0, None, os.getpid(), int(signal.SIGRTMIN)
while n < 1000000:
    if libc.sigqueue(me, rt, 0) < 0:
        serr = errno.errorcode.get(ctypes.get_errno())
        break
    n += 1
R['sigqueue'] = [n, serr]
sys.stdout.write(json.dumps(R) + "\n")
sys.stdout.flush()
os.execv("/bin/sleep", ["sleep", "%s"])
""" % M17
uc_b = r"""
libc.inotify_init.restype = ctypes.c_int
fd = libc.inotify_init()
R['inotify'] = "ok" if fd >= 0 else errno.errorcode.get(ctypes.get_errno())
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
R['sigqueue'] = "ok" if libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0) == 0 else \
    errno.errorcode.get(ctypes.get_errno())
"""
with open("/proc/sys/fs/inotify/max_user_instances") as f:
    MAX_INOTIFY = int(f.read())
fa = bg(UC.run, pyblock(uc_a).replace(EPILOGUE, "\n"))
seen_a = wait_held(fa, "sleep " + M17)
host_uids = []
for p in seen_a:
    try:
        with open("/proc/%d/status" % p) as f:
            host_uids += [int(ln.split()[1]) for ln in f if ln.startswith("Uid:")]
    except OSError:
        pass
rb17 = UC.run(pyblock(uc_b))
a_held = bool(seen_a) and set(seen_a) <= set(procs_matching("sleep " + M17))
kill_leftovers(M17)
ra17 = fa.result()
A17 = jcontent(ra17) or {}
B17 = jcontent(rb17) or {}
want_a = MAX_INOTIFY // 4 if AS_NONROOT else MAX_INOTIFY
case(rb17, a_held and get(A17, "inotify", 1) == "EMFILE" and B17.get("inotify") == "ok",
     "[17 ucounts] run A holds every inotify instance it can get (%s, EMFILE); concurrent run B "
     "still gets one" % get(A17, "inotify", 0), (A17, B17, seen_a, a_held))
uid_ok = (host_uids == [ESC_UID] if AS_NONROOT else
          len(host_uids) == 1 and 2147352576 <= host_uids[0] < 2147352576 + 4)
case(ra17, uid_ok,
     "[17 ucounts] on the host the block runs as %s" % (
         "the non-root handler's uid %d" % ESC_UID if AS_NONROOT else
         "its run slot's own uid (--slot-uid-base 2147352576 + slot): %s" % host_uids), host_uids)
case(ra17, get(A17, "inotify", 0) == want_a,
     "[17 ucounts] run A's inotify instances are exactly %s: %s" % (
         want_a, "1/4 of the uid's %d (runs share the non-root handler's uid)" % MAX_INOTIFY
         if AS_NONROOT else "the uid's whole %d (the run has its slot's own uid)" % MAX_INOTIFY),
     A17.get("inotify"))
case(rb17, a_held and get(A17, "sigqueue", 1) == "EAGAIN" and B17.get("sigqueue") == "ok",
     "[17 ucounts] run A queues real-time signals until EAGAIN (%s); run B can still queue one"
     % get(A17, "sigqueue", 0), (A17.get("sigqueue"), B17.get("sigqueue"), a_held))

# ======================================================================================
# 19 what the block's init holds
# ======================================================================================
# The init is codellm-init exec'd from a memfd: /proc/1 shows its own
# name and command line, and its memory (read from the host, as root)
# holds neither the key, nor the request, nor the handler's environment.
# The handler itself no longer holds the key once it has authenticated.
# The block waits in a sleep longer than MAIN's --timeout 20 (the
# backstop) until the test has read both memories, then it is killed.
M19 = "84.19" + U
REQ_SECRET = "req-secret-" + U + "-7f3a"
init_code = r"""
R['cmdline'] = open("/proc/1/cmdline", "rb").read().decode("latin-1")
R['comm'] = open("/proc/1/comm").read().strip()
R['status_name'] = [l.split()[1] for l in open("/proc/1/status") if l.startswith("Name:")]
R['dumpable'] = [tryf(lambda: open("/proc/1/%%s" %% f, "rb").read(1)) for f in ("environ", "mem", "maps", "auxv", "stack", "syscall")]
R['fdinfo'] = tryf(lambda: os.listdir("/proc/1/fdinfo"))
R['secret_in_code'] = %r != ""
sys.stdout.write(json.dumps(R) + "\n")
sys.stdout.flush()
os.execv("/bin/sleep", ["sleep", "%s"])
""" % (REQ_SECRET, M19)


def scan(pid):
    """which of the key, the request's secret and the environment's secret
    appear in the memory of host process pid"""
    found = set()
    needles = {"key": KEY.encode(), "request": REQ_SECRET.encode(), "environment": SECRET.encode()}
    try:
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    except OSError as e:
        return "E:%s" % errno.errorcode.get(e.errno)
    with mem:
        for ln in maps:
            rng, perms = ln.split()[:2]
            if "r" not in perms or ln.endswith("[vvar]") or ln.endswith("[vsyscall]"):
                continue
            lo, hi = (int(x, 16) for x in rng.split("-"))
            # the handler's and the init's own memory is small; regions of
            # hundreds of MiB are a sanitizer's shadow (make sanitize)
            if hi - lo > 256 << 20:
                continue
            # in chunks, overlapping by the longest needle
            pos, keep = lo, b""
            while pos < hi:
                try:
                    mem.seek(pos)
                    chunk = mem.read(min(1 << 20, hi - pos))
                except (OSError, OverflowError):
                    break
                if not chunk:
                    break
                data = keep + chunk
                for name, n in needles.items():
                    if n in data:
                        found.add(name)
                keep = data[-64:]
                pos += len(chunk)
    return sorted(found)


fi = bg(MAIN.run, pyblock(init_code).replace(EPILOGUE, "\n"))
sleepers = wait_held(fi, "sleep " + M19)
init_pid = handler_pid = None
if sleepers:
    par = parents()
    init_pid = par.get(sleepers[0])
    handler_pid = par.get(init_pid) if init_pid else None
init_scan = scan(init_pid) if init_pid else "no init found"
handler_scan = scan(handler_pid) if handler_pid else "no handler found"
try:
    init_comm = open("/proc/%d/comm" % init_pid).read().strip() if init_pid else None
except OSError:
    init_comm = None
kill_leftovers(M19)
ri = fi.result()
I19 = jcontent(ri) or {}
case(ri, re.fullmatch(r"codellm-init\x00\d+\x00", I19.get("cmdline") or "") is not None
     and I19.get("comm") == "codellm-init" and I19.get("status_name") == ["codellm-init"],
     "[19 init] /proc/1 is codellm-init: command line `codellm-init PID`, name codellm-init",
     (I19.get("cmdline"), I19.get("comm"), I19.get("status_name")))
case(ri, I19.get("dumpable") == ["EACCES"] * 6 and I19.get("fdinfo") == "EACCES",
     "[19 init] /proc/1/environ, mem, maps, auxv, stack, syscall and fdinfo → EACCES (not dumpable)",
     (I19.get("dumpable"), I19.get("fdinfo")))
case(ri, init_comm == "codellm-init" and init_scan == [],
     "[19 init] read from the host, the init's whole memory holds neither the API key, nor the "
     "request's text, nor the handler's environment", (init_pid, init_comm, init_scan))
case(ri, isinstance(handler_scan, list) and "key" not in handler_scan,
     "[19 init] the handler itself no longer holds the API key (nor the bearer it was sent) once "
     "authenticated", (handler_pid, handler_scan))

# ---- class 16: the browser as a confused deputy ---------------------------------------
# What a web page the operator opens can send to a loopback codellm: a
# "simple" cross-site POST (text/plain, form, multipart: no preflight),
# a preflighted one, and DNS rebinding (its own name resolving to
# 127.0.0.1, so its requests are same-origin to it). The client side is
# this test; the code it tries to run only prints a marker.
MARK16 = "b16-" + U


def browser_req(srv, method, path, headers, body=b"", key=None):
    h = "%s %s HTTP/1.1\r\n" % (method, path)
    if key:
        h += "Authorization: Bearer %s\r\n" % key
    h += "".join("%s: %s\r\n" % kv for kv in headers)
    if method == "POST":
        h += "Content-Length: %d\r\n" % len(body)
    return srv.raw(h.encode() + b"\r\n" + body)


def refused16(r, status, desc):
    ok = (r.status == status and MARK16.encode() not in r.raw and
          r.header("access-control-allow-origin") is None and (r.error() or {}).get("code"))
    t.ok(bool(ok), desc, r.raw[:400])


NOAUTH = Server("--no-auth", "--debug", key=False, sandbox="native")
NOAUTH.start()
try:
    run16 = json.dumps({"model": "bash", "messages": [{"role": "user", "content":
                                                       block("bash", "echo " + MARK16)}]}).encode()
    pipe16 = json.dumps({"body": block("bash", "echo " + MARK16)}).encode()
    page = [("Host", "127.0.0.1:%d" % NOAUTH.port), ("Origin", "https://evil.example"),
            ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors")]
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"):
        refused16(browser_req(NOAUTH, "POST", "/v1/chat/completions", page + [("Content-Type", ctype)], run16),
                  403, "[16 browser] --no-auth: a cross-site simple POST (%s) to /v1/chat/completions → "
                  "403, nothing runs" % ctype)
        refused16(browser_req(NOAUTH, "POST", "/debug/run-pipeline", page + [("Content-Type", ctype)], pipe16),
                  403, "[16 browser] --no-auth: the same to /debug/run-pipeline → 403, nothing runs")
        # an old browser without Origin/Sec-Fetch-*: the media type alone stops it
        refused16(browser_req(NOAUTH, "POST", "/v1/chat/completions",
                              [("Host", "127.0.0.1:%d" % NOAUTH.port), ("Content-Type", ctype)], run16),
                  415, "[16 browser] --no-auth: a simple POST (%s) without Origin → 415, nothing runs" % ctype)
    refused16(browser_req(MAIN, "POST", "/debug/run-pipeline",
                          [("Host", "127.0.0.1:%d" % MAIN.port), ("Origin", "https://evil.example"),
                           ("Content-Type", "application/json")], pipe16, key=KEY),
              403, "[16 browser] with the key (a page that learnt it): a foreign Origin → 403, nothing runs")
    r = browser_req(NOAUTH, "OPTIONS", "/v1/chat/completions",
                    [("Host", "127.0.0.1:%d" % NOAUTH.port), ("Origin", "https://evil.example"),
                     ("Access-Control-Request-Method", "POST"),
                     ("Access-Control-Request-Headers", "content-type")])
    t.ok(r.status in (403, 405) and r.header("access-control-allow-origin") is None and
         r.header("access-control-allow-headers") is None,
         "[16 browser] the CORS preflight is never granted (no Access-Control-Allow-*)", r.raw[:300])
    # DNS rebinding: evil.example now resolves to 127.0.0.1; the page's
    # requests are same-origin to it and carry its Host
    for path in ("/v1/models", "/healthz", "/"):
        r = browser_req(NOAUTH, "GET", path, [("Host", "evil.example:%d" % NOAUTH.port),
                                              ("Sec-Fetch-Site", "same-origin")])
        refused16(r, 403, "[16 browser] --no-auth: DNS rebinding, GET %s with Host evil.example → 403" % path)
    r = browser_req(NOAUTH, "POST", "/v1/chat/completions",
                    [("Host", "evil.example:%d" % NOAUTH.port), ("Origin", "http://evil.example:%d" % NOAUTH.port),
                     ("Sec-Fetch-Site", "same-origin"), ("Content-Type", "application/json")], run16)
    refused16(r, 403, "[16 browser] --no-auth: DNS rebinding, a same-origin JSON POST → 403, nothing runs")
    r = browser_req(NOAUTH, "POST", "/v1/chat/completions",
                    [("Host", "127.0.0.1:%d" % NOAUTH.port), ("Content-Type", "application/json")], run16)
    t.ok(r.status == 200 and MARK16 in (content(r) or ""),
         "[16 browser] control: the same run from a program (no Origin, JSON) runs", r.raw[:300])
finally:
    NOAUTH.stop()

# ---- the end --------------------------------------------------------------------------
for srv in SERVERS:
    srv.stop()
POOL.shutdown(wait=True)
shutil.rmtree(creds, ignore_errors=True)
t.diag("escape battery: %.1f s" % (time.time() - T_START))
t.done()
