#!/usr/bin/env python3
"""The block's root as codellm-handler(8) lists it ("What a block sees"),
against a live block's, and the page's /etc patterns against the
handler's own (sandbox/root.c, etc_keep): the documentation of what a
block sees cannot drift from what it sees."""
import fnmatch
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
PAGE = os.path.join(TOP, "man", "codellm-handler.8")
ROOT_C = os.path.join(TOP, "sandbox", "root.c")


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
    """The patterns of sandbox/root.c's etc_keep[], in order."""
    src = open(ROOT_C, encoding="utf-8").read()
    body = src.split("static const char *const etc_keep[] = {", 1)[1].split("};", 1)[0]
    return re.findall(r'"([^"]*)"', body)


doc = page_lists()
t.ok(set(doc) == {"/", "/dev", "/etc", "/etc?"},
     "the page's list has the lines /, /dev, /etc and /etc?", sorted(doc))
t.eq(doc.get("/etc?"), etc_keep(),
     "the page's /etc? patterns are sandbox/root.c's etc_keep, in its order")

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
t.done()
