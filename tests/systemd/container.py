"""A throwaway real systemd for end-to-end tests and unit benchmarks.

Boots the host's own OS read-only through an overlay in systemd-nspawn
(PLATFORM.md, "A real systemd for end-to-end tests"): everything runs in
a private mount namespace (`unshare -m`) with a tmpfs on /run and a tmpfs
holding the overlay's upper layer, so nothing the container writes
reaches the host and all of it is gone when the container stops. The
project tree is bind-mounted read-only at /src.

    from container import Container, Unavailable
    with Container() as c:            # boots, waits for the system to run
        c.install_codellm(key=KEY)    # make install, sysusers, tmpfiles, key
        c.start_unit("codellm.socket")
        resp = c.http(8089, b"GET /healthz HTTP/1.1\\r\\n\\r\\n")
        recs = c.journal("SYSLOG_IDENTIFIER=codellm")

By default the container has its own network namespace
(--private-network; systemd brings `lo` up in it): ports never collide
with the host's and nothing in the booted OS can touch the host's
interfaces. Sockets into it come from `connect()` / `raw()` / `http()`
(created in the container's network namespace through setns(2) on the
calling thread only), or wrap any code in `with c.netns():`.

Benchmarking candidate units side by side in the same boot:

    c.deploy_variant("cl-min", port=9001, service=MIN_SERVICE_TEXT)
    rate = c.serial_rate(9001, request_bytes, seconds=5)["rate"]
    score = c.security("cl-min@x.service")

Every wait has a timeout; failures to boot raise `Unavailable` (the host
cannot run nspawn or systemd: callers turn that into a TAP skip). The
timeouts only guard against hangs: each wait ends as soon as what it
waits for is there, and each is several times what a busy machine (a
load of several times its CPUs) needs, so none ends a normal wait.
Requires root. Only processes this object started are ever signalled.
"""
import contextlib
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1

# Host units that would only cost time in a throwaway boot (timers that
# are "persistent" fire at once: apt, man-db, ...).
DEFAULT_MASKS = ("postgresql.service", "timers.target", "e2scrub_reap.service",
                 "systemd-timesyncd.service")
LANDLOCK_SYSCALLS = "landlock_create_ruleset landlock_add_rule landlock_restrict_self"
# the environment commands get inside the container (not the caller's:
# a pyenv shim first on PATH would shadow /usr/bin/python3)
INNER_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/root",
    "TERM": "dumb",
    "SYSTEMD_PAGER": "cat",
    "SYSTEMD_COLORS": "0",
    "SYSTEMD_LOG_COLOR": "0",
}

_libc = ctypes.CDLL(None, use_errno=True)


class Unavailable(Exception):
    """nspawn or a booted systemd is not available on this host."""


def unavailable_reason():
    """Why a container cannot be booted here, or None (cheap checks only;
    the boot itself may still fail: see Container.start)."""
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("systemd-nspawn", "unshare", "nsenter", "mount"):
        if shutil.which(tool) is None:
            return "%s not installed (apt-get install systemd-container)" % tool
    if not os.path.exists("/lib/systemd/systemd"):
        return "no /lib/systemd/systemd to boot"
    return None


def _setns(fd, nstype):
    if _libc.setns(fd, nstype) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


def _set_pdeathsig():
    # nspawn (after unshare and sh exec into it) gets SIGTERM when the
    # test process dies, so a crashed test does not leave a booted system
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Container:
    def __init__(self, src=TOP, private_network=True, masks=DEFAULT_MASKS, binds_ro=(),
                 binds=(), nspawn_args=(), kernel_args=(), boot_timeout=120, log_path=None,
                 keep=None):
        """src: host directory bind-mounted read-only at /src (None: none).
        binds_ro / binds: extra "HOST:INNER" (or "HOST") bind mounts.
        masks: units masked on the kernel command line.
        keep: keep the state directory (nspawn log) after stop; default
        from $CODELLM_KEEP_TMP."""
        self.src = src
        self.private_network = private_network
        self.masks = tuple(masks)
        self.binds_ro = tuple(binds_ro)
        self.binds = tuple(binds)
        self.nspawn_args = tuple(nspawn_args)
        self.kernel_args = tuple(kernel_args)
        self.boot_timeout = boot_timeout
        self.keep = bool(os.environ.get("CODELLM_KEEP_TMP")) if keep is None else keep
        self.state = None
        self.log_path = log_path
        self.proc = None        # the nspawn process (unshare and sh exec into it)
        self.pid1 = None        # the container's systemd, as the host sees it
        self._netns_fd = None
        self._host_netns_fd = None
        self._log = None
        self.boot_seconds = None    # start() until the system is running
        self.system_state = None

    # --- life cycle -----------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        """Boots and waits until the system is up (running or degraded).
        Raises Unavailable when it cannot."""
        why = unavailable_reason()
        if why:
            raise Unavailable(why)
        t0 = time.monotonic()
        self.state = tempfile.mkdtemp(prefix="codellm-nspawn.")
        ovl = os.path.join(self.state, "ovl")
        os.mkdir(ovl, 0o700)
        if self.log_path is None:
            self.log_path = os.path.join(self.state, "nspawn.log")
        self._log = open(self.log_path, "wb")
        argv = ["systemd-nspawn", "-D", ovl + "/m", "--register=no", "--keep-unit", "-b",
                "--console=read-only", "--system-call-filter=" + LANDLOCK_SYSCALLS]
        if self.private_network:
            argv.append("--private-network")
        if self.src:
            argv.append("--bind-ro=%s:/src" % self.src)
        argv += ["--bind-ro=" + b for b in self.binds_ro]
        argv += ["--bind=" + b for b in self.binds]
        argv += list(self.nspawn_args)
        argv.append("--")
        argv += ["systemd.mask=" + m for m in self.masks]
        argv += list(self.kernel_args)
        script = ("set -e\n"
                  "mount -t tmpfs tmpfs /run\n"
                  "mount -t tmpfs -o mode=0700 tmpfs \"$1\"\n"
                  "mkdir \"$1/up\" \"$1/work\" \"$1/m\"\n"
                  "mount -t overlay overlay -o lowerdir=/,upperdir=\"$1/up\",workdir=\"$1/work\" \"$1/m\"\n"
                  "shift\n"
                  "exec \"$@\"\n")
        self.proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", ovl] + argv,
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_set_pdeathsig)
        try:
            self._find_pid1(t0 + self.boot_timeout)
            if self.private_network:
                self._netns_fd = os.open("/proc/%d/ns/net" % self.pid1, os.O_RDONLY | os.O_CLOEXEC)
                self._host_netns_fd = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            self.wait_running(max(1.0, t0 + self.boot_timeout - time.monotonic()))
        except Unavailable:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - t0
        return self

    def _children(self, pid):
        kids = []
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            pass
        return kids

    def _find_pid1(self, deadline):
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable("systemd-nspawn exited with %s: %s"
                                  % (self.proc.returncode, self.log_tail()))
            frontier = [self.proc.pid]
            for _ in range(3):      # nspawn -> (its child) -> systemd
                nxt = []
                for p in frontier:
                    for k in self._children(p):
                        try:
                            with open("/proc/%d/comm" % k) as f:
                                comm = f.read().strip()
                        except OSError:
                            continue
                        if comm == "systemd":
                            self.pid1 = k
                            return k
                        nxt.append(k)
                frontier = nxt
            time.sleep(0.02)
        raise Unavailable("no systemd came up under systemd-nspawn: " + self.log_tail())

    def wait_running(self, timeout=30):
        """Waits until `systemctl is-system-running` says running or
        degraded; returns that state. Raises Unavailable on timeout or
        when the system ends up in another state."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable("systemd-nspawn exited with %s: %s"
                                  % (self.proc.returncode, self.log_tail()))
            left = max(0.5, deadline - time.monotonic())
            try:
                r = self.run(["systemctl", "is-system-running", "--wait"], timeout=left)
            except subprocess.TimeoutExpired:
                break
            last = (r.stdout + r.stderr).strip()
            state = r.stdout.strip()
            if state in ("running", "degraded"):
                self.system_state = state
                return state
            if state in ("maintenance", "stopping"):
                raise Unavailable("container system is %s" % state)
            # "Failed to connect to bus": PID 1 not listening yet;
            # "offline": systemctl found no /run/systemd/system yet (it
            # checks that before it waits), which PID 1 makes early in
            # its boot: both pass, and the deadline bounds the wait
            time.sleep(0.05)
        raise Unavailable("system not running after %.0f s (%s): %s"
                          % (timeout, last, self.log_tail()))

    def stop(self, timeout=30, graceful=True):
        """Powers the container off (SIGTERM to nspawn; SIGKILL to the
        container's PID 1 and nspawn after `timeout`), then removes the
        state directory. Idempotent."""
        for fd in (self._netns_fd, self._host_netns_fd):
            if fd is not None:
                os.close(fd)
        self._netns_fd = self._host_netns_fd = None
        if self.proc is not None and self.proc.poll() is None:
            if graceful:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                # killing PID 1 of the container ends its whole PID namespace
                if self.pid1 is not None:
                    with contextlib.suppress(OSError):
                        os.kill(self.pid1, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    self.proc.kill()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.state and not self.keep:
            # the overlay lived in a tmpfs of the (now gone) mount namespace
            shutil.rmtree(self.state, ignore_errors=True)
        self.pid1 = None

    def log_tail(self, n=2000):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except (OSError, TypeError):
            return ""
        text = re.sub(r"\x1b\[[0-9;]*m", "", data.decode("utf-8", "replace"))
        return text[-n:]

    # --- commands inside ------------------------------------------------
    def run(self, cmd, input=None, timeout=120, check=False, env=None):
        """Runs cmd (argv list or a shell string) inside the container
        (nsenter -t PID1 -a: all its namespaces, its root and cwd) with
        a clean environment. Returns a CompletedProcess with text
        stdout/stderr; raises subprocess.TimeoutExpired after `timeout`."""
        if self.pid1 is None:
            raise RuntimeError("container not started")
        if isinstance(cmd, str):
            cmd = ["sh", "-c", cmd]
        e = dict(INNER_ENV)
        e.update(env or {})
        if isinstance(input, str):
            input = input.encode()
        r = subprocess.run(["nsenter", "-t", str(self.pid1), "-a", "--"] + list(cmd),
                           input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=e, timeout=timeout,
                           stdin=None if input is not None else subprocess.DEVNULL)
        r.stdout = r.stdout.decode("utf-8", "replace")
        r.stderr = r.stderr.decode("utf-8", "replace")
        if check and r.returncode != 0:
            raise RuntimeError("in container: %s: exit %d\n%s%s"
                               % (shlex.join(cmd), r.returncode, r.stdout, r.stderr))
        return r

    def write_file(self, path, text, mode=0o644):
        """Writes a file inside the container (parent directories made)."""
        self.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod %o "$1"' % mode,
                  "sh", path], input=text, check=True)

    def remove(self, path):
        self.run(["rm", "-rf", "--", path], check=True)

    def systemctl(self, *args, timeout=120, check=False):
        return self.run(["systemctl", "--no-pager"] + list(args), timeout=timeout, check=check)

    def daemon_reload(self):
        self.systemctl("daemon-reload", check=True)

    def start_unit(self, unit, timeout=120):
        self.systemctl("start", unit, timeout=timeout, check=True)

    def stop_unit(self, unit, timeout=120):
        return self.systemctl("stop", unit, timeout=timeout)

    def is_active(self, unit):
        return self.systemctl("is-active", unit).stdout.strip()

    def units(self, pattern):
        """Loaded units matching a glob, e.g. 'codellm@*'."""
        out = self.systemctl("list-units", "--all", "--plain", "--no-legend", pattern).stdout
        return [ln.split()[0] for ln in out.splitlines() if ln.strip()]

    def unit_property(self, unit, prop):
        """`systemctl show -p PROP --value UNIT`."""
        return self.systemctl("show", "-p", prop, "--value", unit).stdout.strip()

    def wait_idle(self, socket_unit, timeout=60):
        """Waits until an Accept=yes socket has no connection left (every
        instance ended, including ones still waiting for their start job);
        returns True when that happened within `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.unit_property(socket_unit, "NConnections") == "0":
                return True
            time.sleep(0.1)
        return False

    def install_unit(self, name, text):
        """A unit file in the container's /etc/systemd/system (call
        daemon_reload() after)."""
        self.write_file("/etc/systemd/system/" + name, text)

    def dropin(self, unit, name, text):
        """/etc/systemd/system/UNIT.d/NAME.conf (call daemon_reload() after);
        text None removes it."""
        path = "/etc/systemd/system/%s.d/%s.conf" % (unit, name)
        if text is None:
            self.remove(path)
        else:
            self.write_file(path, text)

    def journal(self, *matches, since_cursor=None, timeout=120, until=None, wait=60):
        """Records (dicts) of `journalctl -o json MATCH...` inside, after
        a journal sync. With since_cursor (journal_cursor()) only newer
        records; the FIELD=VALUE matches are then applied here, because
        journalctl 252 with --after-cursor and a match skips the first
        matching record when the cursor's own record does not match.
        The handler sends its record after the answer's end: with
        `until`, read again until until(records) holds or `wait` s."""
        deadline = time.monotonic() + wait
        while True:
            recs = self._journal(matches, since_cursor, timeout)
            if until is None or until(recs) or time.monotonic() >= deadline:
                return recs
            time.sleep(0.1)

    def _journal(self, matches, since_cursor, timeout):
        self.run(["journalctl", "--sync"], timeout=timeout)
        argv = ["journalctl", "--no-pager", "-o", "json"]
        if since_cursor:
            argv += ["--after-cursor", since_cursor]
        else:
            argv += list(matches)
        r = self.run(argv, timeout=timeout)
        want = [m.split("=", 1) for m in matches] if since_cursor else []
        recs = []
        for line in r.stdout.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if all(rec.get(k) == v for k, v in want):
                recs.append(rec)
        return recs

    def journal_cursor(self):
        """The cursor of the newest record (for journal(since_cursor=))."""
        self.run(["journalctl", "--sync"])
        r = self.run(["journalctl", "--no-pager", "-n", "0", "--show-cursor"])
        m = re.search(r"cursor: (\S+)", r.stdout + r.stderr)
        return m.group(1) if m else None

    def security(self, unit):
        """`systemd-analyze security UNIT` (online, against this systemd):
        (exposure as a float or None, full text)."""
        r = self.run(["systemd-analyze", "security", "--no-pager", unit])
        m = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", r.stdout)
        return (float(m.group(1)) if m else None), r.stdout + r.stderr

    # --- codellm ----------------------------------------------------------
    def install_codellm(self, key=None, prefix="/usr/local", make=True):
        """Installs the already built tree from /src (make install with
        the binary marked up to date: /src is read-only and nothing is
        rebuilt), creates the user and the slot directory from the
        installed sysusers/tmpfiles entries, writes /etc/codellm/api-key
        (when key is given) and reloads systemd. Returns the install
        output."""
        out = ""
        if make:
            r = self.run(["make", "-s", "-C", "/src", "-o", "codellm-handler", "install",
                          "DESTDIR=/", "PREFIX=" + prefix], timeout=300, check=True)
            out = r.stdout + r.stderr
        self.run(["systemd-sysusers"], check=True)
        self.run(["systemd-tmpfiles", "--create"], check=True)
        if key is not None:
            self.write_file("/etc/codellm/api-key", key + "\n", mode=0o600)
        self.daemon_reload()
        return out

    def deploy_variant(self, name, service, port, socket_extra="", start=True):
        """A candidate unit pair NAME.socket (127.0.0.1:PORT, Accept=yes,
        no trigger limit, MaxConnections=64, plus socket_extra lines) and
        NAME@.service (the given text) in /etc/systemd/system; reloads and
        starts the socket. For benchmarking variants side by side."""
        sock = ("[Socket]\nListenStream=127.0.0.1:%d\nAccept=yes\nTriggerLimitIntervalSec=0\n"
                "MaxConnections=64\n%s\n" % (port, socket_extra))
        self.install_unit(name + ".socket", sock)
        self.install_unit(name + "@.service", service)
        self.daemon_reload()
        if start:
            self.start_unit(name + ".socket")

    def remove_variant(self, name):
        self.stop_unit(name + ".socket")
        self.remove("/etc/systemd/system/%s.socket" % name)
        self.remove("/etc/systemd/system/%s@.service" % name)
        self.daemon_reload()

    # --- network ----------------------------------------------------------
    @contextlib.contextmanager
    def netns(self):
        """The calling thread's new sockets belong to the container's
        network namespace inside the block (a no-op with the host's
        network). Threads started inside inherit it."""
        if not self.private_network:
            yield
            return
        if self._netns_fd is None:
            raise RuntimeError("container not started")
        _setns(self._netns_fd, CLONE_NEWNET)
        try:
            yield
        finally:
            _setns(self._host_netns_fd, CLONE_NEWNET)

    def connect(self, port, host="127.0.0.1", timeout=60):
        """A TCP connection to HOST:PORT as seen inside the container."""
        with self.netns():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            s.connect((host, port))
        except BaseException:
            s.close()
            raise
        return s

    def raw(self, port, data, timeout=60):
        """Sends bytes, reads until the server closes (or `timeout` of
        silence); returns everything read."""
        c = self.connect(port, timeout=timeout)
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                c.sendall(data)
            out = b""
            while True:
                try:
                    b = c.recv(1 << 20)
                except (ConnectionResetError, socket.timeout):
                    break
                if not b:
                    break
                out += b
            return out
        finally:
            c.close()

    def http(self, port, data, timeout=60):
        """raw() parsed: (status or None, {lower-case header: value}, body)."""
        return parse_http(self.raw(port, data, timeout))

    def serial_rate(self, port, data, n=None, seconds=5.0, timeout=30):
        """Serial requests/s: sends `data` one request at a time for `n`
        requests or `seconds`. Returns {"rate", "n", "seconds",
        "statuses": {status: count}}."""
        statuses = {}
        done = 0
        t0 = time.monotonic()
        while True:
            if n is not None and done >= n:
                break
            if n is None and time.monotonic() - t0 >= seconds:
                break
            st = self.http(port, data, timeout)[0]
            statuses[st] = statuses.get(st, 0) + 1
            done += 1
        el = time.monotonic() - t0
        return {"rate": done / el if el > 0 else 0.0, "n": done, "seconds": el,
                "statuses": statuses}

    def burst_connects(self, port, count=300, threads=20, send=b""):
        """`count` connections opened (and closed at once, after sending
        `send`) from `threads` threads as fast as possible. Returns
        (seconds, successful connects, errors)."""
        ok = [0]
        errs = []
        lock = threading.Lock()
        per = [count // threads + (1 if i < count % threads else 0) for i in range(threads)]

        def worker(k):
            for _ in range(k):
                try:
                    s = self.connect(port, timeout=30)
                    if send:
                        with contextlib.suppress(OSError):
                            s.sendall(send)
                    s.close()
                    with lock:
                        ok[0] += 1
                except OSError as e:
                    with lock:
                        errs.append(repr(e))

        ths = [threading.Thread(target=worker, args=(k,)) for k in per if k]
        t0 = time.monotonic()
        for t in ths:
            t.start()
        for t in ths:
            t.join(120)
        return time.monotonic() - t0, ok[0], errs


def parse_http(raw):
    status, headers, body = None, {}, b""
    rest = raw
    while True:
        head, sep, rest2 = rest.partition(b"\r\n\r\n")
        if not sep:
            return status, headers, body
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0])
        if not m:
            return status, headers, body
        status = int(m.group(1))
        if 100 <= status < 200:
            rest = rest2
            continue
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            headers.setdefault(k.decode("latin-1").strip().lower(), v.decode("latin-1").strip())
        body = rest2
        cl = headers.get("content-length")
        if cl is not None and cl.isdigit():
            body = rest2[:int(cl)]
        return status, headers, body
