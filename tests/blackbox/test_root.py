#!/usr/bin/env python3
"""The block's root as codellm-handler(8) lists it ("What a block sees"),
against a live block's, and the page's /etc patterns against the
handler's own (sandbox/etc.c, etc_keep): the documentation of what a
block sees cannot drift from what it sees."""
import base64
import fnmatch
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
PAGE = os.path.join(TOP, "man", "codellm-handler.8")
ETC_C = os.path.join(TOP, "sandbox", "etc.c")


def page_lists():
    """{"/": [...], "/dev": [...], "/etc": [...], "/etc?": [...]} from the
    literal display of "What a block sees"."""
    text = open(PAGE, encoding="utf-8").read()
    sec = text.split(".Ss What a block sees\n", 1)[1]
    lit = sec.split(".Bd -literal -offset indent\n", 1)[1].split("\n.Ed\n", 1)[0]
    out, key = {}, None
    for ln in lit.split("\n"):
        m = re.match(r"^(/\S*)\s+(.*)$", ln)
        if m:
            key = m.group(1)
            out[key] = m.group(2).split()
        elif key and ln.strip():
            out[key] += ln.split()
    return out


def etc_keep():
    """The patterns of sandbox/etc.c's etc_keep[], in order."""
    src = open(ETC_C, encoding="utf-8").read()
    body = src.split("static const char *const etc_keep[] = {", 1)[1].split("};", 1)[0]
    return re.findall(r'"([^"]*)"', body)


doc = page_lists()
t.ok(set(doc) == {"/", "/dev", "/etc", "/etc?"},
     "the page's list has the lines /, /dev, /etc and /etc?", sorted(doc))
t.eq(doc.get("/etc?"), etc_keep(),
     "the page's /etc? patterns are sandbox/etc.c's etc_keep, in its order")

LIST = ("import json, os\n"
        "print(json.dumps({d: sorted(os.listdir(d)) for d in ('/', '/dev', '/etc')}))")


def split(names):
    """(always there, there where the host has it) of a page line."""
    return ({n for n in names if not n.endswith("?")}, {n[:-1] for n in names if n.endswith("?")})


def host_has(path):
    return os.path.lexists(path)


for net, args in (("own", ()), ("--sandbox-network", ("--sandbox-network",))):
    with Server(*args) as s:
        r = s.run(block("python", LIST))
    try:
        live = json.loads(content(r))
    except (TypeError, ValueError):
        live = {}
    t.ok(set(live) == {"/", "/dev", "/etc"}, "[%s] a block lists its /, /dev and /etc" % net,
         repr(r)[:600])
    for d in ("/", "/dev"):
        always, maybe = split(doc.get(d, []))
        want = always | {n for n in maybe if host_has(os.path.join(d, n))}
        t.eq(set(live.get(d, [])), want,
             "[%s] %s holds exactly the page's entries (the marked ones where the host has them)"
             % (net, d))
    written = set(doc.get("/etc", []))
    pats = doc.get("/etc?", [])
    hosts = {n for n in os.listdir("/etc") if any(fnmatch.fnmatchcase(n, p) for p in pats)}
    if net != "own":
        hosts |= {"resolv.conf"} & set(os.listdir("/etc"))
    t.eq(set(live.get("/etc", [])), written | hosts,
         "[%s] /etc holds the written files and the host's entries the patterns name (%d of them)"
         % (net, len(hosts)))
# ---- the slot's kept /etc -------------------------------------------------------
# A run checks its slot's kept /etc (a directory in the runtime directory
# with an index) and uses it as it is while nothing changed: the copy a
# block sees is the host's file, the same inode run after run; a copy
# changed from outside makes the next run make it again.
name = next((n for n in ("services", "protocols", "shells", "debian_version")
             if os.path.isfile("/etc/" + n) and not os.path.islink("/etc/" + n)
             and os.stat("/etc/" + n).st_mode & 0o004), None)
if name is None:
    t.ok(True, "# SKIP the host has none of the regular files this test copies")
else:
    code = ("import base64, os\n"
            "st = os.lstat('/etc/%s')\n"
            "print(oct(st.st_mode & 0o7777), open('/etc/%s', 'rb').read() == base64.b64decode(%r))"
            % (name, name, base64.b64encode(open("/etc/" + name, "rb").read()).decode()))

    def copy_stat(s):
        try:
            st = os.lstat(os.path.join(s.slots, "etc.0.host", name))
            return (st.st_ino, st.st_ctime_ns, oct(st.st_mode & 0o7777))
        except OSError:
            return None

    with Server() as s:
        runs = [content(s.run(block("python", code))) or ""]
        first = copy_stat(s)
        runs.append(content(s.run(block("python", code))) or "")
        second = copy_stat(s)
        has_index = os.path.exists(os.path.join(s.slots, "etc.0.host.index"))
        try:
            os.chmod(os.path.join(s.slots, "etc.0.host", name), 0o644)
        except OSError:
            pass
        runs.append(content(s.run(block("python", code))) or "")
        third = copy_stat(s)
    t.ok(runs == ["0o444 True\n"] * 3,
         "/etc/%s in a block is a read-only copy of the host's file, run after run" % name, runs)
    t.ok(has_index and first is not None and first == second,
         "the second run uses the slot's kept /etc as it is (its index there, the copy untouched)",
         (has_index, first, second))
    t.ok(third is not None and third[2] == "0o444" and third[1] != second[1],
         "a copy changed from outside: the next run makes the kept /etc again", (second, third))
t.done()
