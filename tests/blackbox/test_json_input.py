#!/usr/bin/env python3
"""Every JSON the handler reads passes one check (json/precheck.c) before
cJSON sees it: a malformed escape, a raw control byte in a string, a lone
surrogate, NUL or invalid UTF-8 is a 400 that names the problem and its
byte, and nothing runs.

The case that made the check shared: cJSON 1.7.15 reads \\u with non-hex
digits as U+0000 and ends the string there, so "print(1)\\uZZZZprint(2)"
ran print(1) and silently dropped the rest. Blocks that would leave a
marker file on the host run on a --sandbox off server (harmless code; the
rule under test is the same in every mode).

Running out of memory while reading a request is 503 server_error
"server_overloaded", never a 4xx: the request may be fine.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
marks = tempfile.mkdtemp(prefix="codellm-json-marks-")
os.chmod(marks, 0o777)


def post(s, path, body, key=KEY):
    """body: the exact bytes of the JSON text."""
    return s.request("POST", path, body, key=key)


def refused(r, desc, *contains):
    """400, an OpenAI error object of type invalid_request_error, code
    invalid_json, the message holding each of `contains`, and no answer
    of a run in the body."""
    e = r.error() or {}
    j = r.json if isinstance(r.json, dict) else {}
    ok = (r.status == 400 and e.get("type") == "invalid_request_error" and
          e.get("code") == "invalid_json" and "param" in e and
          isinstance(e.get("message"), str) and set(j) == {"error"} and
          all(c in e.get("message", "") for c in contains))
    return t.ok(ok, desc, "status %s body %r" % (r.status, r.body[:600]))


def chat_body(content, model="python"):
    """A chat request whose one user message's content is `content`, a
    JSON string's inside as written (escapes and all)."""
    return ('{"model":"%s","messages":[{"role":"user","content":"%s"}]}'
            % (model, content)).encode()


with Server("--timeout", "30") as s, Server("--timeout", "30", sandbox="off") as m:
    # ---- the case of the issue ---------------------------------------------------------
    body = chat_body("```python\\nprint(1)\\uZZZZprint(2)\\n```")
    assert b"\\uZZZZ" in body
    at = body.index(b"\\uZZZZ")
    r = post(s, "/v1/chat/completions", body)
    refused(r, "print(1)\\uZZZZprint(2) → 400 invalid_json", "\\uZZZZ", "(byte %d" % at,
            "without four hex digits")
    t.ok(b"1\\n" not in r.body and b'"choices"' not in r.body and b'"codellm"' not in r.body,
         "… nothing ran: no output, no run in the answer", r.body[:400])
    t.eq(s.leftovers(), [], "… and no run directory was made")

    # the same block would leave a marker if any of it ran
    mark = os.path.join(marks, "issue")
    body = chat_body("```python\\nopen(%r, 'w').write('ran')\\uZZZZprint(2)\\n```" % mark)
    r = post(m, "/v1/chat/completions", body)
    refused(r, "a marker-writing block with \\uZZZZ → 400", "\\uZZZZ")
    t.ok(not os.path.exists(mark), "… the marker was not written: nothing ran")

    # the whole-message path (model python, no fence) reads the same text
    mark = os.path.join(marks, "whole")
    r = post(m, "/v1/chat/completions",
             chat_body("open(%r, 'w').write('ran')\\uZZZZprint(2)" % mark))
    refused(r, "a whole message with \\uZZZZ → 400", "\\uZZZZ")
    t.ok(not os.path.exists(mark), "… the whole message did not run either")

    # ---- every kind of malformed string, with its byte -----------------------------------
    cases = [
        ("\\u with three hex digits", "print(1)\\u123", "without four hex digits"),
        ("an unknown escape \\x", "print(1)\\x41", "unknown escape \\x"),
        ("JavaScript's \\'", "print(1)\\'", "unknown escape \\'"),
        ("\\u0000", "print(1)\\u0000print(2)", "NUL (\\u0000)"),
        ("a lone high surrogate", "print(1)\\ud83d", "high surrogate \\ud83d without its low half"),
        ("a lone low surrogate", "print(1)\\ude00", "low surrogate \\ude00 without its high half"),
        ("a high surrogate then \\u0041", "print(1)\\ud83d\\u0041", "high surrogate"),
        ("a raw newline in a string", "print(1)\nprint(2)", "raw control byte 0x0a"),
        ("a raw tab in a string", "print(1)\tprint(2)", "raw control byte 0x09"),
    ]
    for desc, piece, says in cases:
        body = chat_body("```python\\n%s\\n```" % piece)
        at = body.index(piece.encode()) + len("print(1)")
        r = post(s, "/v1/chat/completions", body)
        refused(r, "%s → 400 naming the problem at byte %d" % (desc, at), says, "(byte %d" % at)

    r = post(s, "/v1/chat/completions", chat_body("```python\\nprint(1)\\") + b'"')
    refused(r, "a body that ends inside an escape → 400")
    r = post(s, "/v1/chat/completions",
             chat_body("```python\\nprint(1)@\\n```").replace(b"@", b"\xff"))
    refused(r, "invalid UTF-8 → 400", "not valid UTF-8")

    # ---- valid escapes still decode exactly and run -----------------------------------------
    r = post(s, "/v1/chat/completions",
             chat_body("```python\\nprint(r\\u0027\\u00e9\\ud83d\\ude00\\u20ac\\\\uZZZZ\\u0027)\\n```"))
    t.eq((r.status, content(r)), (200, "\u00e9\U0001F600\u20ac\\uZZZZ\n"),
         "\\u0027, \\u00e9, a surrogate pair, \\u20ac and an escaped backslash run as written")

    # ---- numbers and whitespace: RFC 8259, strictly ------------------------------------------
    base = '{"model":"python","n":%s,"messages":[{"role":"user","content":"print(1)"}]}'
    r = post(s, "/v1/chat/completions", (base % "01").encode())
    refused(r, "a number with a leading zero → 400", "not valid JSON")
    r = post(s, "/v1/chat/completions", (base % "1").encode().replace(b"{", b"\x0b{", 1))
    refused(r, "a vertical tab as whitespace → 400", "not valid JSON (near byte 0)")
    r = post(s, "/v1/chat/completions", (base % "1.0e0").encode())
    t.eq((r.status, content(r)), (200, "1\n"), "n 1.0e0 is a number like any other")

# ---- a debug route's body passes the same check -------------------------------------------
with Server("--debug", "--timeout", "30") as d:
    body = b'{"body":"```python\\nprint(1)\\uZZZZprint(2)\\n```"}'
    r = post(d, "/debug/blocks", body, key=None)
    refused(r, "/debug/blocks with \\uZZZZ → 400 naming byte %d" % body.index(b"\\uZZZZ"),
            "\\uZZZZ", "(byte %d" % body.index(b"\\uZZZZ"))
    r = post(d, "/debug/run-pipeline", body)
    refused(r, "/debug/run-pipeline with \\uZZZZ → 400", "\\uZZZZ")
    t.eq(d.leftovers(), [], "… and no run directory was made")

# ---- out of memory while reading a request is the server's condition --------------------
# The handler under RLIMIT_AS 40 MiB starts and serves small requests; a
# 48 MiB body (--max-request-bytes allows it) cannot be held. (An
# AddressSanitizer build reserves terabytes of shadow: no limit fits it.)
if SANITIZE:
    t.skip("a body the handler cannot hold → 503 server_overloaded", "sanitizer build")
else:
    w = handler_wrapper(["prlimit", "--as=%d" % (40 << 20)])
    with Server("--max-request-bytes", "512M", handler=w) as s:
        body = chat_body("x" * (48 << 20))
        r = post(s, "/v1/chat/completions", body)
        e = r.error() or {}
        t.ok(r.status == 503 and e.get("type") == "server_error" and
             e.get("code") == "server_overloaded" and
             "out of memory reading this request" in (e.get("message") or ""),
             "a body the handler cannot hold → 503 server_error server_overloaded, not 4xx/500",
             "status %s body %r" % (r.status, r.body[:300]))
        t.eq(s.leftovers(), [], "… and no run directory was made")
    remove_wrappers()

shutil.rmtree(marks, ignore_errors=True)
t.done()
