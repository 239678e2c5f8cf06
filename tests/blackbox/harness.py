"""Black-box test harness: the real codellm-handler behind
systemd-socket-activate, raw sockets to talk to it, TAP out.

Every test file does:
    from harness import *
    t = Tap()
    with Server() as s:
        r = s.chat({...})
        t.ok(r.status == 200, "...")
    t.done()
"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HANDLER = os.environ.get("CODELLM_HANDLER", os.path.join(TOP, "codellm-handler"))
OUT = os.environ.get("CODELLM_TEST_OUT", os.path.join(TOP, "tests", "out"))
KEY = "test-key-5d41402abc4b2a76b9719d911017c592"
ALL_LANGS = "python,bash,node,ruby,php,perl"
MUST_SANDBOX = os.environ.get("CODELLM_MUST_SANDBOX") == "1"
SANITIZE = os.environ.get("CODELLM_SANITIZE") == "1"
# Sanitizer reports found in handler logs by Server.stop(); Tap.done()
# turns them into a failing check, so `make sanitize` cannot pass quietly.
SANITIZER_REPORTS = []
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer")


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, diag=None):
        self.n += 1
        if not cond:
            self.failed += 1
        print(("ok" if cond else "not ok") + " %d - %s" % (self.n, desc.replace("\n", " ")))
        if not cond and diag is not None:
            for line in str(diag)[:4000].splitlines():
                print("# " + line)
        sys.stdout.flush()
        return bool(cond)

    def eq(self, got, want, desc, diag=None):
        return self.ok(got == want, desc, "got:  %r\nwant: %r%s" % (
            got, want, "" if diag is None else "\n%s" % (diag,)))

    def skip(self, desc, why):
        """A test that cannot run here. Under CODELLM_MUST_SANDBOX=1 a
        skip is a failure (the bubblewrap BWRAP_MUST_WORK habit)."""
        if MUST_SANDBOX:
            return self.ok(False, desc + " (cannot run: %s)" % why)
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc, why))

    def diag(self, msg):
        for line in str(msg).splitlines():
            print("# " + line)

    def done(self):
        if SANITIZE or SANITIZER_REPORTS:
            self.ok(not SANITIZER_REPORTS, "handler logs hold no sanitizer report",
                    "\n".join(SANITIZER_REPORTS))
        print("1..%d" % self.n)
        sys.exit(1 if self.failed else 0)


class Resp:
    def __init__(self, raw):
        self.raw = raw
        self.status = None
        self.interim = []          # 1xx status codes seen before the final one
        self.headers = {}          # lower-case name -> list of values
        self.head = b""
        self.body = b""
        rest = raw
        while True:
            head, sep, rest2 = rest.partition(b"\r\n\r\n")
            if not sep:
                self.head = rest
                return
            lines = head.split(b"\r\n")
            m = re.match(rb"HTTP/1\.[01] (\d{3}) ", lines[0] + b" ")
            if not m:
                self.head = head
                return
            status = int(m.group(1))
            if 100 <= status < 200:
                self.interim.append(status)
                rest = rest2
                continue
            self.status = status
            self.head = head
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                self.headers.setdefault(k.decode("latin-1").strip().lower(), []).append(
                    v.decode("latin-1").strip())
            self.body = rest2
            cl = self.header("content-length")
            if cl is not None and cl.isdigit():
                self.body = rest2[: int(cl)]
            return

    def header(self, name):
        v = self.headers.get(name.lower())
        return v[0] if v else None

    @property
    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except Exception:
            return None

    def error(self):
        j = self.json
        if isinstance(j, dict) and isinstance(j.get("error"), dict):
            return j["error"]
        return None

    def __repr__(self):
        return "<Resp %s %r>" % (self.status, self.raw[:600])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def raw(port, data, timeout=30, half_close=False, chunks=None, delay=0.0):
    """Send bytes (or a list of byte chunks with `delay` between them),
    read until the server closes; returns everything read."""
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        for i, part in enumerate(chunks if chunks is not None else [data]):
            if i and delay:
                time.sleep(delay)
            try:
                c.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break
        if half_close:
            c.shutdown(socket.SHUT_WR)
        return read_all(c)
    finally:
        c.close()


def read_all(c, timeout=None):
    """Everything the peer sends until it closes, resets, or stays silent
    for the socket's timeout (set first when given)."""
    if timeout is not None:
        c.settimeout(timeout)
    out = bytearray()      # answers reach tens of MB: no quadratic copying
    while True:
        try:
            b = c.recv(1 << 20)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        out += b
    return bytes(out)


def build_request(method, path, body=None, headers=None, key=KEY, version="1.1"):
    h = {"Host": "127.0.0.1", "Connection": "keep-alive"}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    if body is not None:
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/%s\r\n" % (method, path, version)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in h.items() if v is not None)
    return head.encode() + b"\r\n" + (body or b"")


class Server:
    """systemd-socket-activate --accept running the handler with the given
    options. Each run gets its own TMPDIR (`runs`), so a test can check that
    no run directory is left behind."""

    def __init__(self, *args, inetd=False, key=True, sandbox=None,
                 allowed=ALL_LANGS, env=None, handler=None, model=None):
        # model: the model run() sends by default, and chat() in place
        # of "codellm" (a suite run against an environment)
        self.model = model
        self.tmp = tempfile.mkdtemp(prefix="codellm-test-")
        self.runs = os.path.join(self.tmp, "runs")
        os.mkdir(self.runs)
        self.keyfile = os.path.join(self.tmp, "api-key")
        with open(self.keyfile, "w") as f:
            f.write(KEY + "\n")
        self.port = free_port()
        self.log_path = os.path.join(self.tmp, "socket-activate.log")
        # run slots live in the server's own directory, never in the
        # host's /run (on these machines /run is on disk and shared)
        self.slots = os.path.join(self.tmp, "slots")
        os.mkdir(self.slots, 0o700)   # private to the service user (SPEC §9)
        argv = ["systemd-socket-activate", "--accept", "-l", "127.0.0.1:%d" % self.port,
                "-E", "TMPDIR=" + self.runs, "-E", "CODELLM_RUNTIME_DIR=" + self.slots]
        for k, v in (env or {}).items():
            argv += ["-E", "%s=%s" % (k, v)]
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ and k not in (env or {}):
                argv += ["-E", "%s=%s" % (k, os.environ[k])]
        if inetd:
            argv.append("--inetd")
        argv.append(handler or HANDLER)
        if key is True:
            argv += ["--api-key-file", self.keyfile]
        elif isinstance(key, str):
            argv += ["--api-key-file", key]
        if sandbox is not None:
            argv += ["--sandbox", sandbox]
        if allowed is not None:
            argv += ["--allowed-programs", allowed]
        argv += list(args)
        self.argv = argv
        self.proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def reachable(self):
        """One connection to the listening socket succeeds (subclasses
        that listen elsewhere, e.g. in another netns, override it)."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def start(self):
        """Starts systemd-socket-activate and returns once it accepts. The
        port free_port() found can be taken by another suite before the
        listener binds it (suites run side by side in make check-loaded):
        then it exits, and the start is tried again on a new port. The
        deadline is generous, since it is only spent when something is
        wrong (on a loaded machine a start can take seconds)."""
        for attempt in range(3):
            self.log = open(self.log_path, "wb")
            self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            deadline = time.time() + 30
            while time.time() < deadline and self.proc.poll() is None:
                if self.reachable():
                    # that probe connection started a handler: the test's
                    # first request must not meet it (a handler count, a
                    # per-connection file of a wrapper)
                    self.idle()
                    return
                time.sleep(0.02)
            if self.proc.poll() is None or "Address already in use" not in self.log_text():
                break
            self.log.close()
            old = "127.0.0.1:%d" % self.port
            self.port = free_port()
            self.argv = [a.replace(old, "127.0.0.1:%d" % self.port) if a == old else a
                         for a in self.argv]
        raise RuntimeError("server did not start: " + self.log_text())

    def handlers(self):
        """The live (not yet reaped or exiting) handler processes: the
        children of systemd-socket-activate that are no zombie."""
        return [p for p in children_of(self.proc.pid) if pid_alive(p)]

    def idle(self, timeout=30.0):
        """Waits until no handler of this server runs (an answer's end
        comes before its handler's cleanup and audit): [] then, else the
        handlers still there after `timeout` s, a backstop spent only
        when something is wrong."""
        deadline = time.time() + timeout
        while True:
            live = self.handlers()
            if not live or time.time() > deadline:
                return live
            time.sleep(0.02)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        text = self.log_text()
        if any(m in text for m in SANITIZER_MARKS):
            SANITIZER_REPORTS.append(text[-8000:])
        keep = os.environ.get("CODELLM_KEEP_TMP")
        if not keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if getattr(self, "wrap_dir", None):
                shutil.rmtree(self.wrap_dir, ignore_errors=True)

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # --- requests -----------------------------------------------------
    def raw(self, data, **kw):
        return Resp(raw(self.port, data, **kw))

    def request(self, method, path, body=None, headers=None, key=KEY, version="1.1", **kw):
        return self.raw(build_request(method, path, body, headers, key, version), **kw)

    def chat(self, payload, key=KEY, headers=None, **kw):
        # (getattr: tests/image's Container shares these methods)
        model = getattr(self, "model", None)
        if model and isinstance(payload, dict) and payload.get("model") == "codellm":
            payload = dict(payload, model=model)
        return self.request("POST", "/v1/chat/completions", payload, headers, key, **kw)

    def run(self, content, model=None, extra=None, **kw):
        """A one-message chat request whose user content is `content`."""
        payload = {"model": model or getattr(self, "model", None) or "codellm",
                   "messages": [{"role": "user", "content": content}]}
        payload.update(extra or {})
        return self.chat(payload, **kw)

    # --- leftovers ----------------------------------------------------
    def leftovers(self, wait=20.0):
        """Run directories still present after the handlers finished."""
        deadline = time.time() + wait
        while True:
            left = os.listdir(self.runs)
            if not left or time.time() > deadline:
                return left
            time.sleep(0.05)


def block(lang, code):
    return "```%s\n%s\n```\n" % (lang, code)


def procs_matching(pattern):
    """PIDs of processes whose command line contains `pattern`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if pattern.encode() in cmd and int(d) != os.getpid():
            pids.append(int(d))
    return pids


def wait_gone(pattern, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not procs_matching(pattern):
            return True
        time.sleep(0.05)
    return not procs_matching(pattern)


# ---- reading answers, and a handler that is not root -----------------------

NOBODY = 65534


def content(r):
    j = r.json
    try:
        return j["choices"][0]["message"]["content"]
    except (TypeError, KeyError, IndexError):
        return None

def ext(r):
    j = r.json
    return j.get("codellm") if isinstance(j, dict) else None

def results(r):
    c = ext(r)
    return c.get("block_results") if isinstance(c, dict) else None

def dig(v, *path):
    """v[path[0]][path[1]]..., or None where the path does not exist."""
    for p in path:
        try:
            v = v[p]
        except (TypeError, KeyError, IndexError):
            return None
    return v


def jcontent(r):
    try:
        return json.loads(content(r))
    except Exception:
        return None


def completion_ok(r):
    """HTTP 200 with a well-formed chat completion and its codellm object."""
    j = r.json if r is not None else None
    return (r is not None and r.status == 200 and isinstance(j, dict)
            and j.get("object") == "chat.completion"
            and isinstance(j.get("choices"), list) and len(j["choices"]) == 1
            and isinstance(j["choices"][0].get("message"), dict)
            and isinstance(j.get("codellm"), dict))


def field(r, *path):
    return dig(r.json, *path)

def unprivileged_server(*args, uid=NOBODY, groups=(), **kw):
    """A Server whose handler runs as `uid` (nobody by default; gid the
    same) when the tests run as root, with the supplementary `groups`
    given (none by default), so permission bits bind the handler and its
    blocks as in a real deployment (the shipped unit runs as a system
    user without capabilities)."""
    if os.geteuid() != 0:
        return Server(*args, **kw)
    wrap_dir = tempfile.mkdtemp(prefix="codellm-wrap-")
    os.chmod(wrap_dir, 0o755)
    wrapper = os.path.join(wrap_dir, "handler")
    grp = ("--groups=" + ",".join(str(g) for g in groups)) if groups else "--clear-groups"
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec setpriv --reuid=%d --regid=%d %s -- %s \"$@\"\n"
                % (uid, uid, grp, HANDLER))
    os.chmod(wrapper, 0o755)
    s = Server(*args, handler=wrapper, **kw)
    os.chmod(s.tmp, 0o711)
    os.chown(s.runs, uid, uid)
    os.chown(s.keyfile, uid, uid)
    os.chown(s.slots, uid, uid)
    s.wrap_dir = wrap_dir
    return s


WRAP_DIRS = []


def handler_wrapper(cmd, prefix="codellm-wrap-"):
    """A handler= program: `cmd` (a list) then the handler and its
    options, exec'd in the same process (LISTEN_PID stays right). Its
    directory is in WRAP_DIRS; remove_wrappers() removes them all."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    WRAP_DIRS.append(d)
    path = os.path.join(d, "handler")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\"\n" % " ".join(shlex.quote(a) for a in cmd + [HANDLER]))
    os.chmod(path, 0o755)
    return path


def remove_wrappers():
    for d in WRAP_DIRS:
        shutil.rmtree(d, ignore_errors=True)
    del WRAP_DIRS[:]


def parents():
    """{pid: parent pid} of every process, from /proc/*/stat."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                st = f.read()
            parent[int(d)] = int(st[st.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parent


def children_of(pid):
    """PIDs whose parent is `pid`."""
    return [p for p, pp in parents().items() if pp == pid]


def descendants(pid, parent=None):
    """PIDs of every process below `pid` (by the parent links in /proc,
    or in `parent`, a parents() already read)."""
    parent = parents() if parent is None else parent
    out, frontier = [], {pid}
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier and p not in out]
        out += kids
        frontier = set(kids)
    return out


def pid_alive(pid):
    """Process `pid` exists and is no zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def cmdline(pid):
    """Process `pid`'s command line, NULs as they are ("" once it is gone)."""
    try:
        with open("/proc/%d/cmdline" % pid) as f:
            return f.read()
    except OSError:
        return ""


def runs_handler(pid):
    """Whether process `pid` runs the handler: its program, not an
    argument (socket activation's child names the handler in its argv
    until it execs it)."""
    return cmdline(pid).split("\0", 1)[0].endswith("codellm-handler")


def handler_peak_rss(server, req, timeout=120):
    """The handler's peak RSS (VmHWM, KiB) while it serves req (raw
    request bytes), the seconds from the send to the answer's end, and
    the answer. Only processes running the handler count (the block's
    processes before their execve are its copies), never socket
    activation's fork that has not yet become one. The connection is
    opened first and req sent only once the watcher has read the handler
    socket activation forked at the accept (it waits for the request:
    give the server a long --header-timeout),
    so the watcher sees it however briefly the run lasts and however busy
    the machine; it keeps reading it until the answer is in."""
    peak, seen, done = [0], threading.Event(), threading.Event()

    def watch():
        while not done.is_set():
            for p in descendants(server.proc.pid):
                try:
                    if not runs_handler(p):
                        continue
                    with open("/proc/%d/status" % p) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak[0] = max(peak[0], int(line.split()[1]))
                                seen.set()
                except (OSError, ValueError):
                    pass
            time.sleep(0.005)
    th = threading.Thread(target=watch)
    c = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    try:
        th.start()
        seen.wait(60)           # only a watcher that cannot find it waits this out
        t0 = time.perf_counter()
        c.sendall(req)
        r = Resp(read_all(c, timeout))
        el = time.perf_counter() - t0
    finally:
        c.close()
        done.set()
        th.join()
    return peak[0], el, r



# ---- holding a block until the test lets it go -------------------------------
# A check that needs a run to be going while it looks (a slot taken, a
# stream open, a process to inspect) holds the run's block with one of two
# releases the test controls, never with a sleep that load can outlast.
# The run's --timeout is the backstop: a block that waits in vain ends
# there, and the check fails instead of hanging.

# 1. The block waits for a file `go` in its working directory; let_go()
# makes it. Bash and python forms:
HOLD = "while [ ! -e go ]; do sleep 0.05; done"
HOLD_PY = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\n"


def let_go(pids):
    """Makes `go` in the working directory of each block process, as the
    directory's owner when need be (the sandbox maps only its own ids,
    so root's file there would be EOVERFLOW)."""
    for pid in pids:
        path = "/proc/%d/cwd/go" % pid
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
            continue
        except OSError:
            pass
        try:
            st = os.stat(os.path.dirname(path))
            subprocess.run(["touch", path], user=st.st_uid, group=st.st_gid, extra_groups=[],
                           stderr=subprocess.DEVNULL)
        except OSError:
            pass


def running_blocks(server, n=1, wait=30.0, first_only=False, stop=None):
    """The server's block processes once there are `n` (with first_only,
    only the first block of each run counts), or once stop() is true, or
    whatever there is after `wait` s (the backstop)."""
    deadline = time.time() + wait
    while True:
        found = block_processes(server)
        if first_only:
            found = [p for p in found if "/code/block-0." in cmdline(p)]
        if len(found) >= n or (stop and stop()) or time.time() > deadline:
            return found
        time.sleep(0.05)


# 2. The block installs a SIGUSR1 handler and waits (the test sees the
# handler in SigCgt of /proc/PID/status: catching()); release() sends it.
# WAIT_RELEASE_PY waits, then prints its %s and exits 0.
WAIT_RELEASE_PY = ("import os, signal\n"
                   "def go(*a):\n"
                   "    print(%r, flush=True)\n"
                   "    os._exit(0)\n"
                   "signal.signal(signal.SIGUSR1, go)\n"
                   "while True:\n"
                   "    signal.pause()\n")


def catching(server, alive=None, timeout=120.0):
    """The pid of the server's block process that catches SIGUSR1, once
    there is one. None once alive() (the request is still going) is
    false, or after `timeout` s (the backstop)."""
    bit = 1 << (signal.SIGUSR1 - 1)
    deadline = time.time() + timeout
    while time.time() < deadline and (alive is None or alive()):
        for p in block_processes(server):
            try:
                with open("/proc/%d/status" % p) as f:
                    for ln in f:
                        if ln.startswith("SigCgt:") and int(ln.split()[1], 16) & bit:
                            return p
            except (OSError, ValueError):
                continue
        time.sleep(0.05)
    return None


def release(pid):
    """Sends the block found by catching() its SIGUSR1."""
    if pid:
        os.kill(pid, signal.SIGUSR1)


def wait_procs(pattern, timeout=20.0):
    """PIDs matching `pattern` as soon as there are any (or [] after
    `timeout`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        p = procs_matching(pattern)
        if p:
            return p
        time.sleep(0.02)
    return []


def block_processes(server):
    """Processes running a block file of this server (sandboxed: /code/...,
    --sandbox off: under the server's run directory), one per block: a
    block's own fork before its exec (bash starting `sleep`) carries the
    same command line, and counting it would take one run for two."""
    parent = parents()
    found = []
    for p in descendants(server.proc.pid, parent):
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"/code/block-" in cmd or server.runs.encode() + b"/" in cmd:
            found.append(p)
    return [p for p in found if parent.get(p) not in found]


def kill_leftovers(pattern):
    """SIGKILL whatever a failed case left running (matched by marker)."""
    for p in procs_matching(pattern):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


class Watch:
    """Polls procs_matching(pattern) in the background while a request is
    handled; .seen is every pid found (proof that code did, or did not,
    run)."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.seen = set()
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            self.seen.update(procs_matching(self.pattern))
            time.sleep(0.005)

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        time.sleep(0.2)      # anything started late still shows up
        self.stop.set()
        self.th.join()


def reexec_in_mount_ns(flag):
    """Re-runs the calling test inside `unshare -m` (private propagation)
    unless the environment variable `flag` says it already is: a tmpfs
    on /run there (private_journal) vanishes with the namespace. Returns
    False when that cannot be done (not root, no unshare)."""
    if os.environ.get(flag) == "1":
        return True
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    env = dict(os.environ, **{flag: "1"})
    os.execvpe("unshare", ["unshare", "-m", "--propagation", "private", sys.executable,
                           os.path.abspath(sys.argv[0])], env)


def private_journal():
    """A systemd-journald of the test's own on a tmpfs /run (call inside
    reexec_in_mount_ns). Returns the process, or None when its socket
    did not appear; stop it with .terminate()."""
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)
    os.makedirs("/run/systemd/journal", exist_ok=True)
    jd = subprocess.Popen(["/lib/systemd/systemd-journald"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not os.path.exists("/run/systemd/journal/socket") and time.time() < deadline:
        time.sleep(0.02)
    if os.path.exists("/run/systemd/journal/socket"):
        return jd
    jd.kill()
    jd.wait()
    return None


def stderr_audit_records(server, rid, wait=20.0):
    """The audit records of request rid that the server's handlers wrote
    to standard error as JSON lines (no journal listens), once there is
    one (a handler sends it after the answer's end), or none after
    `wait` s."""
    deadline = time.time() + wait
    while True:
        out = []
        for ln in server.log_text().splitlines():
            if ln.startswith("{") and rid in ln:
                try:
                    out.append(json.loads(ln))
                except ValueError:
                    pass
        if out or time.time() > deadline:
            return out
        time.sleep(0.05)


def journal_records(until=None, wait=20.0):
    """Every codellm record in the private journal, as dicts. The handler
    sends its record after the answer's end (the client does not wait
    for it): with `until`, read again until until(records) holds or
    `wait` seconds passed."""
    deadline = time.time() + wait
    while True:
        subprocess.run(["journalctl", "--sync"], capture_output=True, timeout=10)
        out = subprocess.run(["journalctl", "-D", "/run/log/journal", "-o", "json",
                              "SYSLOG_IDENTIFIER=codellm"], capture_output=True, timeout=30).stdout
        recs = []
        for line in out.decode("utf-8", "replace").splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
        if until is None or until(recs) or time.time() >= deadline:
            return recs
        time.sleep(0.05)
