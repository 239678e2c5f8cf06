#!/usr/bin/env python3
"""The codellm container image (make image) under the settings of its
Kubernetes pod, run by Debian's podman with runc: the same kernel
primitives a node's runc or crun uses.

Every container here runs as uid 10001 (not root), with every capability
dropped, no_new_privs (no privilege escalation), a user namespace of its
own (--uidmap/--gidmap: hostUsers: false), an unmasked /proc (unmask=ALL:
procMount: Unmasked), a read-only root with a tmpfs for the run slots
(readOnlyRootFilesystem, an emptyDir) and the key mounted read-only as a
file owned by root, group 10001, mode 0440 (a Secret with fsGroup). What
changes is the seccomp profile: deploy/seccomp/codellm.json, then the
runtime-default-like profile deploy/seccomp/gen --baseline writes, then
podman's own default.

It proves: the settings took; /healthz is 200; a python run's sandbox
report says missing []; one escape case of each threat class of
THREATS.md holds inside (the probes are test_escape.py's own, read from
that file, judged as it judges them); no zombie stays behind, not even
of a handler killed mid-run; the audit record reaches `podman logs`;
`podman stop` is prompt; and under either default profile /healthz is a
503 naming the layer and nothing runs.

CODELLM_IMAGE names the image (default localhost/codellm:latest),
CODELLM_IMAGE_RUNTIME the OCI runtime (default runc: Debian's crun 1.8
refuses a host with cgroups in hybrid mode). Needs root (podman's system
storage) and slirp4netns (the port, without touching the host's network).
"""
import ast
import atexit
import concurrent.futures
import json
import os
import re
import resource
import shutil
import stat
import signal
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "blackbox"))
from harness import *  # noqa: E402,F401,F403

t = Tap()
T_START = time.time()
IMAGE = os.environ.get("CODELLM_IMAGE") or "localhost/codellm:latest"
RUNTIME = os.environ.get("CODELLM_IMAGE_RUNTIME") or "runc"
PROFILE = os.path.join(TOP, "deploy", "seccomp", "codellm.json")
GEN = os.path.join(TOP, "deploy", "seccomp", "gen")
PODMAN_DEFAULT = "/usr/share/containers/seccomp.json"
ESCAPE = os.path.join(TOP, "tests", "blackbox", "test_escape.py")
# the container's user namespace: ids 0-65535 inside are these outside
# (uid 10001, the handler, is HOST_BASE + 10001 on the host)
HOST_BASE = 200000
UID = 10001
U = "%06d" % (os.getpid() % 1000000)
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4)
ALL_LAYERS = ["userns", "pidns", "mountns", "netns", "ipcns", "utsns", "cgroupns",
              "workdir", "groups", "ucounts", "root", "proc", "init", "rlimits",
              "no_new_privs", "caps", "landlock", "seccomp"]
FAILS_NET = {"EACCES", "EPERM", "ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL", "EHOSTUNREACH"}


def podman(*args, timeout=180, check=False):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True,
                          timeout=timeout, check=check)


def rlimit_arg(res, cap):
    """--ulimit values within this process's hard limit: without
    CAP_SYS_RESOURCE podman cannot raise them, and its defaults do"""
    hard = resource.getrlimit(res)[1]
    v = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    return "%d:%d" % (v, v)


# ---- the probes, read from the escape battery (never run: it starts servers) ---------

def escape_source(name):
    """The string a top-level `name = '...'` (or `'...' % (...)`, its
    left operand) assigns in test_escape.py, read without running it."""
    with open(ESCAPE) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and
                any(isinstance(x, ast.Name) and x.id == name for x in node.targets)):
            continue
        v = node.value
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mod):
            v = v.left
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return v.value
    raise KeyError("test_escape.py assigns no string to %s" % name)


PRELUDE = escape_source("PRELUDE")
EPILOGUE = escape_source("EPILOGUE")


def pyblock(body):
    return block("python", PRELUDE + body + EPILOGUE)


def diag_of(r, extra=None):
    d = "no response" if r is None else "status %s body %r" % (r.status, r.body[:1500])
    return d if extra is None else "%r\n%s" % (extra, d)


def case(r, cond, desc, evidence=None):
    """One TAP line: the attack failed (cond) and the answer arrived."""
    try:
        c = bool(cond() if callable(cond) else cond)
    except Exception as e:
        c, evidence = False, "%r (%r)" % (evidence, e)
    return t.ok(completion_ok(r) and c, desc, diag_of(r, evidence))


def host_has_ia32():
    """as test_escape.py: without IA32 emulation int 0x80 dies by SIGSEGV
    before any filter sees it"""
    probe = PRELUDE + "machine_code(INT80_GETPID)()\n"
    return subprocess.run([sys.executable, "-c", probe]).returncode != -signal.SIGSEGV


INT80_SIG = signal.SIGSYS if host_has_ia32() else signal.SIGSEGV


# ---- containers ----------------------------------------------------------------------

KEYDIR = tempfile.mkdtemp(prefix="codellm-image-key-")
os.chmod(KEYDIR, 0o755)
KEYFILE = os.path.join(KEYDIR, "api-key")
with open(KEYFILE, "w") as f:
    f.write(KEY + "\n")
# as a Kubernetes Secret with fsGroup: root's, group 10001, 0440
os.chown(KEYFILE, HOST_BASE, HOST_BASE + UID)
os.chmod(KEYFILE, 0o440)
CONTAINERS = []


class Container(Server):
    """The image in a container, published on 127.0.0.1:port; the
    request helpers are the harness's (they only need .port)."""

    # the run slots' tmpfs as README.md gives it: the service user's own
    SLOTS_README = ["--mount", "type=tmpfs,destination=/run/codellm,tmpfs-size=1m,"
                               "tmpfs-mode=0700,chown=true"]

    def __init__(self, label, profile, env=None, args=(), slots=SLOTS_README):
        self.name = "codellm-test-%s-%s" % (U, label)
        self.port = free_port()
        self.profile = profile
        self.argv = ["podman", "run", "--detach", "--name", self.name, "--runtime", RUNTIME,
                     "--user", "%d:%d" % (UID, UID), "--cap-drop=all",
                     "--security-opt", "no-new-privileges",
                     "--uidmap", "0:%d:65536" % HOST_BASE, "--gidmap", "0:%d:65536" % HOST_BASE,
                     "--security-opt", "seccomp=" + profile,
                     "--security-opt", "unmask=ALL",
                     "--read-only"] + list(slots) + [
                     "--volume", KEYDIR + ":/run/secrets/codellm:ro",
                     "--network", "slirp4netns:port_handler=slirp4netns",
                     "--publish", "127.0.0.1:%d:8089" % self.port,
                     "--ulimit", "nofile=" + rlimit_arg(resource.RLIMIT_NOFILE, 65536),
                     "--ulimit", "nproc=" + rlimit_arg(resource.RLIMIT_NPROC, 32768)]
        for k, v in (env or {}).items():
            self.argv += ["--env", "%s=%s" % (k, v)]
        self.argv += [IMAGE] + list(args)
        self.pid1 = None

    def start(self):
        CONTAINERS.append(self.name)
        p = subprocess.run(self.argv, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError("podman run failed: %s" % p.stderr.strip())
        # until the published port answers (seconds on a busy machine; the
        # deadline only ends a container that never does)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if self.request("GET", "/healthz", timeout=30).status is not None:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        pid = podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout.strip()
        self.pid1 = int(pid) if pid.isdigit() and pid != "0" else None

    def stop(self):
        podman("rm", "--force", "--time", "0", self.name)

    def logs(self):
        p = podman("logs", self.name)
        return p.stdout, p.stderr


# Network namespaces podman pins under /run/netns, as the test found
# them: what it leaves behind goes again (drop_leaked_netns).
NETNS_DIR = "/run/netns"
NETNS_DIR_WAS = os.path.isdir(NETNS_DIR)


def netns_entries():
    try:
        return set(os.listdir(NETNS_DIR))
    except OSError:
        return set()


NETNS_BEFORE = netns_entries()


def drop_leaked_netns():
    """podman can leave the bind mount of a removed container's network
    namespace in /run/netns (seen with 4.3 and slirp4netns: one of the
    test's containers in a CI run): the host's mount table must be as
    the test found it. Only entries that appeared during the test and
    that no container podman still knows uses are taken away."""
    in_use = set()
    for cid in podman("ps", "--all", "--quiet").stdout.split():
        key = podman("inspect", "--format", "{{.NetworkSettings.SandboxKey}}", cid).stdout
        if key.strip():
            in_use.add(os.path.basename(key.strip()))
    for name in sorted(netns_entries() - NETNS_BEFORE - in_use):
        path = os.path.join(NETNS_DIR, name)
        subprocess.run(["umount", "--lazy", path], capture_output=True, timeout=60)
        try:
            os.unlink(path)
        except OSError as e:
            print("# could not remove %s: %s" % (path, e))
    if not NETNS_DIR_WAS:
        try:
            os.rmdir(NETNS_DIR)
        except OSError:
            pass


def remove_all():
    for name in CONTAINERS:
        podman("rm", "--force", "--time", "0", name)
    shutil.rmtree(KEYDIR, ignore_errors=True)
    drop_leaked_netns()


atexit.register(remove_all)


def proc_status(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return dict(l.split(":\t", 1) for l in f.read().splitlines() if ":\t" in l)
    except OSError:
        return {}


def zombies_below(pid):
    out = []
    for p in descendants(pid):
        st = proc_status(p)
        if st.get("State", "").startswith("Z"):
            out.append(p)
    return out


# ---- the image is there ----------------------------------------------------------------

if shutil.which("podman") is None:
    t.ok(False, "podman is installed (make image installs it)")
    t.done()
insp = podman("image", "inspect", "--format", "{{json .Config}} {{.Size}}", IMAGE)
if insp.returncode != 0:
    t.ok(False, "image %s exists (make image builds it)" % IMAGE, insp.stderr)
    t.done()
cfg_text, _, size = insp.stdout.strip().rpartition(" ")
cfg = json.loads(cfg_text)
t.diag("image %s: %s MB" % (IMAGE, int(size) // 1000000))
t.ok(cfg.get("User") == "%d:%d" % (UID, UID) and cfg.get("Entrypoint") == ["/usr/libexec/codellm/entrypoint"]
     and cfg.get("StopSignal") in ("SIGKILL", "9")
     and {"CODELLM_API_KEY_FILE=/run/secrets/codellm/api-key", "CODELLM_RUNTIME_DIR=/run/codellm"}
     <= set(cfg.get("Env") or []),
     "the image runs as %d:%d, its entrypoint starts systemd-socket-activate, stop signal SIGKILL, "
     "key file and runtime dir set by CODELLM_* variables" % (UID, UID), cfg)

# ---- 1. codellm's profile: the settings, /healthz, a python run -----------------------

def start(c):
    try:
        c.start()
        return True
    except (RuntimeError, subprocess.SubprocessError) as e:
        t.ok(False, "podman runs %s in container %s" % (IMAGE, c.name), e)
        return False


# CODELLM_TIMEOUT: a backstop only (the longest run, the escape probe, takes
# a second or two; the held runs below are ended by the test)
MAIN = Container("main", PROFILE, env={"CODELLM_MAX_PROCS": "64", "CODELLM_MEMORY_MAX": "256M",
                                       "CODELLM_TIMEOUT": "60"})
if not start(MAIN):
    print("Bail out! the image does not start under these settings")
    t.done()
st1 = proc_status(MAIN.pid1) if MAIN.pid1 else {}
try:
    with open("/proc/%d/uid_map" % MAIN.pid1) as f:
        umap = f.read().split()
    with open("/proc/%d/cmdline" % MAIN.pid1, "rb") as f:
        cmd1 = f.read().split(b"\0")
    with open("/proc/%d/mountinfo" % MAIN.pid1) as f:
        mounts = [l.split() for l in f.read().splitlines()]
except (OSError, TypeError):
    umap, cmd1, mounts = [], [], []
uid_host = str(HOST_BASE + UID)
t.ok(st1.get("Uid", "").split() == [uid_host] * 4 and st1.get("Gid", "").split() == [uid_host] * 4
     and st1.get("CapEff", "").strip() == "0000000000000000"
     and st1.get("CapBnd", "").strip() == "0000000000000000"
     and st1.get("NoNewPrivs", "").strip() == "1" and st1.get("Seccomp", "").strip() == "2"
     and umap == ["0", str(HOST_BASE), "65536"],
     "the container's PID 1 runs as uid/gid 10001 inside (%s on the host, a user namespace of its "
     "own: 0 -> %d), no capability, no_new_privs, a seccomp filter" % (uid_host, HOST_BASE),
     (st1, umap))
under_proc = [m[4] for m in mounts if m[4].startswith("/proc/")]
root_ro = any(m[4] == "/" and "ro" in m[5].split(",") for m in mounts)
t.ok(cmd1[:1] == [b"/usr/bin/systemd-socket-activate"] and not under_proc and root_ro,
     "PID 1 is systemd-socket-activate; /proc has nothing mounted over it (unmasked); / is read-only",
     (cmd1, under_proc, root_ro))

rh = MAIN.request("GET", "/healthz")
hz = rh.json or {}
t.ok(rh.status == 200 and dig(hz, "sandbox", "sandbox", "missing") == []
     and sorted(dig(hz, "sandbox", "sandbox", "layers") or []) == sorted(ALL_LAYERS),
     "(a) /healthz → 200: its real sandbox check applies all %d layers inside the container"
     % len(ALL_LAYERS), diag_of(rh))
t.ok(all(i.get("found") and i.get("allowed") for i in hz.get("interpreters") or [{}])
     and len(hz.get("interpreters") or []) == 6,
     "/healthz finds the six interpreters of CODELLM_ALLOWED_PROGRAMS in the image",
     hz.get("interpreters"))

rp = MAIN.run("import os\nprint(6 * 7, os.getuid())", model="python")
sbx = field(rp, "codellm", "sandbox") or {}
RID = rp.header("x-request-id")
t.ok(completion_ok(rp) and content(rp) == "42 65534\n" and sbx.get("mode") == "native"
     and sbx.get("missing") == [] and sorted(sbx.get("layers") or []) == sorted(ALL_LAYERS),
     "(b) a python run answers 42 as uid 65534, sandbox report: native, missing []", diag_of(rp))
langs = {"bash": "echo $((6*7))", "node": "console.log(6*7)", "ruby": "puts 6*7",
         "php": "<?php echo 6*7, \"\\n\";", "perl": "print 6*7, \"\\n\";"}
got = {m: content(MAIN.run(c, model=m)) for m, c in langs.items()}
t.ok(all(v == "42\n" for v in got.values()), "bash, node, ruby, php and perl runs answer 42 too", got)

# ---- the environments the image carries (CODELLM_ENVIRONMENTS) ---------------------------
# data and minimal, as make envs built them (their digests are the
# manifests' in build/envs); the README's files example (a matplotlib
# chart from a CSV) runs on data with nothing of the host's
ENVDIR = os.environ.get("CODELLM_TEST_ENVDIR", os.path.join(TOP, "build", "envs"))
want_env = {}
for e in ("data", "minimal"):
    try:
        with open(os.path.join(ENVDIR, e, "manifest.json")) as f:
            want_env[e] = json.load(f).get("digest")
    except (OSError, ValueError):
        want_env[e] = None
got_env = {e.get("name"): (e.get("digest"), e.get("ok")) for e in hz.get("environments") or []}
t.ok(all(want_env[e] and got_env.get(e) == (want_env[e], True) for e in want_env),
     "/healthz lists the image's environments data and minimal, checked, with the digests "
     "make envs gave them", (got_env, want_env))
rm_ = MAIN.request("GET", "/v1/models")
ids = [m.get("id") for m in (rm_.json or {}).get("data") or []]
t.ok(rm_.status == 200 and "data" in ids and "minimal" in ids, "GET /v1/models lists data and minimal", ids)
with open(os.path.join(TOP, "tests", "clients", "readme-files-example.mjs")) as f:
    js = f.read()
fence = "\\`\\`\\`"                     # a fence inside the JS template literal
chart = js[js.index(fence + "python\n") + len(fence + "python\n"):js.index(fence + "`;")]
csv_ = "month,sales\nJan,120\nFeb,135\nMar,160\nApr,150\n"
import base64  # noqa: E402
rd = MAIN.chat({"model": "data", "messages": [{"role": "user", "content": [
    {"type": "text", "text": "```python\n" + chart + "```"},
    {"type": "file", "file": {"filename": "sales.csv", "file_data": "data:text/csv;base64,"
                              + base64.b64encode(csv_.encode()).decode()}}]}]})
files_ = {f.get("name"): f for f in (field(rd, "codellm", "files") or [])}
png = base64.b64decode((files_.get("out/chart.png") or {}).get("data_b64") or "")
t.ok(completion_ok(rd) and content(rd) == "4 months\n" and png[:8] == b"\x89PNG\r\n\x1a\n"
     and png[16:24] == (400).to_bytes(4, "big") + (300).to_bytes(4, "big")
     and (field(rd, "codellm", "environment") or {}).get("name") == "data",
     "the README's files example runs on data in the image: \"4 months\", out/chart.png a 400x300 PNG",
     diag_of(rd))
rmin = MAIN.run(block("node", "console.log(require('os').platform(), 6*7)"), model="minimal")
t.ok(completion_ok(rmin) and content(rmin) == "linux 42\n", "a node block runs on minimal", diag_of(rmin))

# ---- (e) the audit record in podman logs ------------------------------------------------
# Without /run/systemd/journal/socket (a container has none) the handler
# writes its record as one JSON line to stderr, which is the container's.
def audit_lines(rid, wait=30.0):
    deadline = time.time() + wait
    while True:
        out, err = MAIN.logs()
        found = []
        for line in err.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("CODELLM_REQUEST_ID") == rid:
                found.append(rec)
        if found or time.time() >= deadline:
            return found, out, err
        time.sleep(0.2)


recs, lout, lerr = audit_lines(RID)
t.ok(RID and len(recs) == 1 and recs[0].get("MESSAGE_ID") and recs[0].get("CODELLM_STATUS") is not None,
     "(e) the python run's audit record is one JSON line on the container's stderr (podman logs), "
     "CODELLM_REQUEST_ID = the answer's x-request-id", (RID, recs, lerr[-1500:]))
t.ok("Connection from" in lerr,
     "systemd-socket-activate's own log (stderr) reaches podman logs", lerr[-800:])

# ---- (c) the escape battery's class representatives, inside ---------------------------
# test_escape.py's big probe: one block, classes 1, 3-6, 8-11, 13-15, 19.
# PORT is the handler's port inside the container; the key's directory
# stands where the battery puts its credentials directory.
big = escape_source("big_code") % (8089, "/run/secrets/codellm")
big = big.replace("@UDP_PORT@", "9")
r = MAIN.run(pyblock(big))
B = jcontent(r) or {}
if not B:
    t.diag("big probe failed: " + diag_of(r))

case(r, B.get("tiocsti") == ["EPERM"] * 3 and B.get("tiocsti_hi") == ["EPERM"] * 6,
     "(c) [1 tty] ioctl(TIOCSTI) on fds 0-2, also with high bits set → EPERM",
     (B.get("tiocsti"), B.get("tiocsti_hi")))
case(r, B.get("x32_getpid") == {"sig": 31} and B.get("int80_getpid") == {"sig": INT80_SIG}
     and (B.get("io_uring_setup"), B.get("io_uring_enter")) == ("EPERM", "EPERM")
     and dig(B, "clone3_newuser", "out") == "ENOSYS",
     "(c) [3 seccomp] x32 getpid → SIGSYS, int 0x80 → %s, io_uring → EPERM, clone3 → ENOSYS"
     % signal.Signals(INT80_SIG).name,
     [B.get(k) for k in ("x32_getpid", "int80_getpid", "io_uring_setup", "io_uring_enter",
                         "clone3_newuser")])
NS = ("clone_newuser", "clone_newns", "clone_newnet", "clone_newpid")
MNT = ("mount", "mount_bind", "umount2", "pivot_root")
case(r, B.get("unshare") and set(B["unshare"].values()) == {"EPERM"}
     and all(dig(B, k, "out") == "EPERM" for k in NS)
     and [B.get(k) for k in MNT] == ["EPERM"] * 4
     and B.get("unshare_bin") not in (None, "ok:0")
     and [B.get(k) for k in ("ptrace_attach_child", "ptrace_attach_init")] == ["EPERM"] * 2,
     "(c) [4 kernel] in a block, unshare/clone of any namespace, mount, umount2, pivot_root, "
     "`unshare -Ur` and ptrace fail (EPERM), though the container's profile allows the handler them",
     [B.get(k) for k in ("unshare",) + NS + MNT + ("unshare_bin", "ptrace_attach_child")])
AF = ("af_vsock", "af_packet", "af_netlink", "af_alg")
case(r, [B.get(k) for k in AF] == ["EAFNOSUPPORT"] * 4 and B.get("keyctl") == "EPERM"
     and B.get("dev_shm_own") == ["0o1777", [], True],
     "(c) [5 side] AF_VSOCK/PACKET/NETLINK audit/ALG → EAFNOSUPPORT, keyctl → EPERM, /dev/shm the block's own",
     [B.get(k) for k in AF + ("keyctl", "dev_shm_own")])
HOSTSOCK = ("/run/systemd/private", "/run/systemd/journal/socket", "/var/run/docker.sock",
            "/run/codellm")
case(r, all(B.get("path:" + p) == "ENOENT" and B.get("connect:" + p) == "ENOENT" for p in HOSTSOCK)
     and B.get("root_entries") and set(B["root_entries"].values()) == {"ENOENT"},
     "(c) [6 sockets] no /run (slots, journal, docker.sock), /var, /sys, /home in the block's root: ENOENT",
     ({p: B.get("connect:" + p) for p in HOSTSOCK}, B.get("root_entries")))
case(r, B.get("fds") == ["0", "1", "2", "3"] and not B.get("socket_fds"),
     "(c) [8 fds] only fds 0-2 cross into the block; none points at a socket or the key",
     (B.get("fds"), B.get("socket_fds")))
env = B.get("env") or {}
dump = json.dumps(B.get("proc_dump") or {})
case(r, env and not any(k.startswith(("LISTEN_", "CODELLM_")) for k in env) and KEY not in json.dumps(env)
     and KEY not in dump and B.get("creds_dir") == "ENOENT" and B.get("init_environ") == "EACCES",
     "(c) [9 secrets] no CODELLM_*/LISTEN_* or key in the environment or any /proc/*/environ; "
     "/run/secrets/codellm absent inside; /proc/1/environ → EACCES",
     (sorted(env), B.get("creds_dir"), B.get("init_environ")))
stt = B.get("status") or {}
case(r, B.get("resuid") == [65534] * 3 and stt.get("CapEff") == "0000000000000000"
     and stt.get("CapBnd") == "0000000000000000" and stt.get("NoNewPrivs") == "1"
     and (B.get("uid_map") or [None])[::2] == ["65534", "1"] and B.get("setuid0") in ("EPERM", "EINVAL"),
     "(c) [10 priv] uid 65534 (one id mapped), no capability, no_new_privs, setuid(0) fails",
     (B.get("resuid"), stt, B.get("uid_map"), B.get("setuid0")))
case(r, B.get("net_dev") == ["lo"] and B.get("tcp_public") in FAILS_NET
     and B.get("tcp_metadata") in FAILS_NET and str(B.get("dns", "")).startswith("gaierror"),
     "(c) [11 net] only the block's own lo: 1.1.1.1:443, 169.254.169.254:80 and DNS fail at once",
     [B.get(k) for k in ("net_dev", "tcp_public", "tcp_metadata", "dns")])
ks = B.get("kallsyms") or ""
mi = B.get("proc_meminfo") or []
case(r, (ks in ("EACCES", "EPERM", "ENOENT") or ks == "ok:['0000000000000000']")
     and all(B.get(k) in ("EROFS", "EACCES", "EPERM") for k in ("sys_core_pattern_w", "sys_hostname_w"))
     and B.get("sysrq") in ("EROFS", "EACCES", "EPERM", "ENOENT") and B.get("sys") == "ENOENT"
     and B.get("proc_remount") == "EPERM"
     and len(mi) == 3 and all(l.split()[1] == "262144" for l in mi),
     "(c) [13 kinfo] with /proc unmasked in the container, the block's /proc still masks: kallsyms "
     "zeros, /proc/sys and sysrq-trigger not writable, no /sys, meminfo shows CODELLM_MEMORY_MAX (256M)",
     [ks[:80]] + [B.get(k) for k in ("sys_core_pattern_w", "sys_hostname_w", "sysrq", "sys",
                                     "proc_remount", "proc_meminfo")])
case(r, B.get("ctl_handler") in FAILS_NET and str(B.get("healthz", "")).startswith("URLError")
     and B.get("kill_init") == "EPERM",
     "(c) [14 control] the handler's port 8089 (inside the container) unreachable from a block; "
     "kill(1) → EPERM", [B.get(k) for k in ("ctl_handler", "healthz", "kill_init")])
sb = field(r, "codellm", "sandbox") or {}
# the container's filter and the block's; a third (memfd_create → ENOSYS)
# where the run has no cgroup of its own (the image's non-root handler
# on a host whose cgroups it may not write: issue 32)
NFILT = "3" if (field(r, "codellm", "usage") or {}).get("memory_bound") == "none" else "2"
case(r, sb.get("missing") == [] and stt.get("Seccomp") == "2" and stt.get("Seccomp_filters") == NFILT
     and B.get("ll_write_random") == "EACCES" and B.get("hostname") == "codellm",
     "(c) [15 fail-open] all layers applied; a block runs under %s filters (the container's and "
     "its own%s), Landlock in force, hostname codellm"
     % (NFILT, ", and memfd_create's without a run cgroup" if NFILT == "3" else ""),
     (sb, stt.get("Seccomp_filters"), B.get("ll_write_random"), B.get("hostname")))
def tried(v):
    """the value a tryf() probe read ('ok:<repr>'), or None"""
    try:
        return ast.literal_eval(v[3:]) if str(v).startswith("ok:") else None
    except (ValueError, SyntaxError):
        return None


case(r, re.fullmatch(r"codellm-init\x00\d+\x00", str(tried(B.get("init_cmdline")))) is not None
     and [B.get(k) for k in ("init_mem", "init_maps")] == ["EACCES"] * 2,
     "(c) [19 init] /proc/1 is codellm-init (command line `codellm-init PID`), its memory unreadable",
     (B.get("init_cmdline"), B.get("init_mem"), B.get("init_maps")))

# class 2: daemons that must die with the run
M2 = "86." + U
r2 = MAIN.run(pyblock(escape_source("daemons_code") % M2))
D2 = jcontent(r2) or {}
# the daemons sleep 86 s: gone within 30 s is gone with the run
gone2 = {i: wait_gone(M2 + i, 30) for i in "1234"}
case(r2, len(D2.get("alive") or {}) == 4 and all(gone2.values()),
     "(c) [2 outlive] setsid+double-fork, nohup, TERM-ignoring daemons: alive in the block, gone "
     "after the response", (D2, gone2))
kill_leftovers(M2)

# class 7: links planted in out/ to the key file and /etc/shadow are never followed
r7 = MAIN.run(pyblock(r'''
os.makedirs("out", exist_ok=True)
os.symlink("/run/secrets/codellm/api-key", "out/key")
os.symlink("/etc/shadow", "out/shadow")
os.mkfifo("out/fifo")
R['planted'] = sorted(os.listdir("out"))
'''))
F7 = {f.get("name"): f for f in (field(r7, "codellm", "files") or [])}
case(r7, all((F7.get(n) or {}).get("omitted") == "a symbolic link" and "data_b64" not in F7.get(n, {})
             for n in ("out/key", "out/shadow"))
     and (F7.get("out/fifo") or {}).get("omitted") == "not a regular file" and KEY not in r7.body.decode(),
     "(c) [7 files] symlinks in /work/out to the key file and /etc/shadow are listed, never followed; "
     "a FIFO is never opened", F7)

# class 12: a fork bomb stops at CODELLM_MAX_PROCS (64, set in the container's environment)
M12 = "85." + U
r12 = MAIN.run(pyblock(escape_source("forkbomb") % M12))
FB = jcontent(r12) or {}
gone12 = wait_gone(M12, 30)      # its sleeps last 85 s
case(r12, FB.get("err") == "EAGAIN" and FB.get("forked", 999) < 64 and gone12,
     "(c) [12 exhaust] fork bomb stops at CODELLM_MAX_PROCS 64 (EAGAIN); nothing of it survives",
     (FB, gone12))
kill_leftovers(M12)

# class 16: a browser's cross-site simple POST
body16 = json.dumps({"model": "bash", "messages": [{"role": "user", "content": "echo b16-" + U}]}).encode()
r16 = MAIN.raw(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                "Origin: https://evil.example\r\nSec-Fetch-Site: cross-site\r\n"
                "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                % (MAIN.port, KEY, len(body16))).encode() + body16)
t.ok(r16.status == 403 and ("b16-" + U).encode() not in r16.raw,
     "(c) [16 browser] a cross-site text/plain POST with the key → 403, nothing runs", r16.raw[:300])

# class 17: one run holding every inotify instance it can get; a concurrent run still gets one.
# Run A ends in a `sleep M17` (longer than CODELLM_TIMEOUT) holding them,
# which the test kills once run B has finished: B surely ran while A held
# them, however slowly either run started.
M17 = "83.17" + U
uc_a = pyblock(escape_source("uc_a") % M17).replace(EPILOGUE, "\n")
fa = POOL.submit(MAIN.run, uc_a)
seen_a = wait_procs("sleep " + M17, 60)
rb17 = MAIN.run(pyblock(escape_source("uc_b")))
kill_leftovers("sleep " + M17)          # B is done: A may end
ra17 = fa.result()
A17, B17 = jcontent(ra17) or {}, jcontent(rb17) or {}
case(rb17, bool(seen_a) and dig(A17, "inotify", 1) == "EMFILE" and B17.get("inotify") == "ok"
     and dig(A17, "sigqueue", 1) == "EAGAIN" and B17.get("sigqueue") == "ok",
     "(c) [17 ucounts] run A holds every inotify instance (%s) and queued signal it can get; "
     "concurrent run B still gets both" % dig(A17, "inotify", 0), (A17, B17, seen_a))
kill_leftovers(M17)

# class 18: shared memory is bounded (the block's /dev/shm, --shm-bytes 64M)
r18 = MAIN.run(pyblock(r'''
got = 0
try:
    for i in range(128):
        with open("/dev/shm/fill%d" % i, "wb") as f:
            f.write(b"\1" * (1 << 20))
        got += 1
except OSError as e:
    R['err'] = errno.errorcode.get(e.errno)
R['mb'] = got
'''))
S18 = jcontent(r18) or {}
case(r18, S18.get("err") == "ENOSPC" and 0 < S18.get("mb", 999) <= 64,
     "(c) [18 memory] /dev/shm fills up at --shm-bytes (64M): ENOSPC after %s MiB" % S18.get("mb"), S18)

# ---- zombies: a handler killed mid-run, then the reaping ------------------------------
# the block sleeps 84 s (CODELLM_TIMEOUT 60 ends it otherwise): it runs
# until the test kills its handler, and a block that outlived its handler
# would still be there when the 30 s wait for it to go ends
MZ = "84.4" + U
fz = POOL.submit(MAIN.run, block("bash", "exec sleep " + MZ), timeout=90)
seen_z = wait_procs("sleep " + MZ, 60)
marked = set(procs_matching("sleep " + MZ))
handlers = [h for h in children_of(MAIN.pid1) if marked & set(descendants(h))] if MAIN.pid1 else []
for h in handlers:
    os.kill(h, signal.SIGKILL)
t0 = time.time()
gone_z = wait_gone("sleep " + MZ, 30)
rz = fz.result()
# PID 1 (systemd-socket-activate) reaps the killed handler in its own time:
# wait until nothing is left below it, rather than for a fixed second
deadline = time.time() + 30
while MAIN.pid1 and (zombies_below(MAIN.pid1) or descendants(MAIN.pid1)) and time.time() < deadline:
    time.sleep(0.05)
el_z = time.time() - t0
zombies = zombies_below(MAIN.pid1) if MAIN.pid1 else ["no pid 1"]
left = descendants(MAIN.pid1) if MAIN.pid1 else ["no pid 1"]
t.ok(seen_z and len(handlers) == 1 and gone_z and not zombies and not left,
     "a handler SIGKILLed mid-run: its block dies with it, PID 1 reaps it; after every run so far no "
     "zombie and no process is left below PID 1 (%.2f s after the kill)" % el_z,
     (seen_z, handlers, gone_z, zombies, left))
kill_leftovers(MZ)
rn = MAIN.run("print('after')", model="python")
t.ok(content(rn) == "after\n", "the next run works", diag_of(rn))

# ---- podman stop ---------------------------------------------------------------------------
# A stop signal that did not end it would make podman wait out --time 60
# before its SIGKILL: 30 s tells the two apart however busy the machine
# (a prompt stop takes well under a second alone).
t0 = time.time()
ps = podman("stop", "--time", "60", MAIN.name)
el = time.time() - t0
state = podman("inspect", "--format", "{{.State.Status}}", MAIN.name).stdout.strip()
t.ok(ps.returncode == 0 and el < 30 and state == "exited" and not os.path.exists("/proc/%d" % (MAIN.pid1 or 0)),
     "podman stop ends the container in %.1f s, without waiting out its --time 60 (stop signal "
     "SIGKILL to systemd-socket-activate)" % el, (ps.stderr, state))
MAIN.stop()

# ---- the obvious tmpfs: `podman run --tmpfs /run/codellm` --------------------------------
# podman mounts a root-owned tmpfs there that the handler (10001) cannot
# write, with a copy of the image's entries: the handler's private
# codellm-10001, where its slots then live
TMPFS = Container("tmpfs", PROFILE, slots=["--tmpfs", "/run/codellm"])
if start(TMPFS):
    try:
        rh = TMPFS.request("GET", "/healthz")
        rn = TMPFS.run("print('on a plain tmpfs')", model="python")
        root = "/proc/%d/root/run/codellm" % (TMPFS.pid1 or 0)
        try:
            top = os.stat(root)
            sub = os.lstat(root + "/codellm-%d" % UID)
            slots = sorted(os.listdir(root + "/codellm-%d" % UID))
        except OSError as e:
            top = sub = None
            slots = repr(e)
        t.ok(rh.status == 200 and content(rn) == "on a plain tmpfs\n"
             and top is not None and top.st_uid == HOST_BASE and not (top.st_mode & 0o022)
             and sub is not None and stat.S_ISDIR(sub.st_mode) and sub.st_uid == HOST_BASE + UID
             and stat.S_IMODE(sub.st_mode) == 0o700 and "slot.0" in slots,
             "--tmpfs /run/codellm (root's, not writable by the handler): /healthz 200 and a run "
             "work; the slots live in the handler's private codellm-%d (0700, its own)" % UID,
             (rh.status, diag_of(rn), top and (top.st_uid, oct(top.st_mode)),
              sub and (sub.st_uid, oct(sub.st_mode)), slots))
    finally:
        TMPFS.stop()

# ---- (d) the runtime's default profiles: fail closed -------------------------------------
def fail_closed(label, profile, desc):
    c = Container(label, profile)
    if not start(c):
        return
    try:
        rh = c.request("GET", "/healthz")
        hz = rh.json or {}
        layer = dig(hz, "sandbox", "failed_layer")
        t.ok(rh.status == 503 and hz.get("status") == "unavailable" and layer in ALL_LAYERS
             and layer in json.dumps(dig(hz, "sandbox", "error") or ""),
             "(d) %s: /healthz → 503 naming the layer (%s)" % (desc, layer), diag_of(rh))
        mark = "5.55" + U
        with Watch("sleep " + mark) as w:
            rr = c.run(block("bash", "sleep " + mark))
        err = rr.error() or {}
        t.ok(rr.status == 503 and err.get("code") == "sandbox_unavailable" and layer and layer in err.get("message", "")
             and not w.seen,
             "(d) %s: a run → 503 sandbox_unavailable naming %s; the block never ran" % (desc, layer),
             diag_of(rr, w.seen))
    finally:
        c.stop()


base = tempfile.NamedTemporaryFile(prefix="codellm-baseline-", suffix=".json", delete=False)
base.close()
subprocess.run([GEN, "--baseline", "-o", base.name], check=True)
fail_closed("baseline", base.name, "a containerd-like default profile (deploy/seccomp/gen --baseline)")
os.unlink(base.name)
if os.path.exists(PODMAN_DEFAULT):
    fail_closed("podman-default", PODMAN_DEFAULT, "podman's own default profile")
else:
    t.ok(False, "(d) podman's default profile %s exists" % PODMAN_DEFAULT)

POOL.shutdown(wait=True)
t.diag("image test: %.1f s" % (time.time() - T_START))
t.done()
