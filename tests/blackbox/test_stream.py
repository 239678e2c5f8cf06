#!/usr/bin/env python3
"""Streaming (SPEC §5 "Streaming"): server-sent events as the OpenAI SDKs
parse them, in run and agent mode, through the real handler."""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
U = str(400000 + os.getpid())
TOOLS = [{"type": "function", "function": {"name": n}} for n in ("write_note", "patch_note", "finish")]


def stream(s, payload, key=KEY, on_event=None):
    """Sends a request; returns (status, headers, [(seconds, event text)])
    with each SSE event timed as it arrived. on_event(events) is called
    after each event, with the events so far."""
    c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    c.sendall(build_request("POST", "/v1/chat/completions", payload, key=key))
    t0 = time.time()
    buf, events, head = b"", [], None
    while True:
        try:
            b = c.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not b:
            break
        buf += b
        if head is None and b"\r\n\r\n" in buf:
            head, buf = buf.split(b"\r\n\r\n", 1)
        while head is not None and b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            events.append((time.time() - t0, ev.decode("utf-8")))
            if on_event:
                on_event(events)
    c.close()
    r = Resp((head or b"") + b"\r\n\r\n" + buf)
    return r, events


def datas(events):
    return [e[6:] for _, e in events if e.startswith("data: ")]


def chunks(events):
    return [json.loads(d) for d in datas(events) if d != "[DONE]"]


def content_of(events):
    return "".join((c["choices"][0].get("delta") or {}).get("content") or ""
                   for c in chunks(events) if c.get("choices"))


# (--timeout 30: a run whose block waits for the test's release in vain
# ends by it, and its checks fail)
with Server("--keepalive-interval", "1", "--timeout", "30") as s:
    # ---- run mode -------------------------------------------------------------
    # the block prints its first line, then waits for the test's release
    # before its second: the test releases it once the first line and
    # then a ping (the run is quiet) have arrived. Output held back until
    # the block's end would leave both waiting until the timeout.
    released = []

    def first_then_ping(events):
        i = next((k for k in range(len(events)) if content_of(events[:k + 1]) == "first\n"), None)
        if not released and i is not None and any(e.startswith(": ping") for _, e in events[i + 1:]):
            blk = catching(s)
            released.append((events[-1][0], blk))
            release(blk)

    r, ev = stream(s, {"model": "python", "stream": True, "messages": [{"role": "user", "content":
                       "import os, signal\n"
                       "def go(*a):\n"
                       "    print('second \u00e9\U0001F600', flush=True)\n"
                       "    os._exit(0)\n"
                       "signal.signal(signal.SIGUSR1, go)\n"
                       "print('first')\n"
                       "while True:\n"
                       "    signal.pause()\n"}]}, on_event=first_then_ping)
    t.eq(r.status, 200, "run mode: 200")
    t.eq(r.header("content-type"), "text/event-stream", "Content-Type: text/event-stream")
    t.eq(r.header("x-should-retry"), "false", "x-should-retry: false (code runs)")
    cs = chunks(ev)
    t.ok(cs and cs[0]["object"] == "chat.completion.chunk" and cs[0]["choices"][0]["delta"].get("role") == "assistant"
         and cs[0]["choices"][0]["delta"].get("content") == "", "the first chunk is the role chunk", cs[:1])
    t.ok(all(c["id"] == cs[0]["id"] and c["id"] == r.header("x-request-id") for c in cs),
         "every chunk carries the request id")
    timed = [(tm, json.loads(e[6:])) for tm, e in ev if e.startswith("data: {")]
    deltas = [(tm, c["choices"][0]["delta"].get("content")) for tm, c in timed
              if c.get("choices") and c["choices"][0]["delta"].get("content")]
    # (unbuffered python may write "first" and its newline separately:
    # compare what arrived before the release with what came after, not
    # delta counts)
    t_rel = released[0][0] if released else None
    early = "".join(d for tm, d in deltas if t_rel is not None and tm <= t_rel)
    late = [tm for tm, d in deltas if "second" in d]
    t.ok(released and released[0][1] is not None and early == "first\n" and late,
         "the stdout arrives as produced: 'first' came while the block waited for the test, "
         "%.1f s before the second line" % ((late[0] - deltas[0][0]) if late and deltas else -1), deltas)
    t.eq(content_of(ev), "first\nsecond \u00e9\U0001F600\n", "the deltas add up to the stdout, UTF-8 intact")
    t.ok(any(e.startswith(": ping") for _, e in ev), "': ping' comments while the run is quiet (--keepalive-interval 1)")
    fin = [c for c in cs if c.get("choices") and c["choices"][0].get("finish_reason")]
    t.ok(len(fin) == 1 and fin[0]["choices"][0]["finish_reason"] == "stop" and fin[0]["choices"][0]["delta"] == {}
         and isinstance(fin[0].get("codellm"), dict) and fin[0]["codellm"]["exit_code"] == 0,
         "a final chunk: empty delta, finish_reason stop, the codellm object", fin)
    t.eq(datas(ev)[-1], "[DONE]", "data: [DONE] last")
    t.ok(not any("usage" in c for c in cs), "no usage chunk unless asked")

    r, ev = stream(s, {"model": "python", "stream": True, "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "print(42)"}]})
    us = [c for c in chunks(ev) if "usage" in c]
    d = datas(ev)
    t.ok(len(us) == 1 and us[0]["choices"] == [] and us[0]["usage"] == {
        "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
         and d[-1] == "[DONE]" and json.loads(d[-2]) == us[0],
         "stream_options.include_usage: a usage chunk with choices [] right before [DONE]", us)

    # (sleep 20: far beyond the timeout_s 1 however late load makes it
    # fire, far below the --timeout 30)
    r, ev = stream(s, {"model": "codellm", "stream": True, "codellm": {"timeout_s": 1},
                       "messages": [{"role": "user", "content": block("bash", "echo a; sleep 20")}]})
    fin = [c for c in chunks(ev) if c.get("choices") and c["choices"][0].get("finish_reason")]
    t.ok(fin and fin[0]["choices"][0]["finish_reason"] == "length" and fin[0]["codellm"]["timed_out"] is True
         and content_of(ev) == "a\n", "a timeout: the output so far, finish_reason length, timed_out", fin)

    r, ev = stream(s, {"model": "python", "stream": True, "messages": [{"role": "user", "content":
                       "import sys\nsys.stdout.buffer.write(b'x\\xe2\\x82 y\\xff\\n')"}]})
    t.eq(content_of(ev), b"x\xe2\x82 y\xff\n".decode("utf-8", "replace"), "invalid UTF-8 → U+FFFD in the deltas too")

    # ---- agent mode -----------------------------------------------------------
    code = block("python", "import json\nprint(json.dumps({'changes':[{'path':'a.md','content':'A'},"
                 "{'path':'b.md','find':'x','replace':'y'}],'answer':'done'}))")
    r, ev = stream(s, {"model": "codellm", "stream": True, "tools": TOOLS,
                       "messages": [{"role": "user", "content": code}]})
    cs = chunks(ev)
    first = {}
    args = {}
    for c in cs:
        for tc in (c["choices"][0]["delta"].get("tool_calls") or []) if c.get("choices") else []:
            if tc["index"] not in first:
                first[tc["index"]] = tc
            args[tc["index"]] = args.get(tc["index"], "") + (tc.get("function") or {}).get("arguments", "")
    t.ok(cs and cs[0]["choices"][0]["delta"].get("role") == "assistant", "agent mode: the role chunk first")
    t.ok(sorted(first) == [0, 1, 2] and all(
        set(first[i]) >= {"index", "id", "type", "function"} and first[i]["type"] == "function"
        and first[i]["id"] == "call_%s_%d" % (cs[0]["id"].split("-", 1)[-1], i)
        and first[i]["function"].get("arguments") == ""
        for i in first), "each call's first delta has index, id, type, function.name, arguments ''", first)
    t.eq([(first[i]["function"]["name"], json.loads(args[i])) for i in sorted(first)],
         [("write_note", {"path": "a.md", "content": "A"}),
          ("patch_note", {"path": "b.md", "find": "x", "replace": "y"}),
          ("finish", {"answer": "done"})], "the argument fragments add up to the calls")
    fin = [c for c in cs if c.get("choices") and c["choices"][0].get("finish_reason")]
    t.ok(len(fin) == 1 and fin[0]["choices"][0]["finish_reason"] == "tool_calls"
         and fin[0]["codellm"].get("changes") == 2, "final chunk: finish_reason tool_calls, codellm.changes 2", fin)
    t.eq(datas(ev)[-1], "[DONE]", "agent mode: [DONE] last")

    r, ev = stream(s, {"model": "codellm", "stream": True, "tools": TOOLS, "messages": [
        {"role": "user", "content": block("python", "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)")}]})
    d = datas(ev)
    errs = [json.loads(x) for x in d if x.startswith('{"error"')]
    t.ok(r.status == 200 and len(errs) == 1 and errs[0]["error"]["type"] == "execution_error"
         and errs[0]["error"]["code"] == "block_failed" and "boom" in errs[0]["error"]["message"]
         and isinstance(errs[0].get("codellm"), dict),
         "a failure after the stream began: a data: {\"error\"} event (execution_error, block_failed)", d)
    t.ok(not any('"tool_calls"' in x for x in d), "no tool call before the error event")

    # ---- refusals stay plain HTTP errors ----------------------------------------
    r, ev = stream(s, {"model": "python", "stream": True, "messages": [{"role": "user", "content": "print(1)"}]},
                   key="wrong")
    t.ok(r.status == 401 and r.header("content-type") == "application/json" and not datas(ev),
         "401 is a plain JSON error, no event")
    r, ev = stream(s, {"model": "codellm", "stream": True, "messages": [{"role": "user", "content": "no code"}]})
    t.ok(r.status == 400 and not datas(ev), "400 is a plain JSON error, no event")
    r, ev = stream(s, {"model": "codellm", "stream": True, "messages": [{"role": "user", "content": "```cobol\nx\n```"}]})
    t.ok(r.status == 400, "no runnable block: 400 before any event")
    # the guard answers as a stream too
    r, ev = stream(s, {"model": "codellm", "stream": True, "tools": TOOLS, "messages": [
        {"role": "user", "content": code}, {"role": "assistant", "content": None}]})
    cs = chunks(ev)
    names = [tc["function"]["name"] for c in cs if c.get("choices")
             for tc in (c["choices"][0]["delta"].get("tool_calls") or []) if (tc.get("function") or {}).get("name")]
    t.ok(names == ["finish"] and datas(ev)[-1] == "[DONE]", "the re-execution guard streams finish alone", names)

with Server(allowed="python") as s:
    r, ev = stream(s, {"model": "codellm", "stream": True, "messages": [{"role": "user", "content": block("bash", "echo")}]})
    t.ok(r.status == 403 and not datas(ev), "403 is a plain JSON error, no event")
# the first run holds the one slot until the test releases its block,
# after the second request was answered
with Server("--max-concurrent", "1", "--timeout", "30") as s:
    res = []
    th = threading.Thread(target=lambda: res.append(stream(s, {"model": "codellm", "stream": True, "messages": [
        {"role": "user", "content": block("bash", "trap 'exit 0' USR1\nsleep 60 &\nwait")}]})))
    th.start()
    blk = catching(s, th.is_alive)
    r, ev = stream(s, {"model": "codellm", "stream": True, "messages": [{"role": "user", "content": block("bash", "echo")}]})
    release(blk)
    th.join()
    t.ok(blk is not None and r.status == 429 and r.header("retry-after") == "1" and not datas(ev),
         "429 is a plain JSON error, no event", "first run's block %r; %r" % (blk, r.raw[:400]))
with Server(key=False) as s:
    r, ev = stream(s, {"model": "codellm", "stream": True, "messages": [{"role": "user", "content": block("bash", "echo")}]})
    t.ok(r.status == 503 and r.header("x-should-retry") == "false" and not datas(ev),
         "503 (no key configured) is a plain JSON error, no event")
t.done()
