#!/usr/bin/python3
"""Golden request/response pairs through the real codellm-handler
(skarnet / OpenBSD regress style): tests/golden/NAME.req is sent as is
to a fresh server, the answer is normalised and compared with
tests/golden/NAME.res. tests/golden/README says how the files are
written. CODELLM_GOLDEN_UPDATE=1 rewrites the .res files from what the
handler answers now (review the diff before keeping it).
"""
import difflib
import os
import re
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

GOLDEN = os.path.join(TOP, "tests", "golden")
UPDATE = os.environ.get("CODELLM_GOLDEN_UPDATE") == "1"

# Response headers a golden file shows; every other one (Date, Server)
# is left out.
SHOWN = ("content-type", "connection", "allow", "www-authenticate",
         "x-should-retry", "retry-after", "x-request-id", "content-length")
REQUEST_ID = re.compile(r"chatcmpl-[0-9a-f]{24}\Z")


def load_request(name):
    """The bytes NAME.req (or NAME.raw.req) stands for."""
    raw_path = os.path.join(GOLDEN, name + ".raw.req")
    if os.path.exists(raw_path):
        with open(raw_path, "rb") as f:
            data = f.read()
    else:
        with open(os.path.join(GOLDEN, name + ".req"), "rb") as f:
            data = f.read().replace(b"\n", b"\r\n")
    data = data.replace(b"@KEY@", KEY.encode())
    if b"@LEN@" in data:
        head, sep, body = data.partition(b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n")
        data = head.replace(b"@LEN@", str(len(body)).encode()) + sep + body
    return data


def load_args(name):
    """NAME.args: shell words for the handler; @no-key and @inetd are
    directives for the harness's Server instead."""
    path = os.path.join(GOLDEN, name + ".args")
    args, kw = [], {}
    if os.path.exists(path):
        with open(path) as f:
            for word in shlex.split(f.read(), comments=True):
                if word == "@no-key":
                    kw["key"] = False
                elif word == "@inetd":
                    kw["inetd"] = True
                else:
                    args.append(word)
    return args, kw


def normalise(raw):
    """The text a .res file holds for the bytes the server sent."""
    out = []
    rest = raw
    while True:
        head, sep, after = rest.partition(b"\r\n\r\n")
        if not sep:
            if rest:
                out.append("<<unterminated response head: %r>>" % rest[:200])
            elif not out:
                out.append("<<connection closed without a response>>")
            return "\n".join(out) + "\n"
        lines = head.decode("latin-1").split("\r\n")
        out.append(lines[0])
        fields = []
        for ln in lines[1:]:
            k, colon, v = ln.partition(":")
            if not colon:
                out.append("<<malformed header line: %r>>" % ln)
                continue
            fields.append((k.strip(), v.strip()))
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        interim = bool(m) and 100 <= int(m.group(1)) < 200
        rid = None
        cl = None
        for k, v in fields:
            lk = k.lower()
            if lk not in SHOWN:
                continue
            if lk == "x-request-id":
                if REQUEST_ID.match(v):
                    rid = v
                    v = "<request-id>"
            elif lk == "content-length":
                cl = v
                continue
            out.append("%s: %s" % (k, v))
        if interim:
            rest = after
            continue
        if cl is not None:
            if not cl.isdigit():
                out.append("Content-Length: <INVALID %r>" % cl)
                body, extra = after, b""
            else:
                n = int(cl)
                body, extra = after[:n], after[n:]
                if len(body) == n:
                    out.append("Content-Length: <length of the body>")
                else:
                    out.append("Content-Length: <%d, but the body has %d bytes>" % (n, len(body)))
        else:
            # No length: the body runs to the close (run mode's early
            # headers); it may start with keep-alive whitespace.
            body, extra = after.lstrip(b" "), b""
        text = body.decode("utf-8", "backslashreplace")
        if rid:
            text = text.replace('"%s"' % rid, '"<request-id>"')
        text = re.sub(r'"created":\d+', '"created":<time>', text)
        text = re.sub(r'"duration_ms":\d+', '"duration_ms":<ms>', text)
        # what a run cost is the kernel's accounting, not the contract
        text = re.sub(r'"(cpu_user_ms|cpu_sys_ms|max_rss_kib|memory_peak_kib|oom_kills)":(\d+|null)',
                      r'"\1":<n>', text)
        # how memory is bounded is the host's cgroup setup (issue 32)
        text = re.sub(r'"memory_bound":"[^"]*"', '"memory_bound":<bound>', text)
        text = re.sub(r'"memory":"memory: [^"]*"', '"memory":<memory bound>', text)
        # whether an interpreter is installed is a fact about the host
        text = re.sub(r'"found":(true|false)', '"found":<bool>', text)
        # what the host's kernel offers is a fact of the machine, not of
        # the wire contract
        text = re.sub(r'"(userns|seccomp|cgroup2)":(true|false)', r'"\1":<bool>', text)
        text = re.sub(r'"landlock_abi":\d+', '"landlock_abi":<n>', text)
        text = re.sub(r'"checked_at_ms":\d+', '"checked_at_ms":<ms>', text)
        out.append("")
        out.append(text if text.endswith("\n") else text + "\n\\ No newline at end of body")
        if extra:
            out.append("<<%d bytes after the response: %r>>" % (len(extra), extra[:300]))
        return "\n".join(out) + "\n"


def main():
    t = Tap()
    names = sorted({f[:-len(".raw.req")] if f.endswith(".raw.req") else f[:-len(".req")]
                    for f in os.listdir(GOLDEN) if f.endswith(".req")})
    signalled = []
    left = []
    for name in names:
        args, kw = load_args(name)
        req = load_request(name)
        with Server(*args, **kw) as s:
            t0 = time.time()
            # 30 s of silence ends the read: far beyond the 1 s deadlines
            # of the 408 scenarios and any answer on a loaded machine
            got = normalise(raw(s.port, req, timeout=30))
            took = time.time() - t0
            left += ["%s: %s" % (name, d) for d in s.leftovers(wait=30)]
            log = s.log_text()
            if "died with signal" in log or "dumped core" in log:
                signalled.append(name)
        res_path = os.path.join(GOLDEN, name + ".res")
        if UPDATE:
            with open(res_path, "w") as f:
                f.write(got)
        try:
            with open(res_path) as f:
                want = f.read()
        except OSError:
            want = "<<no %s.res>>\n" % name
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            name + ".res", name + " (handler)"))
        t.ok(got == want, "golden %s (%.1f s)" % (name, took), diff)
    t.ok(len(names) >= 15, "at least 15 golden scenarios (%d)" % len(names))
    t.eq(left, [], "no golden scenario leaves a run directory behind")
    t.eq(signalled, [], "no handler died with a signal in any golden scenario")
    t.done()


if __name__ == "__main__":
    main()
