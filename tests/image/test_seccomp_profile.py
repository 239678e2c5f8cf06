#!/usr/bin/env python3
"""deploy/seccomp/codellm.json, the container's seccomp profile, without
a container: it is what deploy/seccomp/gen writes; it is the generator's
runtime-default-like baseline plus exactly the additions; it admits
every call the block filter (sandbox/seccomp.c) allows, so a block sees
the same answers in a container as on a host; and every call the handler
and systemd-socket-activate make while serving runs in the six languages
and /healthz (strace -f) passes it, but for the two it refuses on
purpose (the block filter's canary, system call 511, which no kernel
has: the check that the block filter took expects that filter's own
answer; bpf; clone3: ENOSYS, so libc falls back to clone).
tests/image/test_image.py runs the profile in a container."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "blackbox"))
from harness import *  # noqa: E402,F401,F403

t = Tap()
GEN = os.path.join(TOP, "deploy", "seccomp", "gen")
PROFILE = os.path.join(TOP, "deploy", "seccomp", "codellm.json")
# the block filter names these by number (newer than libseccomp 2.5.4)
BY_NUMBER = {451: "cachestat", 452: "fchmodat2", 453: "map_shadow_stack", 454: "futex_wake",
             455: "futex_wait", 456: "futex_requeue", 462: "mseal"}
REFUSED_ON_PURPOSE = {"syscall_0x1ff", "bpf", "clone3"}


def gen(*args):
    return subprocess.run([GEN] + list(args) + ["-o", "-"], capture_output=True, text=True, check=True).stdout


def allowed(p, plain_only=False):
    out = set()
    for r in p["syscalls"]:
        if r["action"] == "SCMP_ACT_ALLOW" and not (plain_only and r.get("args")):
            out |= set(r["names"])
    return out


with open(PROFILE) as f:
    committed = f.read()
text = gen()
t.ok(committed == text, "deploy/seccomp/codellm.json is what deploy/seccomp/gen writes (run it after a change)")
prof = json.loads(text)
base = json.loads(gen("--baseline"))

KEYS = {"defaultAction", "defaultErrnoRet", "architectures", "syscalls"}
RULE_KEYS = {"names", "action", "args", "errnoRet"}
ARG_KEYS = {"index", "value", "valueTwo", "op"}
t.ok(set(prof) == KEYS and prof["defaultAction"] == "SCMP_ACT_ERRNO" and prof["defaultErrnoRet"] == 1
     and prof["architectures"] == ["SCMP_ARCH_X86_64"]
     and all(set(r) <= RULE_KEYS and r["names"] and r["action"].startswith("SCMP_ACT_")
             and all(set(a) == ARG_KEYS for a in r.get("args", [])) for r in prof["syscalls"]),
     "the profile uses only the fields the OCI runtime spec, containerd and podman share: "
     "an allowlist, EPERM for the rest, x86-64", prof.get("defaultAction"))

# the additions: in the profile, never in the baseline (plain); and nothing else differs
with open(GEN) as f:
    gsrc = f.read()
adds = set(re.findall(r'^    "([a-z0-9_]+)": "', gsrc.split("ADDITIONS = {", 1)[1].split("\n}", 1)[0], re.M))
t.ok(adds and allowed(prof) == allowed(base) | adds and not adds & allowed(base, plain_only=True),
     "the profile is the baseline plus exactly the additions: %s" % " ".join(sorted(adds)),
     (sorted(adds), sorted(allowed(prof) ^ (allowed(base) | adds))))
NS = ("unshare", "mount", "umount2", "pivot_root", "sethostname", "mount_setattr")
clone_rules = [r for r in base["syscalls"] if "clone" in r["names"]]
t.ok(not set(NS) & allowed(base) and len(clone_rules) == 1
     and clone_rules[0].get("args") == [{"index": 0, "value": 0x7E020000, "valueTwo": 0,
                                        "op": "SCMP_CMP_MASKED_EQ"}],
     "the baseline refuses what a runtime default refuses a process without CAP_SYS_ADMIN: "
     "unshare, mount, umount2, pivot_root, sethostname, mount_setattr, clone with CLONE_NEW*",
     clone_rules)

# the block filter's calls
with open(os.path.join(TOP, "sandbox", "seccomp.c")) as f:
    csrc = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
names = set(re.findall(r'"([a-z0-9_]+)"', csrc.split("allow_names[] = {", 1)[1].split("NULL", 1)[0]))
nrs = [int(n) for n in re.findall(r"\b(\d+)\b", csrc.split("allow_nrs[] = {", 1)[1].split("};", 1)[0])]
unknown = [n for n in nrs if n not in BY_NUMBER]
names |= {BY_NUMBER[n] for n in nrs if n in BY_NUMBER}
# calls the block filter allows for some arguments
names |= {"clone", "ioctl", "personality", "socket", "socketpair"}
names |= set(re.findall(r'\{ "([a-z0-9_]+)", \d', csrc.split("id_calls[] = {", 1)[1].split("};", 1)[0]))
t.ok(len(names) > 150 and not unknown and names <= allowed(prof),
     "every call the block filter allows (%d) passes the profile" % len(names),
     (sorted(names - allowed(prof)), unknown))

# the handler's and systemd-socket-activate's calls, as they serve
if shutil.which("strace") is None:
    t.skip("the calls the handler makes pass the profile", "no strace")
    t.done()
tmp = tempfile.mkdtemp(prefix="codellm-strace-")
os.chmod(tmp, 0o755)
prefix = os.path.join(tmp, "trace")
s = Server(sandbox="native")
s.argv = ["strace", "-f", "-ff", "-qq", "-o", prefix] + s.argv
progs = {"python": "print(6*7)", "bash": "echo $((6*7))", "node": "console.log(6*7)",
         "ruby": "puts 6*7", "php": "<?php echo 6*7, \"\\n\";", "perl": "print 6*7, \"\\n\";"}
with s:
    got = {m: content(s.run(c, model=m)) for m, c in progs.items()}
    hz = s.request("GET", "/healthz").status
t.ok(all(v == "42\n" for v in got.values()) and hz == 200,
     "under strace the handler serves a run in each of the six languages and /healthz", (got, hz))
calls = {}
line_re = re.compile(r"^(?:<\.\.\. )?([a-z0-9_]+)(?:\(| resumed>)")
for path in glob.glob(prefix + ".*"):
    with open(path, errors="replace") as f:
        for line in f:
            m = line_re.match(line)
            if not m or line.rstrip().endswith("<unfinished ...>"):
                continue
            # a call a filter refused is not one that must pass: on the host
            # only the block's own filter answers ENOSYS or EPERM
            if re.search(r"= -1 (ENOSYS|EPERM) ", line):
                continue
            calls.setdefault(m.group(1), path)
shutil.rmtree(tmp, ignore_errors=True)
missing = sorted(set(calls) - allowed(prof) - REFUSED_ON_PURPOSE)
t.ok(len(calls) > 50 and not missing,
     "every call the handler and systemd-socket-activate made (%d kinds) passes the profile"
     % len(calls), missing)
t.done()
