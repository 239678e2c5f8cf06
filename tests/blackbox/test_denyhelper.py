#!/usr/bin/env python3
"""The test helper tests/helpers/deny-syscalls itself, for --landlock-abi N:
the Landlock ABI version query answers N in the program and everything it
starts (a grandchild, a block in the handler's own PID and user
namespaces), every real Landlock call still reaches the kernel, a deny
RULE keeps working beside it, and the supervisor answering the queries
holds nothing it should not and is gone once the program and its
descendants are.

The fail-closed tests use it to make the handler see an older kernel:
    deny-syscalls --landlock-abi 5 -- codellm-handler ...
"""
import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
DENY = os.path.join(TOP, "tests", "helpers", "deny-syscalls")
SUPERVISOR = DENY + " landlock-abi-supervisor"   # its command line, NULs as spaces

# the version query, landlock_create_ruleset(NULL, 0, VERSION): "value errno"
QUERY = ("import ctypes; l = ctypes.CDLL(None, use_errno=True); "
         "l.syscall.restype = ctypes.c_long; "
         "r = l.syscall(ctypes.c_long(444), ctypes.c_void_p(None), ctypes.c_size_t(0), "
         "ctypes.c_uint32(1)); print(r, ctypes.get_errno() if r < 0 else 0, flush=True)")

# real calls: a ruleset handling FS_EXECUTE (an attr, size 8), then
# restrict_self with it; and the version flag with an attr, which the
# kernel refuses (EINVAL) and no fake may answer
REAL = r'''
import ctypes, os, json, struct
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
attr = ctypes.create_string_buffer(struct.pack("Q", 1), 8)
fd = l.syscall(ctypes.c_long(444), attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
res = {"fd": fd, "errno": ctypes.get_errno() if fd < 0 else 0}
res["link"] = os.readlink("/proc/self/fd/%d" % fd) if fd >= 0 else None
r = l.syscall(ctypes.c_long(446), ctypes.c_long(fd), ctypes.c_uint32(0)) if fd >= 0 else -2
res["restrict"] = r
res["restrict_errno"] = ctypes.get_errno() if r == -1 else 0
r = l.syscall(ctypes.c_long(444), attr, ctypes.c_size_t(8), ctypes.c_uint32(1))
res["bad_query"] = [r, ctypes.get_errno() if r < 0 else 0]
print(json.dumps(res))
'''


def run(cmd, timeout=30, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def query(prefix=()):
    rc, out, err = run(list(prefix) + ["python3", "-c", QUERY])
    return out.split(), "rc %s\nstdout %r\nstderr %r" % (rc, out, err)


def stat_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    rest = st[st.rindex(")") + 2:].split()
    return rest[0], int(rest[1])      # state, parent


def fds_of(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def ensure_built():
    for target, path in (("tests/helpers/deny-syscalls", DENY), ("codellm-handler", HANDLER)):
        if not os.access(path, os.X_OK):
            subprocess.run(["make", "-s", "-C", TOP, target],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.access(DENY, os.X_OK)


def wrapper(cmd):
    return handler_wrapper(cmd, "codellm-denyhelper-")


if not t.ok(ensure_built(), "tests/helpers/deny-syscalls is built (make check builds it)"):
    t.done()

# ---- the version query ------------------------------------------------------

got, diag = query()
real = int(got[0]) if got and got[0].lstrip("-").isdigit() else -1
if not t.ok(real >= 1, "without the helper the query gives the kernel's real ABI (%d)" % real, diag):
    t.skip("--landlock-abi", "no Landlock on this kernel")
    t.done()
t.diag("the kernel's Landlock ABI: %d" % real)

got, diag = query([DENY, "--landlock-abi", "5", "--"])
t.ok(got == ["5", "0"], "--landlock-abi 5 (no RULE): the query answers 5", diag)

got, diag = query([DENY, "--errno", "1", "sethostname", "--"])
t.ok(got == [str(real), "0"], "a RULE alone, no --landlock-abi: the query gives the real ABI", diag)

# a grandchild (python -> python subprocess) asks too
rc, out, err = run([DENY, "--landlock-abi", "5", "--", "python3", "-c",
                    "import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', %r]).returncode)"
                    % QUERY])
t.ok(out.split() == ["5", "0"] and rc == 0, "--landlock-abi 5: a grandchild's query answers 5 too",
     "rc %s out %r err %r" % (rc, out, err))

# ---- real calls reach the kernel -----------------------------------------------

rc, out, err = run([DENY, "--landlock-abi", "5", "--", "python3", "-c", REAL])
try:
    res = json.loads(out)
except ValueError:
    res = {}
t.ok(isinstance(res.get("fd"), int) and res["fd"] >= 0 and "landlock-ruleset" in (res.get("link") or ""),
     "--landlock-abi 5: a real landlock_create_ruleset (handled_access_fs 1) gives a ruleset fd",
     "rc %s out %r err %r" % (rc, out, err))
t.eq(res.get("restrict"), 0, "--landlock-abi 5: landlock_restrict_self with it succeeds")
t.eq(res.get("bad_query"), [-1, 22],
     "--landlock-abi 5: the version flag with an attr is the kernel's EINVAL, not answered")

# ---- with deny RULEs -----------------------------------------------------------

rc, out, err = run([DENY, "--landlock-abi", "4", "--errno", "1", "sethostname", "--", "python3", "-c",
                    QUERY + "\nimport ctypes, errno, socket\n"
                    "try:\n    socket.sethostname('codellm-denyhelper'); print('set')\n"
                    "except OSError as e:\n    print(errno.errorcode[e.errno])\n"
                    "print(open('/proc/self/status').read().count('NoNewPrivs:\\t1'))\n"])
t.eq(out.split(), ["4", "0", "EPERM", "1"],
     "--landlock-abi 4 with --errno 1 sethostname: the query answers 4, sethostname fails "
     "with EPERM, no_new_privs is set")

got, diag = query([DENY, "landlock_create_ruleset", "--landlock-abi", "5", "--"])
t.ok(got == ["-1", "38"], "a RULE denying landlock_create_ruleset beats --landlock-abi (ENOSYS)", diag)

# ---- usage ---------------------------------------------------------------------

for args, what in ((["--landlock-abi", "0", "--", "true"], "--landlock-abi 0"),
                   (["--landlock-abi", "x", "--", "true"], "--landlock-abi x"),
                   (["--landlock-abi", "5", "true"], "no --"),
                   (["--landlock-abi", "5", "--"], "no PROGRAM"),
                   (["--", "true"], "neither RULE nor --landlock-abi")):
    rc, out, err = run([DENY] + args)
    t.ok(rc == 2 and "usage:" in err, "usage error (exit 2): %s" % what, "rc %s err %r" % (rc, err))

# ---- the supervisor ------------------------------------------------------------

# The waits below allow 20 s, also on a loaded machine: a supervisor
# ends (or appears) within milliseconds, a stray one stays for good.
t.ok(wait_gone(SUPERVISOR, 20), "no supervisor left from the cases above",
     repr(procs_matching(SUPERVISOR)))

# The program asks first, then waits on its stdin: once its first line
# (the answer) is read here, the supervisor has the listener (it answered
# through it) and has closed the socket it came over, so its descriptors
# are looked at in their final state, however slowly it was scheduled.
mark = "denyhelper-%d" % os.getpid()
p = subprocess.Popen([DENY, "--landlock-abi", "5", "--", "python3", "-c",
                      "import sys; " + QUERY + "; sys.stdin.read(); print('" + mark + "')"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
# (a supervisor that never answers: the first line never comes; 30 s
# is only a backstop, the answer takes milliseconds)
ready = select.select([p.stdout], [], [], 30)[0]
first = p.stdout.readline().decode().split() if ready else []
if not ready:
    p.kill()
sup = wait_procs(SUPERVISOR, 20)
t.ok(first == ["5", "0"] and len(sup) == 1,
     "while the program runs (its query answered 5) there is one supervisor (cmdline \"%s\")"
     % SUPERVISOR.replace(DENY, "deny-syscalls"), "first line %r, supervisors %r" % (first, sup))
if sup:
    state, parent = stat_of(sup[0])
    t.ok(parent != p.pid and sup[0] not in children_of(p.pid),
         "the supervisor is no child of the program (double fork; parent %d)" % parent)
    fds = fds_of(sup[0])
    others = {fd: l for fd, l in fds.items() if fd > 2}
    t.ok(fds.get(0) == "/dev/null" and fds.get(1) == "/dev/null" and fds.get(2) == "/dev/null" and
         list(others.values()) == ["anon_inode:seccomp notify"],
         "the supervisor holds /dev/null as stdio (stderr here a pipe) and only the listener",
         repr(fds))
    with open("/proc/%d/status" % sup[0]) as f:
        st = f.read()
    t.ok("\nSeccomp:\t0\n" in st, "the supervisor itself runs without any seccomp filter",
         [ln for ln in st.splitlines() if ln.startswith("Seccomp")])
    with open("/proc/%d/cmdline" % sup[0], "rb") as f:
        cmd = f.read()
    t.ok(mark.encode() not in cmd and b"python3" not in cmd,
         "the supervisor's command line holds none of the program's", repr(cmd))
else:
    for what in ("not a child", "fds", "no filter", "command line"):
        t.ok(False, "the supervisor: " + what)
out, err = p.communicate(b"", timeout=30)
t.eq(out.decode().strip(), mark, "the program ran to its end")
t.ok(wait_gone(SUPERVISOR, 20), "after the program exits no supervisor process remains",
     repr(procs_matching(SUPERVISOR)))

# a descendant outliving the program: answered, and the supervisor waits
# for it. The descendant blocks opening a FIFO until this test, having
# seen the supervisor alive after the program's exit, opens it: no
# interval of its own decides the order, however loaded the machine.
out_dir = tempfile.mkdtemp(prefix="codellm-denyhelper-")
res_file = os.path.join(out_dir, "late")
go = os.path.join(out_dir, "go")
os.mkfifo(go)
t0 = time.time()
try:
    # the program returns at once; waiting for its descendant would wait
    # forever (it waits on the FIFO): the timeout turns that into a failure
    rc, out, err = run([DENY, "--landlock-abi", "6", "--", "sh", "-c",
                        "(read go < %s; python3 -c %s > %s) </dev/null >/dev/null 2>&1 & exit 0"
                        % (shlex.quote(go), shlex.quote(QUERY), shlex.quote(res_file))])
except subprocess.TimeoutExpired:
    rc, out, err = None, "", "the program did not return (timeout)"
quick = time.time() - t0
alive = bool(procs_matching(SUPERVISOR))
t.ok(rc == 0 and alive,
     "the program exits at once (%.2f s), its background descendant keeps the supervisor alive"
     % quick, "rc %s, supervisor alive %s, stderr %r" % (rc, alive, err))
# O_RDWR: the open never blocks, and the line stays in the FIFO (this
# end is open) until the descendant opens and reads it, whenever it does
fifo = os.open(go, os.O_RDWR)
os.write(fifo, b"go\n")
deadline = time.time() + 30          # normally milliseconds: a backstop
while time.time() < deadline and not (os.path.exists(res_file) and os.path.getsize(res_file)):
    time.sleep(0.05)
os.close(fifo)
with open(res_file) if os.path.exists(res_file) else open(os.devnull) as f:
    late = f.read().split()
t.eq(late, ["6", "0"], "the descendant's query, after the program is gone, answers 6")
t.ok(wait_gone(SUPERVISOR, 20), "once the descendant is gone, so is the supervisor",
     repr(procs_matching(SUPERVISOR)))
shutil.rmtree(out_dir, ignore_errors=True)

# ---- the handler on an older Landlock ---------------------------------------------

if not os.access(HANDLER, os.X_OK):
    t.skip("the handler under --landlock-abi 5", "codellm-handler is not built")
else:
    rc, out, err = run([DENY, "--landlock-abi", "5", "--", HANDLER, "--probe"], timeout=60)
    try:
        j = json.loads(out)
    except ValueError:
        j = {}
    t.ok(j.get("landlock_abi") == 5, "the handler's --probe reports landlock_abi 5",
         "rc %s out %r err %r" % (rc, out, err))
    if rc == 0 and j.get("available") is True:
        t.ok("landlock" in ((j.get("sandbox") or {}).get("layers") or []),
             "--probe: the landlock layer applies with ABI-5 rights on this kernel", out)
        with Server("--timeout", "20", handler=wrapper([DENY, "--landlock-abi", "5", "--"])) as s:
            r = s.run(block("python", "import os\n" + QUERY.replace("; ", "\n") +
                            "\nprint(os.stat('/proc/self/ns/pid').st_ino, "
                            "os.stat('/proc/self/ns/user').st_ino)"))
            lines = (content(r) or "").split()
            sb = field(r, "codellm", "sandbox") or {}
            t.ok(r.status == 200 and lines[:2] == ["5", "0"],
                 "a sandboxed block (own PID and user namespace) asks and gets 5",
                 repr(r)[:800])
            mine = [str(os.stat("/proc/self/ns/%s" % n).st_ino) for n in ("pid", "user")]
            t.ok(len(lines) == 4 and lines[2] != mine[0] and lines[3] != mine[1],
                 "the block asked from PID and user namespaces not the supervisor's",
                 "block %r, ours %r" % (lines[2:], mine))
            t.ok("landlock" in (sb.get("layers") or []) and not sb.get("missing"),
                 "the run applied landlock (ABI-5 rights), nothing missing", repr(sb))
            # one handler (and supervisor) per connection: the connection
            # is over, the server still up
            t.ok(wait_gone(SUPERVISOR, 20) and s.proc.poll() is None,
                 "the connection's handler is done: its supervisor is gone, the server still up",
                 repr(procs_matching(SUPERVISOR)))
        t.ok(wait_gone(SUPERVISOR, 20), "after the server stops no supervisor process remains",
             repr(procs_matching(SUPERVISOR)))
    else:
        t.skip("the handler's sandbox under --landlock-abi 5", "the native sandbox cannot run here")

remove_wrappers()
t.done()
