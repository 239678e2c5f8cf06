#!/usr/bin/env python3
"""The walk of /work/out (issue 35; codellm.7 "Artifacts out"), through
the real handler in the native sandbox:

- its memory: a block that fills out/ with 65,000 empty files under
  deep, long-named directories costs the handler a few MiB, not a
  strdup'd path per entry (once ~250 MB): the walk keeps only the 1,024
  names it lists, and the listing is still the first 1,024 in name
  order (bytewise) with files_truncated counting the rest;
- nothing vanishes without a word: a directory deeper than 16 below
  out/ is listed itself ("deeper than 16 directories"), a file whose
  path is longer than PATH_MAX is listed under its whole name ("path
  longer than PATH_MAX"), an empty directory past the depth is not;
- a name that is not valid UTF-8 keeps its exact bytes in name_base64
  (its "name" is the lossy text, the same for a\\xff and a\\xfe), and its
  data is omitted ("name is not valid UTF-8").
The files in and out of a run are in test_files.py; symlinks, FIFOs and
hard links in out/ in the escape battery, class 7."""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
RSS_BOUND_KIB = 64 * 1024


def files_list(r):
    return field(r, "codellm", "files") or []


def raw_name(f):
    """The exact bytes of an entry's name: name_base64 when there is one."""
    return base64.b64decode(f["name_base64"]) if "name_base64" in f else f["name"].encode()


# ---- 1. the walk's memory: 65,000 files under deep long-named directories ----
L = "L" * 245
FILL = ("set -e\nL=%s\nmkdir out\ncd out\n"
        "for k in $(seq -w 1 12); do\n"
        "  mkdir z$k$L; cd z$k$L\n"
        "  seq -f \"g$k-%%02.0f\" 0 49 | xargs touch\n"
        "done\n"
        "mkdir z13$L; cd z13$L\n"
        "seq -f 'g%%05.0f' 0 64399 | xargs touch\n"
        "echo made\n") % L
names, pre = [], "out"
for k in range(1, 13):
    pre += "/z%02d%s" % (k, L)
    names += ["%s/g%02d-%02d" % (pre, k, i) for i in range(50)]
pre += "/z13" + L
names += ["%s/g%05d" % (pre, i) for i in range(64400)]
WANT = sorted(names)

with Server("--timeout", "200", "--workdir-inodes", "100000") as s:
    peak, _, r = handler_peak_rss(s, build_request("POST", "/v1/chat/completions", {
        "model": "codellm", "messages": [{"role": "user", "content": block("bash", FILL)}]}),
        timeout=300)
    F = files_list(r)
    t.eq((r.status, content(r)), (200, "made\n"),
         "a block makes 65,000 empty files under 13 directories of 248-byte names", r.body[:600])
    if SANITIZE:
        t.skip("the handler's peak RSS walking them", "sanitizer build: its shadow memory and "
               "the quarantine of freed names count")
    else:
        t.ok(0 < peak < RSS_BOUND_KIB,
             "the handler's peak RSS stays under %d MiB walking them (VmHWM %.1f MiB; 216 MiB "
             "when every path was kept): the walk keeps the 1,024 names it lists, not every "
             "path it sees" % (RSS_BOUND_KIB >> 10, peak / 1024.0))
    t.eq([f["name"] for f in F], WANT[:1024],
         "the listing is the first 1,024 in name order (bytewise): 600 from the 12 upper "
         "directories, then the deepest one's first 424",
         [f["name"][-12:] for f in F[:3] + F[-3:]])
    t.eq(field(r, "codellm", "files_truncated"), len(WANT) - 1024,
         "files_truncated counts the other %d" % (len(WANT) - 1024))
    t.ok(all(f.get("data_b64") == "" for f in F[:16]) and
         all(f.get("omitted") == "over --max-artifacts" for f in F[16:]),
         "the first 16 (--max-artifacts) carry their (empty) data, the others say why not",
         [f for f in F[:17] if f.get("data_b64") != ""][:2])
    t.eq(s.leftovers(), [], "no run directory left")

# ---- 2. too deep, too long: listed, with why -------------------------------------
DEEP = """import os
chain = lambda c, n: '/'.join('%s%d' % (c, i) for i in range(1, n + 1))
os.makedirs('out/' + chain('b', 20))
open('out/' + chain('b', 16) + '/at16.txt', 'w').write('at16')
open('out/' + chain('b', 20) + '/deep.txt', 'w').write('deep')
os.makedirs('out/' + chain('c', 17))
open('out/ok.txt', 'w').write('ok')
os.chdir('out')
for i in range(1, 17):
    d = 'l%02d' % i + 'n' * 252
    os.mkdir(d)
    os.chdir(d)
open('x.txt', 'w').write('long')
print('made')
"""
LONG = "out/" + "/".join("l%02d" % i + "n" * 252 for i in range(1, 17)) + "/x.txt"


def chain(c, n):
    return "/".join("%s%d" % (c, i) for i in range(1, n + 1))


with Server("--timeout", "60") as s:
    r = s.run(block("python", DEEP))
    F = {f["name"]: f for f in files_list(r)}
    short = {n: {k: v for k, v in f.items() if k != "data_b64"} for n, f in F.items() if len(n) < 200}
    t.eq(content(r), "made\n", "a block makes a file 20 directories deep and one whose path is "
         "over 4096 bytes", r.body[:600])
    t.eq(sorted(F), sorted(["out/" + chain("b", 16) + "/at16.txt", "out/" + chain("b", 17),
                            LONG, "out/ok.txt"]),
         "listed: the file 16 directories below out/, the directory 17 below (not read), the "
         "over-long path under its whole name, ok.txt; not the empty directory 17 below", short)
    b17 = F.get("out/" + chain("b", 17)) or {}
    t.ok(b17.get("omitted") == "deeper than 16 directories" and b17.get("bytes") == 0
         and "data_b64" not in b17,
         "the directory past the depth says so: omitted \"deeper than 16 directories\"", b17)
    lg = F.get(LONG) or {}
    t.ok(len(LONG) - 4 > 4096 and lg.get("omitted") == "path longer than PATH_MAX"
         and lg.get("bytes") == 4 and "data_b64" not in lg,
         "the %d-byte path is listed whole, omitted \"path longer than PATH_MAX\", with its "
         "size" % (len(LONG) - 4), {k: v for k, v in lg.items() if k != "name"})
    t.ok(base64.b64decode((F.get("out/" + chain("b", 16) + "/at16.txt") or {}).get("data_b64", "")) == b"at16"
         and base64.b64decode((F.get("out/ok.txt") or {}).get("data_b64", "")) == b"ok",
         "the files within bounds carry their data as before")
    t.eq(field(r, "codellm", "files_truncated"), None, "nothing only counted")

# ---- 3. names that are not UTF-8: the exact bytes, no data --------------------------
BAD = r"""import os
os.makedirs(b'out/d\xc0')
open(b'out/a\xff', 'wb').write(b'ff')
open(b'out/a\xfe', 'wb').write(b'fe')
open(b'out/d\xc0/f.txt', 'wb').write(b'in d')
open('out/caf\u00e9.txt', 'w').write('ok')
print('made')
"""
with Server("--timeout", "60") as s:
    r = s.run(block("python", BAD))
    F = files_list(r)
    t.eq(content(r), "made\n", "a block makes out/a\\xff, out/a\\xfe, out/d\\xc0/f.txt and "
         "out/caf\u00e9.txt", r.body[:600])
    t.eq([raw_name(f) for f in F], [b"out/a\xfe", b"out/a\xff", b"out/caf\xc3\xa9.txt", b"out/d\xc0/f.txt"],
         "name_base64 tells the names apart byte for byte, in name order (bytewise)", F)
    t.eq([f["name"] for f in F], ["out/a\ufffd", "out/a\ufffd", "out/caf\u00e9.txt", "out/d\ufffd/f.txt"],
         "\"name\" stays the lossy text (the same for both), for display")
    bad = [F[i] for i in (0, 1, 3)] if len(F) == 4 else []
    t.ok(bad and all(f.get("omitted") == "name is not valid UTF-8" and "data_b64" not in f
                     and "sha256" not in f for f in bad)
         and [f.get("bytes") for f in bad] == [2, 2, 4],
         "their data is omitted (\"name is not valid UTF-8\"), with their sizes", bad)
    good = F[2] if len(F) == 4 else {}
    t.ok("name_base64" not in good and base64.b64decode(good.get("data_b64", "")) == b"ok",
         "a valid UTF-8 name has no name_base64 and carries its data", good)

t.done()
