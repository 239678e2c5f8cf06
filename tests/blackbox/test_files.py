#!/usr/bin/env python3
"""Files in, artifacts out, in the same request (issue 16; codellm.7
"FILES"), through the real handler in the native sandbox: file and
image parts written into /work before the first block, /work/out's
regular files back in codellm.files (run mode, streaming, agent mode,
the debug routes), every bad name and every bound; the audit record's
files are in test_audit.py. The run makes nothing in /work (issue 30):
a block that wants artifacts makes out/ itself, and a program that
writes a file named out (`> out`, `gcc -o out`, open("out", "w"))
works as anywhere, with no artifacts.
The supervisor-read tricks (symlinks, FIFOs, hard links in out/) are in
the escape battery, class 7."""
import base64
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()


def b64(data):
    return base64.b64encode(data).decode()


def file_part(name, data, mime="application/octet-stream"):
    return {"type": "file", "file": {"filename": name, "file_data": "data:%s;base64,%s" % (mime, b64(data))}}


def image_part(data, mime="image/png", name=None):
    p = {"type": "image_url", "image_url": {"url": "data:%s;base64,%s" % (mime, b64(data))}}
    if name:
        p["image_url"]["filename"] = name
    return p


def user(code, *parts):
    return {"role": "user", "content": [{"type": "text", "text": code}] + list(parts)}


def files_of(r):
    return {f["name"]: f for f in (field(r, "codellm", "files") or [])}


def files_of_top(r):
    """codellm.files of a debug answer, which has no codellm object."""
    try:
        return {f["name"]: f for f in json.loads(r.body).get("files") or []}
    except (ValueError, AttributeError):
        return {}


def data_of(f):
    return base64.b64decode(f["data_b64"]) if f and "data_b64" in f else None


BIN = bytes(range(256)) * 64 + b"\x00\xff\r\n"          # every byte value
PNG = bytes.fromhex("89504e470d0a1a0a") + os.urandom(300)
COPY = block("python", "import hashlib, os, shutil\n"
             "os.makedirs('out', exist_ok=True)\n"
             "for n in sorted(os.listdir('.')):\n"
             "    if os.path.isfile(n):\n"
             "        shutil.copy(n, 'out/' + n)\n"
             "        print(n, os.path.getsize(n), hashlib.sha256(open(n, 'rb').read()).hexdigest())")

with Server("--timeout", "30", "--max-input-files", "4", "--max-input-file-bytes", "64K",
            "--max-input-bytes", "100K", "--max-artifacts", "3", "--max-artifact-bytes", "40K") as s:
    def chat(*msgs, **extra):
        p = {"model": "codellm", "messages": list(msgs)}
        p.update(extra)
        return s.chat(p)

    # ---- round trip ------------------------------------------------------------
    r = chat(user(COPY, file_part("data.bin", BIN), image_part(PNG), image_part(b"GIF89a", "image/gif"),
                  file_part("caf\u00e9 sales.csv", b"a,b\n1,2\n", "text/csv")))
    lines = (content(r) or "").splitlines()
    want = sorted([("data.bin", BIN), ("image-1.png", PNG), ("image-2.gif", b"GIF89a"),
                   ("caf\u00e9 sales.csv", b"a,b\n1,2\n")])
    t.eq(lines, ["%s %d %s" % (n, len(d), hashlib.sha256(d).hexdigest()) for n, d in want],
         "file and image parts are in /work before the block, byte for byte (sha256), "
         "images named image-N.<ext>", r.body[:800])
    F = files_of(r)
    t.eq(sorted(F), ["out/caf\u00e9 sales.csv", "out/data.bin", "out/image-1.png", "out/image-2.gif"],
         "codellm.files lists out/ in name order (bytewise)")
    ok = [n for n in F if "data_b64" in F[n]]
    t.ok(len(ok) == 3 and F["out/image-2.gif"].get("omitted") == "over --max-artifacts",
         "--max-artifacts 3: three carry data, the fourth is listed with omitted", F)
    t.ok(all(data_of(F[n]) == dict(want)[n[4:]] and F[n]["sha256"] == hashlib.sha256(dict(want)[n[4:]]).hexdigest()
             and F[n]["bytes"] == len(dict(want)[n[4:]]) for n in ok),
         "each artifact comes back byte for byte, with its size and sha256")
    t.eq((F["out/image-1.png"]["mime"], F["out/data.bin"]["mime"], F["out/caf\u00e9 sales.csv"]["mime"]),
         ("image/png", "application/octet-stream", "text/csv"), "mime by extension")
    t.eq(field(r, "choices", 0, "finish_reason"), "stop", "finish_reason is the run's (stop)")

    # the artifacts' total bound: what does not fit is listed, no data
    big = block("python", "import os\nos.makedirs('out', exist_ok=True)\nopen('out/a.bin','wb').write(os.urandom(30000))\n"
                "open('out/b.bin','wb').write(os.urandom(30000))\nopen('out/c.txt','w').write('small')")
    F = files_of(chat(user(big)))
    t.ok("data_b64" in F.get("out/a.bin", {}) and F.get("out/b.bin", {}).get("omitted") == "over --max-artifact-bytes"
         and F["out/b.bin"]["bytes"] == 30000 and "data_b64" in F.get("out/c.txt", {}),
         "--max-artifact-bytes 40K: a.bin fits, b.bin is listed with omitted and its size, c.txt still fits",
         {k: {x: v for x, v in f.items() if x != "data_b64"} for k, f in F.items()})
    r = chat(user(block("bash", "mkdir -p out/d/e && echo deep > out/d/e/f.txt && echo top > out/z")))
    t.eq({n: data_of(f) for n, f in files_of(r).items()}, {"out/d/e/f.txt": b"deep\n", "out/z": b"top\n"},
         "files in subdirectories of out/ come back under their path")
    r = chat(user(block("bash", "echo nothing")))
    t.ok(r.status == 200 and field(r, "codellm", "files") is None,
         "a run that writes nothing to out/: no files member")
    r = chat(user(block("bash", "mkdir -p out; echo made")))
    t.ok(r.status == 200 and content(r) == "made\n" and field(r, "codellm", "files") is None,
         "a run that makes out/ and leaves it empty: no files member", r.body[:600])

    # ---- the run makes nothing in /work: "out" is the program's (issue 30) ----------
    r = chat(user(block("bash", "test -e out; echo $?; ls -A")))
    t.ok(r.status == 200 and content(r) == "1\n" and field(r, "codellm", "files") is None,
         "a run that never makes out/: there is no /work/out during the run (test -e out fails, "
         "/work is empty) and no files member", r.body[:600])
    r = chat(user(block("bash", "nohup sh -c 'echo hup' > out; cat out")))
    t.ok(r.status == 200 and content(r) == "hup\n" and field(r, "codellm", "files") is None,
         "bash: nohup sh -c 'echo hup' > out; cat out answers hup (out is a file: no files member)",
         r.body[:800])
    gcc = ("cat > x.c <<'EOF'\n#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\nEOF\n"
           "gcc x.c -o out && ./out && test -f out && test -x out && echo file")
    r = chat(user(block("bash", gcc)))
    t.ok(r.status == 200 and content(r) == "built\nfile\n" and field(r, "codellm", "files") is None,
         "gcc x.c -o out builds a program named out in /work and ./out runs it (no files member)",
         r.body[:1500])
    r = chat(user(block("python", "import os\nwith open('out', 'w') as f:\n    f.write('py\\n')\n"
                                  "print(open('out').read(), end='')\nprint(os.path.isfile('out'))")))
    t.ok(r.status == 200 and content(r) == "py\nTrue\n" and field(r, "codellm", "files") is None,
         "python: open('out', 'w') writes a file named out and reads it back (no files member)",
         r.body[:800])
    r = chat(user(block("bash", "ln -s /etc out; readlink out")))
    t.ok(r.status == 200 and content(r) == "/etc\n" and field(r, "codellm", "files") is None,
         "ln -s /etc out: out is the block's symlink, nothing is read through it, the answer "
         "arrives with no files member", r.body[:800])
    r = chat(user(block("bash", "test -f out && test ! -d out && cat out"), file_part("out", b"in a file named out\n")))
    t.ok(r.status == 200 and content(r) == "in a file named out\n" and field(r, "codellm", "files") is None,
         "an input file named \"out\" is accepted: a regular file in /work the block reads; "
         "no artifacts", r.body[:800])

    # ---- a three-block pipeline ------------------------------------------------------
    pipe = (block("bash", "cat data.txt; test -e out; echo $?") +
            block("python", "import os, sys\nd = sys.stdin.read()\nprint(d.upper(), end='')\n"
                  "os.makedirs('out', exist_ok=True)\nopen('out/mid.txt','w').write(d)") +
            block("bash", "cat; ls out; cat data.txt"))
    r = chat(user(pipe, file_part("data.txt", b"shared\n")))
    F = files_of(r)
    t.eq((content(r), sorted(F), data_of(F.get("out/mid.txt"))),
         ("SHARED\n1\nmid.txt\nshared\n", ["out/mid.txt"], b"shared\n1\n"),
         "a three-block pipeline: every block sees the file, out/ does not exist until the middle "
         "block makes it, the last block sees it, and the middle block's artifact comes back though "
         "the last block writes nothing")

    # ---- streaming and agent mode -------------------------------------------------
    r = chat(user(block("python", "import os\nos.makedirs('out', exist_ok=True)\nopen('out/s.txt','w').write(open('in.txt').read() * 2)\nprint('streamed')"),
                  file_part("in.txt", b"ab")), stream=True)
    ev = [json.loads(e[6:]) for e in r.body.decode().split("\n\n") if e.startswith("data: {")]
    carriers = [e for e in ev if (e.get("codellm") or {}).get("files")]
    t.ok(r.body.decode().rstrip().endswith("data: [DONE]") and len(carriers) == 1
         and carriers[0] is ev[-1] and data_of(carriers[0]["codellm"]["files"][0]) == b"abab"
         and "".join((e["choices"][0]["delta"].get("content") or "") for e in ev if e.get("choices")) == "streamed\n",
         "stream: the final event before [DONE] carries codellm.files", r.body[-600:])
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
             for n in ("write_note", "patch_note", "finish")]
    agent = block("python", "import json, os\nos.makedirs('out', exist_ok=True)\nopen('out/report.md','w').write('# r\\n')\n"
                  "print(json.dumps({'changes':[{'path':'n.md','content':open('in.txt').read()}],'answer':'ok'}))")
    r = chat(user(agent, file_part("in.txt", b"from the file")), tools=tools)
    calls = field(r, "choices", 0, "message", "tool_calls") or []
    t.ok([c["function"]["name"] for c in calls] == ["write_note", "finish"]
         and json.loads(calls[0]["function"]["arguments"])["content"] == "from the file"
         and data_of(files_of(r).get("out/report.md")) == b"# r\n",
         "agent mode: the tool calls unchanged, the artifacts in codellm.files beside them", r.body[:800])


    # ---- bad names and bounds ----------------------------------------------------------
    def refused(parts, status, code, needle, desc):
        r = chat(user(block("bash", "mkdir -p out; touch out/ran"), *parts))
        e = r.error() or {}
        t.ok(r.status == status and e.get("code") == code and needle in (e.get("message") or "")
             and field(r, "codellm") is None,
             "%s → %d %s (%r), nothing ran" % (desc, status, code, needle), r.body[:500])

    for name, why in (("a/b.txt", "holds a '/'"), ("../x", "starts with a dot"), ("x/../y", "holds a '/'"), ("..", "starts with a dot"),
                      (".hidden", "starts with a dot"), ("", "is empty"), ("tab\there", "control byte"),
                      ("nl\n", "control byte"), ("fleet_input.json", "bag"),
                      ("x" * 256, "longer than 255")):
        refused([file_part(name, b"x")], 400, "invalid_file_name", why, "file name %r" % name[:20])
    refused([file_part("same.txt", b"1"), file_part("same.txt", b"2")], 400, "invalid_file_name",
            "already taken", "two parts with one name")
    refused([image_part(b"1"), file_part("image-1.png", b"2")], 400, "invalid_file_name",
            "already taken", "a file named as an unnamed image before it")
    refused([{"type": "file", "file": {"file_id": "file-abc"}}], 400, "invalid_file",
            "holds no files and fetches nothing", "a file_id reference")
    refused([{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}], 400, "invalid_file",
            "fetches nothing", "a remote image URL")
    refused([{"type": "file", "file": {"filename": "a", "file_data": "data:text/plain,hello"}}], 400,
            "invalid_file", "base64 data URL", "a data URL that is not base64")
    refused([{"type": "file", "file": {"filename": "a", "file_data": "data:;base64,@@@@"}}], 400,
            "invalid_file", "not valid base64", "bytes outside base64")
    refused([{"type": "file", "file": {"file_data": "data:;base64,eA=="}}], 400, "invalid_file",
            "needs file.filename", "a file part without a filename")
    refused([file_part("big.bin", b"x" * (64 * 1024 + 1))], 413, "file_too_large",
            "--max-input-file-bytes", "a file one byte over --max-input-file-bytes")
    refused([file_part("f%d" % i, b"x" * 40000) for i in range(3)], 413, "file_too_large",
            "--max-input-bytes", "three files over --max-input-bytes together")
    refused([file_part("f%d" % i, b"x") for i in range(5)], 413, "too_many_files",
            "--max-input-files", "five files over --max-input-files 4")
    r = s.chat({"model": "codellm", "messages": [
        {"role": "system", "content": [{"type": "text", "text": COPY}, file_part("a", b"x")]}]})
    t.ok(r.status == 400 and "user messages only" in ((r.error() or {}).get("message") or ""),
         "a file part in a system message → 400 (user messages only)", r.body[:400])
    t.eq(s.leftovers(), [], "no run directory left")

# ---- the debug routes: the same parts as "files", the artifacts in the result
with Server("--timeout", "30", "--debug") as s:
    md = (block("bash", "mkdir -p out; wc -c < in.bin > out/count.txt; cat in.bin") +
          block("python", "import os, sys\nos.makedirs('out', exist_ok=True)\nopen('out/last.bin','wb').write(sys.stdin.buffer.read()[::-1])"))
    body = {"body": md, "files": [file_part("in.bin", BIN)]}
    rb = s.request("POST", "/debug/run-block", dict(body, block=0))
    rp = s.request("POST", "/debug/run-pipeline", body)
    t.eq({n: data_of(f) for n, f in files_of_top(rb).items()}, {"out/count.txt": b"%d\n" % len(BIN)},
         "/debug/run-block takes \"files\" and returns the block's artifacts", rb.body[:400])
    t.eq({n: data_of(f) for n, f in files_of_top(rp).items()},
         {"out/count.txt": b"%d\n" % len(BIN), "out/last.bin": BIN[::-1]},
         "/debug/run-pipeline the same, for the whole pipeline", rp.body[:400])
    bad = s.request("POST", "/debug/run-pipeline", dict(body, files=[file_part("../x", b"1")]))
    t.eq((bad.status, (bad.error() or {}).get("code")), (400, "invalid_file_name"),
         "… with the same checks (a bad name is a 400)")

t.done()
