#!/usr/bin/env python3
"""Agent mode (SPEC §4, §6; seed 000 "The wire protocol") through the real
handler, --sandbox native (the default).

A request whose tools declare a function named finish gets the last
block's stdout {"changes":[…],"answer":"…"} back as tool calls: write_note,
patch_note, and always a last finish. Checked here: the mapping and its
order, explicit ops, losslessness byte for byte (json.loads of each
call's arguments), every failure as a 422 execution_error with its code
and the codellm object and no tool call anywhere in the body, the
re-execution guard (nothing runs: process markers and timing), the
seed's request shape verbatim with $FLEET_INPUT, and stream + tools.

Blocks cannot write host files here, so what did or did not run is shown
by processes with a unique command line (`sleep 3.<pid>`) and by time.
"""
import base64
import hashlib
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "agent"))
from harness import *  # noqa: E402,F401,F403
from reference_client import TOOL_SCHEMAS  # noqa: E402

t = Tap()
T_START = time.time()
U = str(os.getpid())
STATUSES = []           # every status this file saw: none may be 5xx

ALL = ("write_note", "patch_note", "finish")


def tools(*names):
    return [TOOL_SCHEMAS[n] if n in TOOL_SCHEMAS else
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in names]


def emit(out, ensure_ascii=True):
    """A python block whose stdout is exactly `out` (bytes, str, or an
    object serialised with json.dumps)."""
    if not isinstance(out, (bytes, str)):
        out = json.dumps(out, ensure_ascii=ensure_ascii)
    if isinstance(out, str):
        out = out.encode("utf-8")
    return block("python", "import sys, base64\nsys.stdout.buffer.write(base64.b64decode('%s'))"
                 % base64.b64encode(out).decode())


def agent(s, code, tool_names=ALL, messages=None, **extra):
    """One agent-mode request: `code` is the user message's markdown."""
    p = {"model": "codellm",
         "messages": messages if messages is not None else [{"role": "user", "content": code}],
         "tools": tools(*tool_names)}
    p.update(extra)
    r = s.chat(p)
    STATUSES.append(r.status)
    return r


def call_id(r, i):
    """The id codellm gives call i of answer r: "call_", the random part
    of the response's id, "_", i (unique across requests)."""
    rid = field(r, "id") or ""
    return "call_%s_%d" % (rid.split("-", 1)[-1], i)


def calls(r):
    v = field(r, "choices", 0, "message", "tool_calls")
    return v if isinstance(v, list) else None


def parsed(r):
    """[(name, json.loads(arguments))] or None."""
    cs = calls(r)
    try:
        return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in cs]
    except Exception:
        return None


def shape_problems(r, n, retry=True):
    """What is wrong with a 200 agent answer of n calls, as a list.
    retry: the answer came after code ran, so x-should-retry: false."""
    bad = []
    if r.status != 200:
        return ["status %s" % r.status]
    ch = field(r, "choices", 0)
    if field(r, "object") != "chat.completion":
        bad.append("object")
    if not isinstance(ch, dict) or ch.get("finish_reason") != "tool_calls":
        bad.append("finish_reason")
    m = field(r, "choices", 0, "message") or {}
    if m.get("role") != "assistant" or m.get("content") != "":
        bad.append("role/content")
    cs = calls(r) or []
    if len(cs) != n:
        bad.append("%d calls, want %d" % (len(cs), n))
    for i, c in enumerate(cs):
        if not isinstance(c, dict) or set(c) != {"id", "type", "function"}:
            bad.append("call %d keys" % i)
            continue
        if c["id"] != call_id(r, i) or c["type"] != "function":
            bad.append("call %d id/type %r/%r" % (i, c["id"], c["type"]))
        f = c["function"]
        if not isinstance(f, dict) or set(f) != {"name", "arguments"} or \
                not isinstance(f.get("arguments"), str):
            bad.append("call %d function" % i)
    if retry and r.header("x-should-retry") != "false":
        bad.append("x-should-retry %r" % r.header("x-should-retry"))
    return bad


def expect_calls(r, want, answer, desc, retry=True):
    """want: [(tool name, arguments dict)]; then finish {"answer": answer}."""
    full = list(want) + [("finish", {"answer": answer})]
    bad = shape_problems(r, len(full), retry)
    got = parsed(r)
    if got != full:
        bad.append("calls differ")
    return t.ok(not bad, desc, "%s\ngot:  %r\nwant: %r\nbody: %r"
                % (bad, got, full, r.body[:1500]))


def expect_error(r, code, desc, contains=(), absent=(), exit_code=None, nblocks=None):
    """A 422 execution_error with `code`, the codellm object beside it,
    x-should-retry: false, and no tool call anywhere in the body."""
    bad = []
    j = r.json if isinstance(r.json, dict) else {}
    e = j.get("error")
    if r.status != 422:
        bad.append("status %s" % r.status)
    if not isinstance(e, dict) or set(e) != {"message", "type", "param", "code"}:
        bad.append("error object %r" % (e,))
        e = {}
    if e.get("type") != "execution_error":
        bad.append("type %r" % e.get("type"))
    if e.get("code") != code:
        bad.append("code %r" % e.get("code"))
    if e.get("param") is not None:
        bad.append("param %r" % e.get("param"))
    msg = e.get("message") or ""
    for c in contains:
        if c not in msg:
            bad.append("message lacks %r" % c)
    for c in absent:
        if c in msg:
            bad.append("message has %r" % c)
    cl = j.get("codellm")
    if not isinstance(cl, dict) or not isinstance(cl.get("exit_code"), int) or \
            not isinstance(cl.get("block_results"), list):
        bad.append("codellm object %r" % (cl,))
        cl = {}
    if exit_code is not None and cl.get("exit_code") != exit_code:
        bad.append("exit_code %r" % cl.get("exit_code"))
    if nblocks is not None and len(cl.get("block_results") or []) != nblocks:
        bad.append("%d block_results" % len(cl.get("block_results") or []))
    if set(j) != {"error", "codellm"}:
        bad.append("top-level keys %r" % sorted(j))
    if b"tool_calls" in r.body or b"call_0" in r.body or b'"function"' in r.body:
        bad.append("a tool call in the body")
    if r.header("x-should-retry") != "false":
        bad.append("x-should-retry %r" % r.header("x-should-retry"))
    return t.ok(not bad, desc, "%s\nbody: %r" % (bad, r.body[:1500]))


def watch(pattern, fn):
    """Run fn() in a thread while polling for processes whose command line
    holds `pattern`. Returns (fn's result, seen?, seconds)."""
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("r", fn()))
    t0 = time.time()
    th.start()
    seen = False
    while th.is_alive():
        if procs_matching(pattern):
            seen = True
        time.sleep(0.01)
    th.join()
    return box.get("r"), seen, time.time() - t0


# Strings every byte of which must survive: beyond the BMP, CR/LF,
# tabs, quotes, backslashes, U+2028/U+2029, C0 controls, DEL, BOM,
# noncharacters, a JSON-escape look-alike.
NASTY = ("\U0001F600\U00010348\U0010FFFD e\u0301 \u00e9 CRLF\r\nLF\nCR\r \ttab\t "
         "\"dq\" 'sq' back\\slash \\\\ \\n \\u0041 /slash\\/ "
         "\u2028LS\u2029PS " + "".join(chr(c) for c in range(1, 32)) + "\x7f "
         "\ufeffBOM \ufffe\uffff \ud7ff\ue000 end")
NASTY_PATH = "notes/\u00fcn\u00efc\u00f8d\u00e9 \U0001F389/a\"b\\c\td \u2028.md"

with Server("--max-stdout-bytes", "1M") as s:
    # ---- the mapping ---------------------------------------------------------
    out = {"changes": [{"path": "concepts/x.md", "content": "# X\n\nbody\n"},
                       {"path": "index.md", "find": "a", "replace": "b"}],
           "answer": "done"}
    r = agent(s, emit(out))
    t.eq(r.status, 200, "write + patch → 200")
    t.eq(field(r, "choices", 0, "finish_reason"), "tool_calls", "finish_reason is tool_calls")
    t.eq(field(r, "choices", 0, "message", "content"), "", "content is \"\" (not null, not absent)")
    t.eq(field(r, "choices", 0, "message", "role"), "assistant", "role assistant")
    t.eq([c.get("id") for c in calls(r) or []], [call_id(r, i) for i in range(3)],
         "ids call_<the response id's random part>_0, _1, _2")
    t.ok(re.fullmatch(r"chatcmpl-[0-9a-f]{24}", field(r, "id") or "") is not None,
         "… the random part is 24 hex digits (%r)" % field(r, "id"))
    again = agent(s, emit(out))
    ids = [c.get("id") for c in (calls(r) or []) + (calls(again) or [])]
    t.ok(len(ids) == 6 and len(set(ids)) == 6,
         "the same request twice: six different call ids (%r)" % ids)
    t.eq([c.get("type") for c in calls(r) or []], ["function"] * 3, "every call is type function")
    t.eq([c.get("function", {}).get("name") for c in calls(r) or []],
         ["write_note", "patch_note", "finish"], "names: write_note, patch_note, finish (last)")
    t.ok(all(isinstance(c.get("function", {}).get("arguments"), str) for c in calls(r) or [None]),
         "arguments are JSON strings, not objects")
    t.eq(parsed(r), [("write_note", {"path": "concepts/x.md", "content": "# X\n\nbody\n"}),
                     ("patch_note", {"path": "index.md", "find": "a", "replace": "b"}),
                     ("finish", {"answer": "done"})],
         "json.loads(arguments) is exactly each change's fields, and finish {answer}")
    t.eq(r.header("x-should-retry"), "false", "x-should-retry: false on the 200")
    t.eq((field(r, "model"), field(r, "usage")),
         ("codellm", {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
         "model echoed, usage all zeros")
    t.eq((field(r, "codellm", "exit_code"), field(r, "codellm", "blocks")), (0, 1),
         "the codellm object rides along (exit_code 0, 1 block)")

    r = agent(s, emit({"changes": [], "answer": "nothing to do"}))
    expect_calls(r, [], "nothing to do", "zero changes → finish alone (…_0)")
    r = agent(s, emit({"answer": "no changes key"}))
    expect_calls(r, [], "no changes key", "\"changes\" absent → finish alone")
    r = agent(s, emit({"changes": [{"path": "a.md", "content": "A"}]}))
    expect_calls(r, [("write_note", {"path": "a.md", "content": "A"})], "",
                 "\"answer\" absent → finish {\"answer\":\"\"} still comes last")
    r = agent(s, emit({"changes": [{"path": "p%d.md" % i, "content": "c%d" % i} if i % 2 == 0 else
                                   {"path": "p%d.md" % i, "find": "f%d" % i, "replace": "r%d" % i}
                                   for i in range(7)], "answer": "seven"}))
    expect_calls(r, [("write_note", {"path": "p%d.md" % i, "content": "c%d" % i}) if i % 2 == 0 else
                     ("patch_note", {"path": "p%d.md" % i, "find": "f%d" % i, "replace": "r%d" % i})
                     for i in range(7)], "seven",
                 "seven alternating changes keep their order; ids …_0…_7")

    # ---- explicit op -----------------------------------------------------------
    r = agent(s, emit({"changes": [{"op": "write", "path": "w.md", "content": "W"}], "answer": ""}))
    expect_calls(r, [("write_note", {"path": "w.md", "content": "W"})], "",
                 "\"op\":\"write\" with content → write_note, op not forwarded")
    r = agent(s, emit({"changes": [{"op": "patch", "path": "p.md", "find": "F", "replace": "R"}]}))
    expect_calls(r, [("patch_note", {"path": "p.md", "find": "F", "replace": "R"})], "",
                 "\"op\":\"patch\" with find/replace → patch_note")
    both = {"path": "b.md", "content": "C", "find": "F", "replace": "R"}
    r = agent(s, emit({"changes": [dict(both, op="write")]}))
    expect_calls(r, [("write_note", {"path": "b.md", "content": "C"})], "",
                 "op write overrides a change that has both: write_note {path, content} only")
    r = agent(s, emit({"changes": [dict(both, op="patch")]}))
    expect_calls(r, [("patch_note", {"path": "b.md", "find": "F", "replace": "R"})], "",
                 "op patch overrides a change that has both: patch_note {path, find, replace} only")
    r = agent(s, emit({"changes": [{"path": "e.md", "content": ""},
                                   {"path": "e.md", "find": "x", "replace": ""}]}))
    expect_calls(r, [("write_note", {"path": "e.md", "content": ""}),
                     ("patch_note", {"path": "e.md", "find": "x", "replace": ""})], "",
                 "an empty content and an empty replace are kept (\"\" is a value)")
    r = agent(s, emit({"changes": [{"path": "x.md", "content": "X", "why": "extra", "n": 1}],
                       "answer": "a", "note": {"ignored": True}}))
    expect_calls(r, [("write_note", {"path": "x.md", "content": "X"})], "a",
                 "fields outside the contract are not forwarded")

    # ---- pipelines and interpreters ------------------------------------------------
    r = agent(s, block("bash", "echo 'not json at all'") +
              block("python", "import sys, json\nw = sys.stdin.read().split()\n"
                    "print(json.dumps({'changes': [{'path': 'w.md', 'content': ' '.join(w)}], 'answer': str(len(w))}))"))
    expect_calls(r, [("write_note", {"path": "w.md", "content": "not json at all"})], "4",
                 "a pipeline: only the LAST block's stdout is the changes")
    r = agent(s, block("bash", "printf '%s\\n' '{\"changes\":[{\"path\":\"sh.md\",\"content\":\"sh\\tok\"}],\"answer\":\"sh\"}'"))
    expect_calls(r, [("write_note", {"path": "sh.md", "content": "sh\tok"})], "sh",
                 "a bash block's printf JSON")
    r = agent(s, block("node", "console.log(JSON.stringify({changes:[{path:'n.md',find:'\\u{1F600}',replace:'\\u2028'}],answer:'node'}))"))
    expect_calls(r, [("patch_note", {"path": "n.md", "find": "\U0001F600", "replace": "\u2028"})], "node",
                 "a node block's JSON.stringify (raw U+2028, raw astral)")
    r = agent(s, emit(b"\r\n \t" + json.dumps({"answer": "ws"}).encode() + b" \r\n\t\n"))
    expect_calls(r, [], "ws", "JSON whitespace around the object is fine")

    # ---- lossless ------------------------------------------------------------------
    lossy = {"changes": [{"path": NASTY_PATH, "content": NASTY},
                         {"path": NASTY_PATH + "2", "find": NASTY[::-1], "replace": NASTY + "\U0001F4A9"}],
             "answer": NASTY}
    want = [("write_note", {"path": NASTY_PATH, "content": NASTY}),
            ("patch_note", {"path": NASTY_PATH + "2", "find": NASTY[::-1], "replace": NASTY + "\U0001F4A9"})]
    r = agent(s, emit(lossy, ensure_ascii=True))
    expect_calls(r, want, NASTY, "lossless, \\u-escaped input (surrogate pairs, \\u2028, \\u0001…)")
    got = parsed(r) or []
    t.ok(len(got) == 3 and got[0][1]["content"].encode("utf-8") == NASTY.encode("utf-8")
         and got[1][1]["find"].encode("utf-8") == NASTY[::-1].encode("utf-8")
         and got[0][1]["path"].encode("utf-8") == NASTY_PATH.encode("utf-8"),
         "… byte for byte (UTF-8 of path, content, find)")
    r = agent(s, emit(lossy, ensure_ascii=False))
    expect_calls(r, want, NASTY, "lossless, raw UTF-8 input (raw astral, raw U+2028/U+2029)")
    t.ok(b"\\\\u0041" in r.body or b"\\\\\\\\u0041" in r.body,
         "a literal backslash-u in the content stays text (not decoded to A)", r.body[:300])
    r = agent(s, emit(b'{"changes":[{"path":"\\/a\\/b","content":"\\u00e9\\u00E9\\ud83d\\ude00\\b\\f"}],"answer":"\\""}'))
    expect_calls(r, [("write_note", {"path": "/a/b", "content": "\u00e9\u00e9\U0001F600\b\f"})], "\"",
                 "every JSON escape form decodes (\\/, upper/lower hex, a pair, \\b \\f)")
    # RFC 8259 lets a parser ignore a leading BOM; cJSON does (fleet's Go
    # parser refused it: a role that failed in-process now works)
    r = agent(s, emit(b'\xef\xbb\xbf{"answer":"bom"}'))
    expect_calls(r, [], "bom", "a UTF-8 BOM before the object is ignored, not part of any string")
    r = agent(s, emit(b'{"changes":[{"path":"a","content":"x\\\\u0000y"}]}'))
    expect_calls(r, [("write_note", {"path": "a", "content": "x\\u0000y"})], "",
                 "\"x\\\\u0000y\" is a backslash and text, not NUL: kept")

    # NUL: refused, never cut
    for where, raw_out in (
            ("content", b'{"changes":[{"path":"a.md","content":"before\\u0000after"}],"answer":"x"}'),
            ("path", b'{"changes":[{"path":"a\\u0000.md","content":"c"}],"answer":"x"}'),
            ("find", b'{"changes":[{"path":"a.md","find":"\\u0000","replace":"r"}],"answer":"x"}'),
            ("answer", b'{"changes":[],"answer":"ok\\u0000tail"}')):
        r = agent(s, emit(raw_out))
        expect_error(r, "invalid_changes", "\\u0000 in %s → 422 invalid_changes (not cut)" % where,
                     contains=("NUL",))
    r = agent(s, emit(b'{"changes":[{"path":"a.md","content":"x\x00y"}],"answer":"x"}'))
    expect_error(r, "invalid_changes", "a raw NUL byte inside a string → 422 invalid_changes",
                 contains=("NUL",))
    r = agent(s, emit(b'{"changes":[],"answer":"x"}\x00'))
    expect_error(r, "invalid_changes", "a raw NUL byte after the object → 422 invalid_changes")
    r = agent(s, emit(b'{"changes":[{"path":"a.md","content":"\\ud800"}]}'))
    expect_error(r, "invalid_changes", "a lone surrogate \\ud800 (cannot be UTF-8) → 422 invalid_changes")

    # ---- invalid_changes -----------------------------------------------------------
    bad_outputs = [
        ("not JSON", b"hello\n"),
        ("empty stdout", b""),
        ("trailing garbage", b'{"changes":[],"answer":"a"} x'),
        ("two objects", b'{"answer":"a"}\n{"answer":"b"}\n'),
        ("an array, not an object", b'[{"path":"a","content":"b"}]'),
        ("a string, not an object", b'"changes"'),
        ("null, not an object", b"null"),
        ("changes is an object", b'{"changes":{"path":"a","content":"b"}}'),
        ("changes is a string", b'{"changes":"a.md"}'),
        ("a change is a string", b'{"changes":["a.md"]}'),
        ("a change without path", b'{"changes":[{"content":"c"}]}'),
        ("an empty path", b'{"changes":[{"path":"","content":"c"}]}'),
        ("a numeric path", b'{"changes":[{"path":7,"content":"c"}]}'),
        ("neither content nor find", b'{"changes":[{"path":"a.md"}]}'),
        ("a numeric content", b'{"changes":[{"path":"a.md","content":1}]}'),
        ("find without replace", b'{"changes":[{"path":"a.md","find":"x"}]}'),
        ("an empty find", b'{"changes":[{"path":"a.md","find":"","replace":"y"}]}'),
        ("content and find, no op", b'{"changes":[{"path":"a.md","content":"c","find":"f","replace":"r"}]}'),
        ("unknown op", b'{"changes":[{"op":"delete","path":"a.md","content":"c"}]}'),
        ("op write without content", b'{"changes":[{"op":"write","path":"a.md","find":"f","replace":"r"}]}'),
        ("answer is a number", b'{"changes":[],"answer":42}'),
        ("answer is an array", b'{"changes":[],"answer":["a"]}'),
        ("invalid UTF-8 (0xff)", b'{"changes":[],"answer":"\xff"}'),
        ("invalid UTF-8 (overlong /)", b'{"changes":[{"path":"a\xc0\xaf","content":"c"}]}'),
        ("invalid UTF-8 (encoded surrogate)", b'{"changes":[{"path":"a","content":"\xed\xa0\x80"}]}'),
        ("\\u with non-hex digits (cJSON reads it as NUL)", b'{"changes":[{"path":"a.md","content":"ab\\u00zzcd"}]}'),
        ("a short \\u escape", b'{"answer":"\\u12"}'),
        ("a raw control byte in a string", b'{"changes":[{"path":"a.md","content":"x\x01y"}]}'),
        ("a key given twice (path)", b'{"changes":[{"path":"a.md","path":"b.md","content":"c"}]}'),
        ("a key given twice (answer)", b'{"answer":"a","answer":"b"}'),
        ("nesting deeper than 64", b'{"answer":"a","x":' + b"[" * 100 + b"]" * 100 + b"}"),
    ]
    for desc, raw_out in bad_outputs:
        r = agent(s, emit(raw_out))
        expect_error(r, "invalid_changes", "%s → 422 invalid_changes" % desc,
                     contains=("block 0",), exit_code=0, nblocks=1)
    r = agent(s, emit({"changes": [{"path": "ok.md", "content": "fine"},
                                   {"path": "ok2.md", "content": "fine"},
                                   {"path": "bad.md", "op": "move"}], "answer": "x"}))
    expect_error(r, "invalid_changes", "two good changes then a bad one → 422, no partial set",
                 contains=("changes[2]",))

    # ---- undeclared_tool -----------------------------------------------------------
    r = agent(s, emit({"changes": [{"path": "a.md", "content": "c"}], "answer": "x"}),
              tool_names=("finish",))
    expect_error(r, "undeclared_tool", "only finish declared, a write → 422 undeclared_tool naming write_note",
                 contains=("write_note",))
    r = agent(s, emit({"changes": [{"path": "a.md", "find": "f", "replace": "r"}], "answer": "x"}),
              tool_names=("finish",))
    expect_error(r, "undeclared_tool", "only finish declared, a patch → 422 naming patch_note",
                 contains=("patch_note",))
    r = agent(s, emit({"changes": [{"path": "a.md", "content": "c"},
                                   {"path": "b.md", "find": "f", "replace": "r"}], "answer": "x"}),
              tool_names=("write_note", "finish"))
    expect_error(r, "undeclared_tool", "write_note+finish declared, write then patch → 422 (the write is not returned)",
                 contains=("patch_note", "changes[1]"))
    r = agent(s, emit({"changes": [{"path": "a.md", "find": "f", "replace": "r"}], "answer": "p"}),
              tool_names=("finish", "patch_note"))
    expect_calls(r, [("patch_note", {"path": "a.md", "find": "f", "replace": "r"})], "p",
                 "patch_note+finish declared (any order), a patch → 200")
    r = agent(s, emit({"changes": [], "answer": "report only"}), tool_names=("finish",))
    expect_calls(r, [], "report only", "only finish declared, zero changes → 200 finish")
    r = agent(s, emit({"changes": [], "answer": "x"}), tool_names=("write_note",))
    t.ok(r.status == 200 and field(r, "choices", 0, "finish_reason") == "stop"
         and content(r) == '{"changes": [], "answer": "x"}' and calls(r) is None,
         "tools without finish → run mode (content is the stdout)", r.body[:400])
    r = agent(s, emit({"changes": [], "answer": "x"}), tool_names=("Finish", "write_note"))
    t.ok(r.status == 200 and calls(r) is None and field(r, "choices", 0, "finish_reason") == "stop",
         "a tool named Finish (other case) is not finish → run mode", r.body[:400])

    long_path = "\u00e9" * 150 + ".md"
    r = agent(s, emit({"changes": [{"path": long_path, "content": "c"}]}), tool_names=("finish",))
    expect_error(r, "undeclared_tool", "a 300-byte non-ASCII path is quoted in the message without breaking it",
                 contains=("\u00e9" * 50, "write_note"))
    t.ok(r.body.decode("utf-8", "strict") is not None and "\ufffd" not in (field(r, "error", "message") or "\ufffd"),
         "… the error body is valid UTF-8 with no replacement character", r.body[:300])

    # ---- block_failed --------------------------------------------------------------
    r = agent(s, block("python", "import sys\nprint('{\"answer\":\"x\"}')\n"
                       "sys.stderr.write('boom-%s\\n')\nsys.exit(3)" % U))
    expect_error(r, "block_failed", "a block exiting 3 → 422 block_failed (even with valid JSON out)",
                 contains=("block 0", "3", "boom-" + U), exit_code=3, nblocks=1)
    r = agent(s, block("bash", "echo one") +
              block("python", "import sys\nsys.stdin.read()\nsys.stderr.write('mid-%s')\nsys.exit(5)" % U) +
              block("python", "import sys, json\nsys.stdin.read()\n"
                    "print(json.dumps({'changes':[{'path':'a.md','content':'c'}],'answer':'x'}))"))
    expect_error(r, "block_failed", "the middle block of three exits 5 → 422 naming block 1 with its stderr",
                 contains=("block 1", "mid-" + U), exit_code=5, nblocks=3)
    t.eq([b.get("exit_code") for b in field(r, "codellm", "block_results") or []], [0, 5, 0],
         "… block_results show which block failed")
    r = agent(s, block("python", "import sys\nsys.stderr.write('HEAD-%s' + '.' * 20000 + 'TAIL-%s')\nsys.exit(1)"
                       % (U, U)))
    expect_error(r, "block_failed", "the message carries the stderr's tail, not its head",
                 contains=("TAIL-" + U,), absent=("HEAD-" + U,))
    r = agent(s, block("bash", "echo '{\"answer\":\"x\"}'; kill -9 $$"))
    expect_error(r, "block_failed", "a block killed by SIGKILL → 422 block_failed, exit 137",
                 contains=("signal 9",), exit_code=137)
    r = agent(s, emit({"changes": [], "answer": "x"}) + block("python", "raise SystemExit(2)"))
    expect_error(r, "block_failed", "the last block exits 2 after a good one → block_failed naming block 1",
                 contains=("block 1",), exit_code=2, nblocks=2)

    # ---- output_limit --------------------------------------------------------------
    r = agent(s, block("python", "import json\nprint(json.dumps({'changes':[{'path':'big.md','content':'x'*1500000}],'answer':'big'}))"))
    expect_error(r, "output_limit", "stdout over --max-stdout-bytes (1M) → 422 output_limit",
                 contains=("max-stdout-bytes",))
    exact = b'{"answer":"' + b"y" * (1048576 - 13) + b'"}'
    r = agent(s, block("python", "import sys\nsys.stdout.write('{\"answer\":\"' + 'y' * %d + '\"}')"
                       % (1048576 - 13)))
    expect_calls(r, [], "y" * (1048576 - 13), "stdout of exactly --max-stdout-bytes is not over it → 200")

    # ---- timeout via the request extension --------------------------------------------
    t0 = time.time()
    r = agent(s, block("bash", "sleep 3%s" % U), codellm={"timeout_s": 1})
    el = time.time() - t0
    expect_error(r, "timeout", "codellm.timeout_s 1 with a sleeping block → 422 timeout",
                 exit_code=124)
    t.ok(field(r, "codellm", "timed_out") is True,
         "… timed_out true (the answer came after %.1f s)" % el)

    # ---- stream + tools: the same calls as tool_calls deltas (test_stream.py has the rest)
    code = emit({"changes": [{"path": "s.md", "content": "streamed \U0001F600"}], "answer": "ok"})
    plain = agent(s, code)
    r = agent(s, code, stream=True)
    events = [e[6:] for e in r.body.decode("utf-8").split("\n\n") if e.startswith("data: ")]
    got = {}
    for e in events[:-1]:
        for ch in (json.loads(e).get("choices") or []):
            for tc in (ch.get("delta") or {}).get("tool_calls") or []:
                slot = got.setdefault(tc["index"], {"name": None, "arguments": ""})
                if "function" in tc and tc["function"].get("name"):
                    slot["name"] = tc["function"]["name"]
                slot["arguments"] += (tc.get("function") or {}).get("arguments", "")
    t.ok(r.status == 200 and events and events[-1] == "[DONE]" and
         [(got[i]["name"], json.loads(got[i]["arguments"])) for i in sorted(got)] == parsed(plain),
         "stream: true with tools → the same tool calls as deltas, then [DONE]", r.body[:400])

    # ---- the re-execution guard ----------------------------------------------------------
    guard_code = ("# Role\n\n" + block("bash", "sleep 3.%s2" % U) +
                  block("python", "import json\nprint(json.dumps({'changes':[{'path':'g.md','content':'again'}],'answer':'ran'}))"))
    mark = "sleep 3.%s2" % U
    first = [{"role": "system", "content": guard_code},
             {"role": "system", "name": "fleet_input", "content": '{"depth":1}'},
             {"role": "user", "content": "Begin."}]
    step1_calls = [{"id": "call_0", "type": "function",
                    "function": {"name": "write_note", "arguments": '{"path":"g.md","content":"again"}'}},
                   {"id": "call_1", "type": "function",
                    "function": {"name": "finish", "arguments": '{"answer":"ran"}'}}]
    follow = first + [{"role": "assistant", "content": "", "tool_calls": step1_calls},
                      {"role": "tool", "tool_call_id": "call_0", "content": "ok"},
                      {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    variants = [
        ("an assistant message alone", first + [{"role": "assistant", "content": "I ran it"}]),
        ("a tool message alone", first + [{"role": "tool", "tool_call_id": "call_0", "content": "ok"}]),
        ("write_note's call and result, no finish", first + [
            {"role": "assistant", "content": "", "tool_calls": step1_calls[:1]},
            {"role": "tool", "tool_call_id": "call_0", "content": "ok"}]),
    ]
    for desc, msgs in variants:
        r, seen, el = watch(mark, lambda: agent(s, None, messages=msgs))
        # nothing ran, so x-should-retry is not required (SPEC §2 asks it
        # of answers after code started; no SDK retries a 200 anyway)
        expect_calls(r, [], "", "guard: %s → 200 with finish alone" % desc, retry=False)
        t.ok(not seen, "… and nothing ran (marker seen: %s; answered in %.2f s)" % (seen, el))
    t.eq((field(r, "codellm", "blocks"), field(r, "codellm", "block_results")), (0, []),
         "… the codellm object reports no block")
    # once the conversation holds finish (the OpenAI tool loop sends its
    # result back), the answer is text: the loop ends, nothing runs
    text_variants = [
        ("write_note and finish with their results (the OpenAI loop's second turn)", follow, "ran"),
        ("… then a plain user turn", follow + [{"role": "user", "content": "Continue."}], "ran"),
        ("finish's call alone, arguments with escapes",
         first + [{"role": "assistant", "content": None, "tool_calls": [
             {"id": "x", "type": "function",
              "function": {"name": "finish", "arguments": '{"answer":"a \\"b\\"\\n\\u00e9"}'}}]}],
         'a "b"\n\u00e9'),
        ("finish with arguments that are not JSON", first + [{"role": "assistant", "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "finish", "arguments": "{nope"}}]}], ""),
        ("a tool message named finish (no call in the conversation)",
         first + [{"role": "tool", "name": "finish", "tool_call_id": "x", "content": "result text"}],
         "result text"),
        ("a legacy function_call finish", first + [{"role": "assistant", "content": None,
            "function_call": {"name": "finish", "arguments": '{"answer":"old"}'}}], "old"),
    ]
    for desc, msgs, answer in text_variants:
        r, seen, el = watch(mark, lambda: agent(s, None, messages=msgs))
        t.ok(r.status == 200 and field(r, "choices", 0, "finish_reason") == "stop" and
             field(r, "choices", 0, "message", "content") == answer and
             "tool_calls" not in (field(r, "choices", 0, "message") or {}) and
             field(r, "codellm", "rerun_guard") is True and field(r, "codellm", "blocks") == 0,
             "guard after finish: %s → finish's answer %r as text, finish_reason stop, no tool call"
             % (desc, answer), r.body[:600])
        t.ok(not seen, "… and nothing ran (marker seen: %s; answered in %.2f s)" % (seen, el))
    r = agent(s, None, messages=follow, stream=True)
    ev = [json.loads(e[6:]) for e in r.body.decode("utf-8").split("\n\n")
          if e.startswith("data: ") and e != "data: [DONE]"]
    text = "".join((c["choices"][0]["delta"].get("content") or "") for c in ev if c.get("choices"))
    fins = [c["choices"][0].get("finish_reason") for c in ev if c.get("choices")]
    t.ok(r.status == 200 and text == "ran" and fins[-1:] == ["stop"] and
         not any("tool_calls" in c["choices"][0]["delta"] for c in ev if c.get("choices")),
         "… streamed: the answer as content deltas, finish_reason stop, no tool call", r.body[:600])
    # the control: the same first turn does run, and the poll does see it
    r, seen, el = watch(mark, lambda: agent(s, None, messages=first))
    expect_calls(r, [("write_note", {"path": "g.md", "content": "again"})], "ran",
                 "control: the first turn runs and maps")
    t.ok(seen and el >= 3.0, "… and the marker was seen while it ran (%.2f s): the guard checks can fail" % el)
    r = agent(s, None, messages=[{"role": "assistant", "content": "earlier"}] +
              [{"role": "user", "content": emit({"answer": "after"})}])
    expect_calls(r, [], "after", "an assistant message BEFORE the code message does not stop the run")
    t.ok(wait_gone(mark, 30), "no marker process left")

    # ---- stdin in agent mode -------------------------------------------------------------
    read_stdin = block("python", "import sys, json\nprint(json.dumps({'answer': sys.stdin.read()}))")
    r = agent(s, None, messages=[{"role": "system", "content": "plain system text, no fence"},
                                 {"role": "system", "content": read_stdin}])
    expect_calls(r, [], "", "agent mode: a plain system message is NOT the first block's stdin")
    r = s.chat({"model": "codellm", "messages": [{"role": "system", "content": "plain system text, no fence"},
                                                 {"role": "system", "content": read_stdin}]})
    t.eq(content(r), '{"answer": "plain system text, no fence"}\n',
         "… while run mode (no tools) does feed it (the control)")
    r = agent(s, None, messages=[{"role": "user", "content": "st\u00e9din \U0001F600\r\n", "name": "stdin"},
                                 {"role": "system", "content": read_stdin}])
    expect_calls(r, [], "st\u00e9din \U0001F600\r\n", "agent mode: a message named stdin is the stdin")

    t.eq(s.leftovers(), [], "no run directory left")

# ---- the seed's request, verbatim ----------------------------------------------------------
BAG = {"changed_files": [{"path": "inbox/2026-07-14 caf\u00e9 \u2615.md",
                          "content": "Met Zo\u00eb about the \U0001F680 launch.\r\nTODO: \"follow\" up\\\n"}],
       "attached_notes": [{"path": "concepts/x.md", "content": "# X\n\nstatus: draft\n"}],
       "depth": 1, "now": "2026-07-14T09:30:00Z"}
BAG_TEXT = json.dumps(BAG, ensure_ascii=False, separators=(",", ":"))
ROLE_BODY = """# Inbox triage

Reads the delivery, files each changed inbox note as a concept, and links
it from the index. The expected shape of a change:

```json
{"path": "concepts/…", "content": "…"}
```

```python
import json, os, hashlib
raw = open(os.environ["FLEET_INPUT"], "rb").read()
bag = json.loads(raw)
print(json.dumps({"raw": raw.decode("utf-8"), "sha": hashlib.sha256(raw).hexdigest(),
                  "first": bag["changed_files"][0]["content"].splitlines()[0]}))
```

```python
import json, sys
d = json.load(sys.stdin)
print(json.dumps({
    "changes": [
        {"path": "concepts/x.md", "content": "# X\\n\\n" + d["first"] + "\\n"},
        {"path": "index.md", "find": "a", "replace": "b"},
        {"path": "inbox/bag-copy.json", "content": d["raw"]},
    ],
    "answer": "done " + d["sha"],
}))
```
"""
SEED = {
    "model": "codellm",
    "messages": [
        {"role": "system",
         "content": "You are a scoped trip2g micro-agent. You act on the knowledge base only "
                    "through your tools: write_note, patch_note and finish. You may write only "
                    "notes matching concepts/*.md, index.md, inbox/*.\n" + ROLE_BODY},
        {"role": "system", "name": "fleet_input", "content": BAG_TEXT},
        {"role": "user", "content": "Begin."},
    ],
    "tools": tools("write_note", "patch_note", "finish"),
    "max_tokens": 4096,
}
with Server() as s:
    r = s.chat(SEED)
    STATUSES.append(r.status)
    sha = hashlib.sha256(BAG_TEXT.encode("utf-8")).hexdigest()
    expect_calls(r, [("write_note", {"path": "concepts/x.md",
                                     "content": "# X\n\nMet Zo\u00eb about the \U0001F680 launch.\n"}),
                     ("patch_note", {"path": "index.md", "find": "a", "replace": "b"}),
                     ("write_note", {"path": "inbox/bag-copy.json", "content": BAG_TEXT})],
                 "done " + sha, "the seed's request shape gives the exact tool calls")
    got = parsed(r) or [None, None, (None, {})]
    t.ok(got[2][1].get("content", "").encode("utf-8") == BAG_TEXT.encode("utf-8"),
         "$FLEET_INPUT holds the bag byte for byte (non-ASCII, CRLF, quotes)")
    t.eq((got[-1] or (None, {}))[1].get("answer"), "done " + sha, "… and its sha256 matches the bag's UTF-8")
    t.eq(field(r, "codellm", "skipped_fences"), [{"label": "json", "line": 7}],
         "the json fence in the role body is prose, skipped (and listed)")
    t.eq(field(r, "codellm", "blocks"), 2, "two python blocks ran")
    raw_args = [c["function"]["arguments"] for c in calls(r) or []]
    t.eq(raw_args[:2], ['{"path":"concepts/x.md","content":"# X\\n\\nMet Zo\u00eb about the \U0001F680 launch.\\n"}',
                        '{"path":"index.md","find":"a","replace":"b"}'],
         "arguments as the seed shows them: compact JSON, path first")

# ---- timeout via --timeout -----------------------------------------------------------------
with Server("--timeout", "2") as s:
    # the marker starts with the second block, not after the first ended:
    # it is up within the 2 s however slowly the first block starts
    mark = "sleep 4%s" % U
    r, seen, el = watch(mark, lambda: agent(s, emit({"answer": "x"}) +
                                         block("bash", "%s & cat >/dev/null; wait" % mark)))
    expect_error(r, "timeout", "--timeout 2 with a sleeping block → 422 timeout",
                 contains=("timed out",), exit_code=124, nblocks=2)
    t.ok(seen, "… it ran (the answer came after %.1f s)" % el)
    t.ok(field(r, "codellm", "timed_out") is True, "… codellm.timed_out is true")
    t.ok(wait_gone(mark, 30), "… and the sleeping block is gone")
    t.eq(s.leftovers(), [], "no run directory left")

# ---- an endless output is cut at the cap, not run to the timeout -----------------------
# In agent mode an output over --max-stdout-bytes already decides the
# answer (422 output_limit): the run stops there instead of draining until
# the wall timeout.
with Server("--max-stdout-bytes", "1M", "--timeout", "30") as s:
    mark = "sleep 5%s" % U
    t0 = time.time()
    r = agent(s, block("bash", "(%s) & yes" % mark))
    el = time.time() - t0
    expect_error(r, "output_limit", "an endless `yes` in agent mode → 422 output_limit",
                 contains=("max-stdout-bytes",))
    t.ok(field(r, "codellm", "timed_out") is False,
         "… decided at the cap, not by --timeout 30 (not a timeout; %.1f s)" % el)
    t.ok(wait_gone(mark, 30), "… the block and what it started are gone")

# ---- 5 MiB, lossless --------------------------------------------------------------------------
UNIT = "line \U0001F600 \u00e9\r\n\t\"q\" \\ \u2028\u2029 \x01" + "x" * 200 + "\n"
N_UNITS = (5 * 1024 * 1024) // len(UNIT.encode("utf-8")) + 1
BIG = UNIT * N_UNITS
with Server("--max-stdout-bytes", "32M") as s:
    gen = ("import json, sys\nu = %r\nbig = u * %d\n"
           "sys.stdout.write(json.dumps({'changes':[{'path':'big/\\U0001F4DA.md','content':big},"
           "{'path':'big/p.md','find':u,'replace':big[:100000]}],'answer':str(len(big))}, ensure_ascii=False))"
           % (UNIT, N_UNITS))
    t0 = time.time()
    r = agent(s, block("python", gen))
    el = time.time() - t0
    got = parsed(r) or []
    t.ok(r.status == 200 and len(got) == 3, "a %.1f MiB content → 200 with 3 calls (%.1f s)"
         % (len(BIG.encode()) / 1048576.0, el), r.body[:400])
    t.ok(len(got) == 3 and got[0][1].get("content", "").encode("utf-8") == BIG.encode("utf-8")
         and got[0][1].get("path") == "big/\U0001F4DA.md",
         "… the content survives byte for byte (sha256 %s)" % hashlib.sha256(BIG.encode()).hexdigest()[:16])
    t.ok(len(got) == 3 and got[1] == ("patch_note", {"path": "big/p.md", "find": UNIT, "replace": BIG[:100000]})
         and got[2] == ("finish", {"answer": str(len(BIG))}),
         "… and the patch and finish beside it too")

t.ok(STATUSES and not any(st is None or st >= 500 for st in STATUSES),
     "never a 5xx (%d requests: %s)" % (len(STATUSES), sorted(set(STATUSES))))
t.diag("runtime %.1f s" % (time.time() - T_START))
t.done()
