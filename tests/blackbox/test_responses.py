#!/usr/bin/env python3
"""The Responses API face (codellm(7), RESPONSES API) through the real
handler: POST /v1/responses, stateless.

Checked here: run mode with input as a string and as items with
instructions; agent mode's function_call items and their call ids,
unique across requests; the re-execution guard (function_call_output
after the code: nothing runs; a finish call in the input: its answer as
text); files in (input_file) and artifacts out (codellm.files); the
typed stream events, their order and sequence numbers, in run and agent
mode; every refusal (previous_response_id, conversation, background,
prompt, item_reference, the /v1/responses/{id} routes, an unknown item
or part, bad JSON); 422 execution_error after code ran in agent mode,
with x-should-retry: false.
"""
import base64
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

t = Tap()
TOOLS = [{"type": "function", "name": n, "parameters": {"type": "object"}}
         for n in ("write_note", "patch_note", "finish")]
CHANGES = {"changes": [{"path": "notes/a.md", "content": "# A\n\u00fcn\u00efc\u00f8d\u00e9\n"},
                       {"path": "index.md", "find": "count: 0", "replace": "count: 1"}],
           "answer": "one written, one patched"}


def emit(obj):
    return block("python", "import json\nprint(json.dumps(json.loads(%r)))" % json.dumps(obj))


def post(s, body, **kw):
    return s.request("POST", "/v1/responses", body, **kw)


def post_held(s, body, marker, wait=30.0):
    """post(), for a run whose block waits for a file `go` in its working
    directory: once `marker` is in what has come of the answer (or after
    `wait` s, the backstop), the test makes `go` there (as the directory's
    owner when need be: the sandbox maps only its own ids), then reads
    the rest."""
    c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    try:
        c.sendall(build_request("POST", "/v1/responses", body))
        got = bytearray()
        deadline = time.time() + wait
        while marker not in got and time.time() < deadline:
            c.settimeout(max(0.01, deadline - time.time()))
            try:
                b = c.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            got += b
        let_go(block_processes(s))
        return Resp(bytes(got) + read_all(c, timeout=60))
    finally:
        c.close()


def err(r):
    e = r.error() or {}
    return (r.status, e.get("type"), e.get("code"))


def texts(j):
    return [c.get("text") for o in (j or {}).get("output", []) if o.get("type") == "message"
            for c in o.get("content", [])]


def events(r):
    """[(event line's type, data object)] of a typed SSE body."""
    out = []
    for chunk in r.body.decode("utf-8").split("\n\n"):
        lines = [ln for ln in chunk.split("\n") if ln and not ln.startswith(":")]
        if not lines:
            continue
        ev = [ln[7:] for ln in lines if ln.startswith("event: ")]
        data = [ln[6:] for ln in lines if ln.startswith("data: ")]
        out.append((ev[0] if ev else None, json.loads(data[0]) if data else None))
    return out


def check_sequence(evs, what):
    t.eq([d.get("sequence_number") for _, d in evs], list(range(len(evs))),
         what + ": sequence_number counts 0, 1, 2, … without a gap")
    t.ok(all(e == d.get("type") for e, d in evs),
         what + ": each event: line names the data's type", evs[:3])


with Server() as s:
    # ---- run mode -----------------------------------------------------
    r = post(s, {"model": "codellm", "input": block("python", "print('hello', 6*7)"),
                 "metadata": {"k": "v"}, "store": True})
    j = r.json or {}
    t.eq(r.status, 200, "run mode, input a string: 200")
    t.eq(j.get("object"), "response", "object is response")
    t.ok(j.get("id", "").startswith("resp_") and
         j["id"][5:] == (r.header("x-request-id") or "").split("-", 1)[-1],
         "id is resp_ and the request id's random part", (j.get("id"), r.header("x-request-id")))
    t.eq(j.get("status"), "completed", "status completed")
    t.eq(texts(j), ["hello 42\n"], "output: one message with stdout as output_text")
    t.eq(j.get("output", [{}])[0].get("id"), "msg_" + j.get("id", "")[5:], "message id msg_…")
    t.eq(j.get("metadata"), {"k": "v"}, "metadata echoed")
    t.eq(j.get("store"), False, "store: false (nothing is stored), even when true was asked")
    t.eq(j.get("usage"), {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 0}, "usage: zeros with the details objects")
    t.eq(dig(j, "codellm", "exit_code"), 0, "the codellm object beside usage")
    t.eq(r.header("x-should-retry"), "false", "x-should-retry: false once code ran")

    r = post(s, {"model": "codellm", "instructions": "HELLO stdin\n",
                 "input": [{"type": "message", "role": "developer",
                            "content": [{"type": "input_text", "text": block(
                                "python", "import sys\nprint(sys.stdin.read().lower(), end='')")}]},
                           {"role": "user", "content": "go"}]})
    t.eq((r.status, texts(r.json)), (200, ["hello stdin\n"]),
         "items with instructions: instructions is the first system message (stdin here)")

    r = post(s, {"model": "codellm", "input": block("python", "import sys\nprint('x' * 5000)"),
                 "codellm": {"timeout_s": 30}}, )
    t.eq((r.status, len((texts(r.json) or [""])[0])), (200, 5001), "the codellm extension passes")

    r = post(s, {"model": "codellm", "input": block("python", "import time\ntime.sleep(5)"),
                 "codellm": {"timeout_s": 0.5}})
    j = r.json or {}
    t.eq((j.get("status"), j.get("incomplete_details")), ("incomplete", {"reason": "timeout"}),
         "a run past its timeout: incomplete, reason timeout")

    # ---- files in, artifacts out ----------------------------------------
    data = "line one\nline two\n"
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": block(
            "python", "import os\nd = open('in.txt').read()\nos.makedirs('out', exist_ok=True)\n"
            "open('out/up.txt','w').write(d.upper())\n"
            "print(len(d))")},
        {"type": "input_file", "filename": "in.txt",
         "file_data": "data:text/plain;base64," + base64.b64encode(data.encode()).decode()},
        {"type": "input_image", "image_url": "data:image/png;base64," +
         base64.b64encode(b"\x89PNG fake").decode()}]}]})
    j = r.json or {}
    files = dig(j, "codellm", "files") or []
    t.eq(texts(j), ["%d\n" % len(data)], "input_file lands in the workdir under its filename")
    t.eq([(f.get("name"), base64.b64decode(f.get("data_b64", "")).decode()) for f in files],
         [("out/up.txt", data.upper())], "what the block left in /work/out rides in codellm.files")
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": block("python", "print(1)")},
        {"type": "input_file", "file_id": "file-abc"}]}]})
    t.eq(err(r), (400, "invalid_request_error", "invalid_file"),
         "input_file by file_id: 400 (this server holds no files)")
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": block("python", "print(1)")},
        {"type": "input_file", "filename": ".x", "file_data": "data:;base64,eA=="}]}]})
    t.ok(err(r)[0] == 400 and "input[0].content[1]" in (r.error() or {}).get("message", ""),
         "a chat refusal names the input item, not a chat message", r)

    # ---- agent mode -----------------------------------------------------
    code = {"role": "user", "content": emit(CHANGES)}
    r1 = post(s, {"model": "codellm", "input": [code], "tools": TOOLS})
    r2 = post(s, {"model": "codellm", "input": [code], "tools": TOOLS})
    j = r1.json or {}
    out = j.get("output", [])
    t.eq(r1.status, 200, "agent mode: 200")
    t.eq([(o.get("type"), o.get("name"), json.loads(o.get("arguments", "null"))) for o in out],
         [("function_call", "write_note", {"path": "notes/a.md", "content": "# A\n\u00fcn\u00efc\u00f8d\u00e9\n"}),
          ("function_call", "patch_note", {"path": "index.md", "find": "count: 0", "replace": "count: 1"}),
          ("function_call", "finish", {"answer": "one written, one patched"})],
         "agent mode: function_call items, finish last, arguments lossless")
    hexid = j.get("id", "")[5:]
    t.eq([(o.get("id"), o.get("call_id"), o.get("status")) for o in out],
         [("fc_%s_%d" % (hexid, i), "call_%s_%d" % (hexid, i), "completed") for i in range(3)],
         "ids fc_…_N, call ids call_…_N, status completed")
    ids2 = [o.get("call_id") for o in (r2.json or {}).get("output", [])]
    t.ok(len(ids2) == 3 and not set(ids2) & {o.get("call_id") for o in out},
         "call ids are unique across requests", (ids2, out))
    t.eq(dig(j, "codellm", "changes"), 2, "codellm.changes counts the changes")

    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": block(
        "python", "print('not json')")}], "tools": TOOLS})
    t.eq(err(r), (422, "execution_error", "invalid_changes"),
         "agent mode, bad output after code ran: 422 execution_error")
    t.eq(r.header("x-should-retry"), "false", "422: x-should-retry: false")
    t.ok(isinstance((r.json or {}).get("codellm"), dict) and "output" not in (r.json or {}),
         "422 carries the codellm object and no function call", r)

    # ---- the re-execution guard -------------------------------------------
    mark = "codellm-resp-guard-%d" % os.getpid()
    runs = block("python", "import subprocess\nsubprocess.run(['sleep', '2.%d'])\nprint('{}')"
                 % os.getpid())
    calls = [{"type": "function_call", "id": "fc_1", "call_id": "call_w", "name": "write_note",
              "arguments": "{\"path\":\"a\",\"content\":\"b\"}", "status": "completed"},
             {"type": "function_call_output", "call_id": "call_w", "output": "ok"}]
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": runs}] + calls,
                 "tools": TOOLS})
    j = r.json or {}
    t.eq([(o.get("type"), o.get("name"), o.get("arguments")) for o in j.get("output", [])],
         [("function_call", "finish", "{\"answer\":\"\"}")],
         "function_call_output after the code: nothing runs, finish alone")
    t.ok(dig(j, "codellm", "rerun_guard") is True and dig(j, "codellm", "blocks") == 0,
         "codellm.rerun_guard true, no block ran", j.get("codellm"))
    fin = [{"type": "function_call", "call_id": "call_f", "name": "finish",
            "arguments": "{\"answer\":\"all done\"}"},
           {"type": "function_call_output", "call_id": "call_f", "output": [
               {"type": "input_text", "text": "all done"}]}]
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": runs}] + calls + fin,
                 "tools": TOOLS})
    j = r.json or {}
    t.eq((r.status, j.get("status"), texts(j)), (200, "completed", ["all done"]),
         "a finish call in the input: its answer as an output_text message")
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": runs},
                                               {"type": "function_call_output",
                                                "call_id": "call_f", "output": "done by result"}],
                 "tools": [TOOLS[2]]})
    t.eq([o.get("name") for o in (r.json or {}).get("output", [])], ["finish"],
         "a result alone, its call unknown: finish alone, not text")
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": runs},
                                               {"role": "assistant", "content": [
                                                   {"type": "output_text", "text": "earlier"}]}]})
    t.eq((r.status, texts(r.json)), (200, [""]),
         "run mode: an assistant item after the code: nothing runs, empty text")
    t.eq(procs_matching("sleep 2.%d" % os.getpid()), [], "no guarded block ever started")

    # ---- streaming ------------------------------------------------------
    # 'b' is printed only once a delta of 'a' has reached the client
    r = post_held(s, {"model": "codellm", "stream": True, "input": block(
        "python", "import os, time\nprint('a', flush=True)\nfor _ in range(3000):\n"
        "    if os.path.exists('go'):\n        break\n    time.sleep(0.02)\nprint('b')")},
        b"event: response.output_text.delta\n")
    evs = events(r)
    kinds = [e for e, _ in evs]
    t.eq(r.header("content-type"), "text/event-stream", "stream: text/event-stream")
    t.eq([k for k in kinds if k != "response.output_text.delta"],
         ["response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.output_text.done",
          "response.content_part.done", "response.output_item.done", "response.completed"],
         "stream: the typed events in order", kinds)
    deltas = [d["delta"] for e, d in evs if e == "response.output_text.delta"]
    t.ok(len(deltas) >= 2 and "".join(deltas) == "a\nb\n",
         "stream: stdout as output_text deltas, as it is printed", deltas)
    check_sequence(evs, "stream")
    final = evs[-1][1].get("response", {}) if evs else {}
    t.eq((final.get("status"), texts(final)), ("completed", ["a\nb\n"]),
         "response.completed carries the whole response")
    t.eq(dig(final, "codellm", "exit_code"), 0, "… and the codellm object")

    r = post(s, {"model": "codellm", "stream": True, "input": [code], "tools": TOOLS})
    evs = events(r)
    kinds = [e for e, _ in evs]
    one = ["response.output_item.added", "response.function_call_arguments.delta",
           "response.function_call_arguments.done", "response.output_item.done"]
    t.eq(kinds, ["response.created", "response.in_progress"] + one * 3 + ["response.completed"],
         "agent stream: added, arguments delta and done, done for each call", kinds)
    check_sequence(evs, "agent stream")
    t.eq([d.get("name") for e, d in evs if e == "response.function_call_arguments.done"],
         ["write_note", "patch_note", "finish"], "agent stream: the calls by name")

    r = post(s, {"model": "codellm", "stream": True, "tools": TOOLS,
                 "input": [{"role": "user", "content": block("python", "print('nope')")}]})
    evs = events(r)
    last = evs[-1][1] if evs else {}
    t.eq((r.status, evs[-1][0] if evs else None, dig(last, "response", "status"),
          dig(last, "response", "error", "code")),
         (200, "response.failed", "failed", "invalid_changes"),
         "agent stream, bad output: response.failed with the error code")

    r = post(s, {"model": "codellm", "stream": True, "tools": TOOLS,
                 "input": [{"role": "user", "content": runs}] + calls + fin})
    evs = events(r)
    t.eq(("".join(d["delta"] for e, d in evs if e == "response.output_text.delta"),
          evs[-1][0] if evs else None), ("all done", "response.completed"),
         "guard, streamed: the finish answer as text")

    # ---- refusals -------------------------------------------------------
    base = {"model": "codellm", "input": block("python", "print(1)")}
    for key, val in (("previous_response_id", "resp_123"), ("conversation", "conv_1"),
                     ("background", True), ("prompt", {"id": "pmpt_1"})):
        r = post(s, dict(base, **{key: val}))
        e = r.error() or {}
        t.ok(err(r) == (400, "invalid_request_error", "stateless_server") and
             e.get("param") == key and "no state" in e.get("message", ""),
             "%s: 400 stateless_server, nothing is stored" % key, r)
    r = post(s, dict(base, background=False, previous_response_id=None))
    t.eq(r.status, 200, "background false and a null previous_response_id are fine")
    r = post(s, {"model": "codellm", "input": [{"type": "item_reference", "id": "msg_1"}]})
    t.eq(err(r), (400, "invalid_request_error", "stateless_server"), "item_reference: 400")
    for method, path in (("GET", "/v1/responses/resp_abc"), ("DELETE", "/v1/responses/resp_abc"),
                         ("POST", "/v1/responses/resp_abc/cancel"),
                         ("GET", "/v1/responses/resp_abc/input_items")):
        r = s.request(method, path, {} if method == "POST" else None)
        t.eq(err(r), (400, "invalid_request_error", "stateless_server"),
             "%s %s: 400 stateless_server" % (method, path))
    r = post(s, {"model": "codellm", "input": [{"type": "reasoning", "summary": []}]})
    e = r.error() or {}
    t.ok(err(r)[0] == 400 and "input[0]" in e.get("message", "") and
         "reasoning" in e.get("message", ""), "an unknown item type: 400 naming the item", r)
    r = post(s, {"model": "codellm", "input": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {}}]}]})
    t.ok(err(r)[0] == 400 and "input[0].content[0]" in (r.error() or {}).get("message", ""),
         "an unknown part type: 400 naming the part", r)
    r = post(s, {"model": "codellm", "input": "x", "tools": [{"type": "web_search"}]})
    t.eq(err(r), (400, "invalid_request_error", "unsupported_tool"), "a non-function tool: 400")
    r = post(s, b'{"model": "codellm", "input": ')
    t.eq(err(r), (400, "invalid_request_error", "invalid_json"), "bad JSON: 400 invalid_json")
    r = post(s, {"model": "codellm"})
    t.eq(err(r)[:2], (400, "invalid_request_error"), "no input: 400")
    r = post(s, {"model": "codellm", "input": "no fence here"})
    t.eq(err(r), (400, "invalid_request_error", "no_runnable_block"),
         "no runnable block: chat's 400")
    r = post(s, dict(base, metadata={"n": 1}))
    t.eq(err(r), (400, "invalid_request_error", "invalid_value"), "metadata not strings: 400")
    r = s.request("GET", "/v1/responses")
    t.eq(r.status, 405, "GET /v1/responses: 405")
    t.eq(s.leftovers(), [], "no run directory is left")

t.done()
