#!/usr/bin/env python3
"""Names a client chooses (issue 35), through the real handler.

Keys: a JSON object that gives a key twice, at any depth, keys compared
as they read once unescaped ("a" and "\\u0061" are one key), is refused
by the shared pre-check (json/precheck.c) on every route that reads a
client's JSON: a chat completion, a Responses request, a debug route's
body: 400 invalid_request_error "invalid_json", the message naming the
key and the byte of its repeat; nothing runs. (MCP answers the same
body with JSON-RPC -32600: tests/blackbox/test_mcp.py.) The same key in
two objects is fine.

File names: a file a request sends lands in the run's working directory
under its name, so a name may hold no character that changes how it
shows: a C1 control (U+0080-U+009F), a line or paragraph separator
(U+2028, U+2029), a bidirectional formatting control (U+061C, U+200E,
U+200F, U+202A-U+202E, U+2066-U+2069). Each is a 400
"invalid_file_name" naming the code point and the part, the name itself
not echoed; nothing runs. Ordinary non-ASCII names still land whole."""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()


def refused(r, desc, code, *contains, absent=()):
    """400, an OpenAI error object of type invalid_request_error with
    `code`, the message holding each of `contains` and none of
    `absent`, and nothing of a run in the body."""
    e = r.error() or {}
    msg = e.get("message") or ""
    j = r.json if isinstance(r.json, dict) else {}
    ok = (r.status == 400 and e.get("type") == "invalid_request_error" and
          e.get("code") == code and set(j) == {"error"} and
          all(c in msg for c in contains) and not any(a in msg for a in absent))
    return t.ok(ok, desc, "status %s body %r" % (r.status, r.body[:600]))


def file_part(name, data=b"x"):
    return {"type": "file", "file": {"filename": name,
                                     "file_data": "data:text/plain;base64," +
                                     base64.b64encode(data).decode()}}


LIST = block("python", "import json, os\nprint(json.dumps(sorted(os.listdir('.'))))")

with Server("--timeout", "30", "--debug") as s:
    # ---- a key given twice -------------------------------------------------------------
    body = (b'{"model":"python","messages":[{"role":"user","content":"print(1)"}],'
            b'"model":"bash"}')
    at = body.rindex(b'"model"')
    r = s.request("POST", "/v1/chat/completions", body)
    refused(r, "chat: \"model\" twice → 400 invalid_json naming it and byte %d" % at,
            "invalid_json", 'holds the key "model" twice in one object', "(byte %d;" % at)
    t.ok(b'"choices"' not in r.body, "... nothing ran")

    body = (b'{"model":"python","messages":[{"role":"user","content":"print(1)",'
            b'"r\\u006fle":"system"}]}')
    at = body.index(b'"r\\u006f')
    r = s.request("POST", "/v1/chat/completions", body)
    refused(r, "chat: \"role\" and \"r\\u006fle\" in one message → 400 at byte %d" % at,
            "invalid_json", 'the key "role" twice', "(byte %d;" % at)

    body = (b'{"model":"python","messages":[{"role":"user","content":"print(1)"},'
            b'{"role":"user","content":"print(2)"}]}')
    r = s.request("POST", "/v1/chat/completions", body)
    t.eq((r.status, content(r)), (200, "2\n"), "chat: the same key in different objects runs", r)

    body = b'{"model":"python","input":"print(1)","input":"print(2)"}'
    at = body.rindex(b'"input"')
    r = s.request("POST", "/v1/responses", body)
    refused(r, "Responses: \"input\" twice → 400 invalid_json at byte %d" % at,
            "invalid_json", 'the key "input" twice', "(byte %d;" % at)

    body = b'{"body":"```python\\nprint(1)\\n```","body":""}'
    at = body.rindex(b'"body"')
    r = s.request("POST", "/debug/blocks", body, key=None)
    refused(r, "debug: \"body\" twice → 400 invalid_json at byte %d" % at,
            "invalid_json", 'the key "body" twice', "(byte %d;" % at)

    # ---- file names ------------------------------------------------------------------------
    bad = [(0x80, "C1 control"), (0x85, "C1 control"), (0x9B, "C1 control"),
           (0x9F, "C1 control"), (0x2028, "line or paragraph separator"),
           (0x2029, "line or paragraph separator")]
    bad += [(cp, "bidirectional formatting control")
            for cp in (0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
                       0x2066, 0x2067, 0x2068, 0x2069)]
    for cp, what in bad:
        r = s.run([{"type": "text", "text": LIST}, file_part("report%stxt.exe" % chr(cp))],
                  model="codellm")
        refused(r, "file name holding U+%04X (%s) → 400 invalid_file_name" % (cp, what),
                "invalid_file_name", "messages[0].content[1]", "U+%04X" % cp, what,
                absent=(chr(cp),))

    good = ["r\u00e9sum\u00e9.txt", "\u6570\u636e.csv", "\u05e2\u05d1\u05e8\u05d9\u05ea.txt",
            "\u0627\u0644\u0628\u064a\u0627\u0646\u0627\u062a.csv", "emoji\U0001F600.txt",
            "nbsp\u00a0and\u00ff.txt"]
    r = s.run([{"type": "text", "text": LIST}] + [file_part(n, n.encode()) for n in good],
              model="codellm")
    try:
        listed = json.loads(content(r) or "")
    except ValueError:
        listed = None
    t.ok(r.status == 200 and isinstance(listed, list) and all(n in listed for n in good),
         "ordinary non-ASCII names (r\u00e9sum\u00e9.txt, \u6570\u636e.csv, Hebrew, Arabic, "
         "an emoji, U+00A0, U+00FF) land in the workdir whole", r.body[:600])
    t.eq(s.leftovers(), [], "no run directory left behind")

t.done()
