#!/usr/bin/env python3
"""POST /mcp, MCP over streamable HTTP, stateless (codellm.7 "MCP"),
through the real handler: initialize without a session, notifications,
tools/list, run_code and run_markdown (stdout, structuredContent,
isError, stdin, the input bag, an image artifact), calls without
initialize, the protocol-version checks, every JSON-RPC error, the
methods and the key, the id echoed exactly as sent (a number's token, a
string escaped), a key given twice. The official TypeScript SDK client
is in tests/clients/mcp.test.mjs."""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
ACCEPT = {"Accept": "application/json, text/event-stream"}
PNG = b"\x89PNG\r\n\x1a\n" + b"\0\0\0\rIHDR" + bytes(range(40))
N = [0]


def rpc(s, method, params=None, headers=None, notification=False, **kw):
    body = {"jsonrpc": "2.0", "method": method}
    if not notification:
        N[0] += 1
        body["id"] = N[0]
    if params is not None:
        body["params"] = params
    h = dict(ACCEPT)
    h.update(headers or {})
    return s.request("POST", "/mcp", body, headers=h, **kw)


def call(s, name, args, **kw):
    return rpc(s, "tools/call", {"name": name, "arguments": args}, **kw)


def result(r):
    j = r.json
    return j.get("result") if isinstance(j, dict) else None


def err(r):
    j = r.json
    return j.get("error") if isinstance(j, dict) else None


def code(lang, src, stdin=None, **extra):
    a = {"language": lang, "code": src}
    if stdin is not None:
        a["stdin"] = stdin
    a.update(extra)
    return a


with Server(allowed="python,bash") as s:
    # ---- the handshake that mints nothing
    r = rpc(s, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
    res = result(r) or {}
    t.eq(r.status, 200, "initialize: 200", r)
    t.eq(r.header("content-type"), "application/json", "initialize: answered as JSON")
    t.eq(res.get("protocolVersion"), "2025-06-18", "initialize: the version asked, when served")
    t.eq(res.get("capabilities"), {"tools": {}}, "initialize: capabilities {tools: {}}")
    t.eq((res.get("serverInfo") or {}).get("name"), "codellm", "initialize: serverInfo names codellm")
    t.ok((res.get("serverInfo") or {}).get("version"), "initialize: serverInfo has a version")
    t.eq(r.header("mcp-session-id"), None, "initialize: no Mcp-Session-Id")
    r = rpc(s, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
    t.eq((result(r) or {}).get("protocolVersion"), "2025-11-25",
         "initialize: an unserved version is answered with the newest handshake one")
    r = rpc(s, "notifications/initialized", notification=True)
    t.eq((r.status, r.body), (202, b""), "notifications/initialized: 202, no body", r)
    r = rpc(s, "notifications/cancelled", {"requestId": 1}, notification=True)
    t.eq((r.status, r.body), (202, b""), "any notification: 202, no body", r)
    r = rpc(s, "ping")
    t.eq(result(r), {}, "ping: {}")
    r = rpc(s, "server/discover", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    res = result(r) or {}
    t.eq(res.get("supportedVersions"), ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
         "server/discover: every revision served", r)
    t.eq((res.get("resultType"), res.get("capabilities")), ("complete", {"tools": {}}),
         "server/discover: resultType complete, capabilities")

    # ---- tools/list
    r = rpc(s, "tools/list")
    tools = {x["name"]: x for x in (result(r) or {}).get("tools", [])}
    t.eq(sorted(tools), ["run_code", "run_markdown"], "tools/list: the two tools", r)
    sc = tools.get("run_code", {}).get("inputSchema", {})
    t.eq((sc.get("type"), sorted(sc.get("required", []))), ("object", ["code", "language"]),
         "run_code: object schema, language and code required")
    t.eq(sc.get("properties", {}).get("language", {}).get("enum"), ["python", "bash"],
         "run_code: language is one of the allowed interpreters")
    t.ok(all(k in sc.get("properties", {}) for k in ("stdin", "timeout_s")),
         "run_code: stdin and timeout_s are optional")
    sm = tools.get("run_markdown", {}).get("inputSchema", {})
    t.eq(sm.get("required"), ["markdown"], "run_markdown: markdown required")
    t.ok(all(k in sm.get("properties", {}) for k in ("stdin", "input")),
         "run_markdown: stdin and input optional")

    # ---- run_code
    r = call(s, "run_code", code("python", "print(6 * 7)"))
    res = result(r) or {}
    t.eq(res.get("content"), [{"type": "text", "text": "42\n"}], "run_code: stdout as text", r)
    t.eq(res.get("isError"), False, "run_code: isError false")
    st = res.get("structuredContent") or {}
    t.eq((st.get("exit_code"), st.get("timed_out"), st.get("blocks")), (0, False, 1),
         "structuredContent: exit_code, timed_out, blocks")
    t.eq(st.get("sandbox", {}).get("mode"), "native", "structuredContent: the sandbox report")
    t.eq([b["lang"] for b in st.get("block_results", [])], ["python"],
         "structuredContent: per-block results")
    r = call(s, "run_code", code("bash", "echo out; echo oops >&2; exit 3"))
    res = result(r) or {}
    t.eq(r.status, 200, "a failed run is a tool result, not an HTTP error")
    t.eq(res.get("isError"), True, "exit 3: isError", r)
    t.eq(res.get("content", [{}])[0].get("text"), "out\n", "exit 3: stdout still the first part")
    t.ok("status 3" in res.get("content", [{}, {}])[-1].get("text", "") and
         "oops" in res["content"][-1]["text"], "exit 3: a text part says why, with stderr")
    t.eq((res.get("structuredContent") or {}).get("exit_code"), 3, "exit 3: exit_code 3")
    t.eq((res.get("structuredContent") or {}).get("stderr"), "oops\n", "exit 3: stderr")
    r = call(s, "run_code", code("python", "import time\nprint('a', flush=True)\ntime.sleep(30)",
                                 timeout_s=1))
    res = result(r) or {}
    t.eq((res.get("isError"), (res.get("structuredContent") or {}).get("timed_out")),
         (True, True), "timeout_s 1: isError, timed_out", r)
    r = call(s, "run_code", code("ruby", "puts 1"))
    res = result(r) or {}
    t.eq(res.get("isError"), True, "a language not allowed: isError", r)
    t.ok("not allowed" in res.get("content", [{}])[0].get("text", ""), "... and says so")
    r = call(s, "run_code", code("cobol", "x"))
    t.eq((result(r) or {}).get("isError"), True, "an unknown language: isError")
    r = call(s, "run_code", code("bash", "tr a-z A-Z", stdin="pear\n"))
    t.eq((result(r) or {}).get("content"), [{"type": "text", "text": "PEAR\n"}], "run_code: stdin")
    r = call(s, "run_code", code("python", 'print("```")\nprint("~~~")'))
    t.eq((result(r) or {}).get("content", [{}])[0].get("text"), "```\n~~~\n",
         "run_code: code holding fences runs whole")
    r = call(s, "run_code", {"language": "python"})
    t.eq((r.status, (result(r) or {}).get("isError")), (200, True),
         "missing code: a tool error (input validation)", r)
    r = call(s, "run_code", code("python", "1", extra=1))
    t.eq((result(r) or {}).get("isError"), True, "an unknown argument: a tool error")

    # ---- run_markdown
    md = (block("python", "import json, os\nbag = json.load(open(os.environ['FLEET_INPUT']))\n"
                          "print(bag['n'] * 2)\nprint(input())")
          + "prose\n" + block("text", "skipped") + block("bash", "tr a-z A-Z"))
    r = call(s, "run_markdown", {"markdown": md, "stdin": "pear\n", "input": {"n": 21}})
    res = result(r) or {}
    t.eq(res.get("content"), [{"type": "text", "text": "42\nPEAR\n"}],
         "run_markdown: a pipeline with stdin and the input bag", r)
    st = res.get("structuredContent") or {}
    t.eq((st.get("blocks"), [f["label"] for f in st.get("skipped_fences", [])]), (2, ["text"]),
         "run_markdown: the blocks and the skipped fence")
    r = call(s, "run_markdown", {"markdown": "no code here"})
    res = result(r) or {}
    t.eq((r.status, res.get("isError")), (200, True), "no runnable block: isError", r)
    t.eq((res.get("structuredContent") or {}).get("error", {}).get("code"), "no_runnable_block",
         "no runnable block: its code")

    # ---- artifacts
    src = ("import base64, os\nos.makedirs('out', exist_ok=True)\n"
           "open('out/plot.png', 'wb').write(base64.b64decode(%r))\n"
           "open('out/data.csv', 'w').write('a,b\\n1,2\\n')\nprint('done')"
           % base64.b64encode(PNG).decode())
    r = call(s, "run_code", code("python", src))
    parts = (result(r) or {}).get("content", [])
    imgs = [p for p in parts if p.get("type") == "image"]
    t.eq([(p.get("mimeType"), base64.b64decode(p.get("data", ""))) for p in imgs],
         [("image/png", PNG)], "an image artifact: an image part", r)
    ress = [p.get("resource", {}) for p in parts if p.get("type") == "resource"]
    t.eq([(x.get("uri"), x.get("mimeType"), base64.b64decode(x.get("blob", ""))) for x in ress],
         [("file:///work/out/data.csv", "text/csv", b"a,b\n1,2\n")],
         "another file: an embedded resource")
    files = (result(r) or {}).get("structuredContent", {}).get("files", [])
    t.eq(sorted((f["name"], "data_b64" in f, len(f.get("sha256", ""))) for f in files),
         [("out/data.csv", False, 64), ("out/plot.png", False, 64)],
         "structuredContent.files: names and digests, the bytes only in the parts")

    # ---- stateless: no initialize, versions per request
    V = "io.modelcontextprotocol/protocolVersion"
    r = rpc(s, "tools/list", {"_meta": {V: "2026-07-28"}},
            headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    t.eq((r.status, (result(r) or {}).get("resultType")), (200, "complete"),
         "2026-07-28: a request without initialize, resultType complete", r)
    r = call(s, "run_code", code("python", "print(1)"),
             headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                      "Mcp-Name": "run_code"})
    t.eq((result(r) or {}).get("content", [{}])[0].get("text"), "1\n",
         "2026-07-28: tools/call alone, with Mcp-Method and Mcp-Name")
    r = rpc(s, "tools/list", headers={"MCP-Protocol-Version": "2025-06-18"})
    t.eq(r.status, 200, "a served version header: answered")
    r = rpc(s, "tools/list", headers={"MCP-Protocol-Version": "1999-01-01"})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32022),
         "an unserved version header: 400, -32022", r)
    t.eq((err(r) or {}).get("data", {}).get("supported"),
         ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"], "... listing the versions served")
    r = rpc(s, "ping", {"_meta": {V: "2030-01-01"}})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32022), "an unserved _meta version: 400")
    r = rpc(s, "initialize", {"protocolVersion": "2025-06-18"},
            headers={"MCP-Protocol-Version": "2025-03-26"})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32020),
         "initialize: header and protocolVersion disagree: 400", r)
    r = rpc(s, "ping", {"_meta": {V: "2026-07-28"}}, headers={"MCP-Protocol-Version": "2025-11-25"})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32020), "header and _meta disagree: 400")
    r = rpc(s, "tools/list", headers={"Mcp-Method": "tools/call"})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32020), "Mcp-Method disagrees: 400")
    r = call(s, "run_code", code("python", "1"), headers={"Mcp-Name": "run_markdown"})
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32020), "Mcp-Name disagrees: 400")

    # ---- JSON-RPC errors
    r = s.request("POST", "/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": ', headers=ACCEPT)
    t.eq((r.status, (err(r) or {}).get("code"), (r.json or {}).get("id", 0)), (400, -32700, None),
         "malformed JSON: 400, -32700, id null", r)
    r = s.request("POST", "/mcp", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers=ACCEPT)
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32600), "a batch: 400, -32600", r)
    r = s.request("POST", "/mcp", {"jsonrpc": "1.0", "id": 7, "method": "ping"}, headers=ACCEPT)
    t.eq((r.status, (err(r) or {}).get("code"), r.json.get("id")), (400, -32600, 7),
         "jsonrpc not 2.0: -32600 with the id")
    r = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 8, "method": 5}, headers=ACCEPT)
    t.eq((err(r) or {}).get("code"), -32600, "method not a string: -32600")
    r = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, headers=ACCEPT)
    t.eq((err(r) or {}).get("code"), -32600, "id an object: -32600")
    r = rpc(s, "resources/list")
    t.eq((r.status, (err(r) or {}).get("code"), r.json.get("id")), (200, -32601, N[0]),
         "unknown method: -32601, the id echoed", r)
    r = call(s, "rm_rf", {})
    t.eq((err(r) or {}).get("code"), -32602, "unknown tool: -32602", r)
    r = rpc(s, "tools/call", {"arguments": {}})
    t.eq((err(r) or {}).get("code"), -32602, "tools/call without a name: -32602")
    r = call(s, "run_code", [1, 2])
    t.eq((err(r) or {}).get("code"), -32602, "arguments not an object: -32602")
    r = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": [1]},
                  headers=ACCEPT)
    t.eq((err(r) or {}).get("code"), -32602, "params not an object: -32602")

    # ---- the id echoed as sent (issue 35): a number as its very token,
    # never through a double; a string escaped as all the server writes
    for tok in (b"9007199254740993", b"1e999", b"1.5", b"-7", b"0", b"42"):
        r = s.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % tok,
                      headers=ACCEPT)
        t.eq((r.status, r.body), (200, b'{"jsonrpc":"2.0","id":%s,"result":{}}\n' % tok),
             "id %s: ping answered with the id as sent" % tok.decode(), r)
    r = s.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":9007199254740993,"method":"no/such"}',
                  headers=ACCEPT)
    t.ok(r.body.startswith(b'{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32601,'),
         "id 9007199254740993: an error carries it as sent too", r)
    r = s.request("POST", "/mcp", '{"jsonrpc":"2.0","id":"a\u2028b\u2029c","method":"ping"}'
                  .encode(), headers=ACCEPT)
    t.eq((r.status, r.body), (200, b'{"jsonrpc":"2.0","id":"a\\u2028b\\u2029c","result":{}}\n'),
         "a string id holding U+2028 and U+2029: echoed as \\u2028, \\u2029", r)

    # ---- a key given twice: no request can be read from it (issue 35)
    body = (b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":'
            b'{"name":"run_code","arguments":{"language":"python","code":"print(1)"}}}')
    r = s.request("POST", "/mcp", body, headers=ACCEPT)
    e = err(r) or {}
    t.eq((r.status, e.get("code"), (r.json or {}).get("id", 0), "result" in (r.json or {})),
         (400, -32600, None, False), "\"method\" twice: 400, -32600, id null, not ping's answer", r)
    t.ok('the key "method" twice in one object (byte %d;' % body.rindex(b'"method"')
         in (e.get("message") or ""), "... naming the key and the byte of its repeat", r)
    r = s.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                  b'{"name":"run_code","arguments":{"language":"python","code":"print(1)",'
                  b'"c\u006fde":"print(2)"}}}', headers=ACCEPT)
    t.eq((r.status, (err(r) or {}).get("code")), (400, -32600),
         "a key twice in arguments (one of them escaped): -32600, nothing runs", r)

    # ---- SSE only when asked alone
    r = rpc(s, "ping", headers={"Accept": "text/event-stream"})
    t.eq((r.header("content-type"), r.body), ("text/event-stream",
         b'event: message\ndata: {"jsonrpc":"2.0","id":%d,"result":{}}\n\n' % N[0]),
         "Accept: text/event-stream alone: one message event", r)
    r = rpc(s, "ping", headers={"Accept": None})
    t.eq(r.header("content-type"), "application/json", "no Accept: JSON")

    # ---- methods and the key
    r = s.request("GET", "/mcp", headers=ACCEPT)
    t.eq((r.status, r.header("allow")), (405, "POST"), "GET /mcp: 405, Allow: POST", r)
    r = s.request("DELETE", "/mcp")
    t.eq((r.status, r.header("allow")), (405, "POST"), "DELETE /mcp: 405 (no sessions)")
    r = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, key=None)
    t.eq(r.status, 401, "no key: 401")
    r = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, key="wrong")
    t.eq(r.status, 401, "a wrong key: 401")
    t.eq(s.leftovers(), [], "no run directory left behind")

with Server("--max-concurrent", "1", "--timeout", "30", allowed="python") as s:
    # a slot busy: the refusal as a JSON-RPC error. The busy run waits for
    # a file `go` in its working directory, made once the refusal is in
    # (its --timeout 30 is the backstop).
    import threading
    th = threading.Thread(target=call, args=(s, "run_code", code("python", HOLD_PY)))
    th.start()
    running = running_blocks(s)
    r = call(s, "run_code", code("python", "print(1)"))
    let_go(running)
    th.join()
    t.eq((r.status, (err(r) or {}).get("code"), (err(r) or {}).get("data", {}).get("code")),
         (429, -32000, "rate_limit_exceeded"), "all slots busy: 429 with a JSON-RPC error", r)

t.done()
