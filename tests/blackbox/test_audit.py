#!/usr/bin/env python3
"""The journal audit (SPEC §9): one record per request (every route but
/healthz) with fixed MESSAGE_IDs and the CODELLM_* fields, never the key
or code, read back from a private systemd-journald; and where no journal listens
(a container), the same record as one JSON line on standard error.

The test re-runs itself inside `unshare -m` with a tmpfs on /run, so the
journald it starts and everything it writes vanish with the namespace
(on these machines /run is on disk and shared)."""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

if not reexec_in_mount_ns("CODELLM_AUDIT_INNER"):
    print("ok 1 - journal audit # SKIP needs root and unshare(1)")
    print("1..1")
    sys.exit(1 if MUST_SANDBOX else 0)

ID_RAN = "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
ID_REFUSED = "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"
ID_NOTHING = "2c7e9a1b4d3f4a8c9e6d1b0a5f3c7e92"

T = Tap()
# first no journal at all: a tmpfs on /run of this namespace, no socket
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)
journald = None


class Tagged:
    """The test's Tap, each description prefixed with where records go."""

    def __init__(self, tag):
        self.tag = tag

    def ok(self, cond, desc, diag=None):
        T.ok(cond, "%s: %s" % (self.tag, desc), diag)

    def eq(self, got, want, desc, diag=None):
        T.eq(got, want, "%s: %s" % (self.tag, desc), diag)


def by_id(recs, rid):
    return [r for r in recs if r.get("CODELLM_REQUEST_ID") == rid]


def stderr_records(s):
    """The records a server's handlers wrote to standard error: the
    lines that are JSON objects (every other stderr line is prose)."""
    recs = []
    for ln in s.log_text().splitlines():
        if ln.startswith("{"):
            try:
                recs.append(json.loads(ln))
            except ValueError:
                recs.append({"unparsable": ln})
    return recs


def records(s, until=None, wait=30.0):
    """The records, from the journal when one listens, else from the
    server's standard error; with `until`, read again until it holds (or
    `wait` s passed: a backstop, spent only when a record is missing)."""
    if journald is not None:
        return journal_records(until, wait)
    deadline = time.time() + wait
    while True:
        recs = stderr_records(s)
        if until is None or until(recs) or time.time() >= deadline:
            return recs
        time.sleep(0.05)


TOOLS = [{"type": "function", "function": {"name": n}} for n in ("write_note", "patch_note", "finish")]
SECRET_CODE = "print('c0de-not-in-journal')"


def scenario(t):
    """The same requests and the same checks, wherever records go."""
    with Server() as s:
        runs = {}
        r = s.request("POST", "/v1/chat/completions",
                      {"model": "codellm", "messages": [{"role": "user", "content":
                                                         block("python", SECRET_CODE) + block("bash", "cat")}]},
                      headers={"x-stainless-retry-count": "2"})
        runs["ran"] = r
        runs["refused"] = s.request("GET", "/v1/models", key="wrong-key")
        runs["forbidden"] = s.chat({"model": "codellm", "messages": [
            {"role": "user", "content": "```cobol\nx\n```"}]})
        runs["models"] = s.request("GET", "/v1/models")
        runs["agent"] = s.chat({"model": "codellm", "tools": TOOLS, "messages": [{"role": "user", "content":
                                block("python", "import json\nprint(json.dumps({'changes':["
                                      "{'path':'notes/a.md','content':'x'},{'path':'b c.md','find':'q','replace':'r'}],"
                                      "'answer':'ok'}))")}]})
        runs["timeout"] = s.chat({"model": "codellm", "codellm": {"timeout_s": 1},
                                  "messages": [{"role": "user", "content": block("bash", "sleep 5")}]})
        health = s.request("GET", "/healthz")
        rid = {k: v.header("x-request-id") for k, v in runs.items()}
        recs = records(s, until=lambda rs: all(by_id(rs, i) for i in rid.values()))
        t.ok(recs and all(set(x) >= {"MESSAGE", "MESSAGE_ID", "PRIORITY", "SYSLOG_IDENTIFIER",
                                     "CODELLM_REQUEST_ID", "CODELLM_ROUTE", "CODELLM_STATUS"}
                          for x in recs),
             "every record has the message, its id, priority, identifier, request id, "
             "route and status", recs[:2])
        if journald is not None:
            t.eq(stderr_records(s), [], "standard error repeats no record the journal took")

        t.eq(len([x for x in recs if x.get("CODELLM_ROUTE", "").endswith("/healthz")]), 0,
             "/healthz leaves no record")
        t.eq(len(recs), len(runs), "one record per request (%d)" % len(runs))
        for k, v in runs.items():
            t.eq(len(by_id(recs, rid[k])), 1, "%s: exactly one record, found by the response's x-request-id" % k)

        ran = (by_id(recs, rid["ran"]) or [{}])[0]
        t.eq(ran.get("MESSAGE_ID"), ID_RAN, "a run has the 'ran' MESSAGE_ID")
        t.eq((ran.get("CODELLM_STATUS"), ran.get("CODELLM_ROUTE"), ran.get("CODELLM_MODE"),
              ran.get("CODELLM_MODEL"), ran.get("CODELLM_BLOCKS"), ran.get("CODELLM_LANGS")),
             ("200", "POST /v1/chat/completions", "run", "codellm", "2", "python,bash"),
             "run: status, route, mode, model, blocks, langs")
        code_msg = block("python", SECRET_CODE) + block("bash", "cat")
        t.eq(ran.get("CODELLM_CODE_SHA256"), hashlib.sha256(code_msg.encode()).hexdigest(),
             "run: CODELLM_CODE_SHA256 is the SHA-256 of the code message's text")
        t.eq((ran.get("CODELLM_EXIT_CODE"), ran.get("CODELLM_TIMED_OUT")), ("0", "false"),
             "run: exit code and timed_out")
        t.ok(ran.get("CODELLM_DURATION_MS", "").isdigit(), "run: duration in ms")
        t.ok(ran.get("CODELLM_SANDBOX", "").startswith("native net="), "run: the sandbox said",
             ran.get("CODELLM_SANDBOX"))
        t.eq(ran.get("CODELLM_RETRY_COUNT"), "2", "run: x-stainless-retry-count is recorded")
        t.ok(ran.get("CODELLM_PEER", "").startswith("127.0.0.1:"), "run: the peer", ran.get("CODELLM_PEER"))
        t.eq(ran.get("PRIORITY"), "6", "run: priority info")

        ref = (by_id(recs, rid["refused"]) or [{}])[0]
        t.eq((ref.get("MESSAGE_ID"), ref.get("CODELLM_STATUS"), ref.get("PRIORITY")),
             (ID_REFUSED, "401", "4"), "401: the 'refused' MESSAGE_ID, status, priority warning")
        fb = (by_id(recs, rid["forbidden"]) or [{}])[0]
        t.eq((fb.get("MESSAGE_ID"), fb.get("CODELLM_STATUS")), (ID_REFUSED, "400"),
             "400 (no runnable block): refused, nothing ran")
        mod = (by_id(recs, rid["models"]) or [{}])[0]
        t.eq((mod.get("MESSAGE_ID"), mod.get("CODELLM_STATUS")), (ID_NOTHING, "200"),
             "/v1/models: the 'nothing by design' MESSAGE_ID")
        ag = (by_id(recs, rid["agent"]) or [{}])[0]
        t.eq((ag.get("MESSAGE_ID"), ag.get("CODELLM_MODE"), ag.get("CODELLM_WRITE_PATHS")),
             (ID_RAN, "agent", "notes/a.md\nb c.md"), "agent: mode and the write paths, one per line")
        to = (by_id(recs, rid["timeout"]) or [{}])[0]
        t.eq((to.get("CODELLM_EXIT_CODE"), to.get("CODELLM_TIMED_OUT"), to.get("PRIORITY")),
             ("124", "true", "5"), "timeout: exit 124, timed_out true, priority notice")

        blob = json.dumps(recs)
        t.ok(KEY not in blob and "wrong-key" not in blob, "no record holds the key or a presented bearer")
        t.ok("c0de-not-in-journal" not in blob, "no record holds the code")
        t.ok(health.status == 200, "/healthz still answers")
    # ---- files in and out: names, sizes and digests, never content (issue 16)
    with Server("--timeout", "30") as s:
        secret = b"never-in-the-journal-" + os.urandom(8).hex().encode()
        part = {"type": "file", "file": {"filename": "in.txt", "file_data":
                "data:text/plain;base64," + base64.b64encode(secret).decode()}}
        r = s.chat({"model": "codellm", "messages": [{"role": "user", "content": [
            {"type": "text", "text": block("bash", "mkdir -p out; cp in.txt out/copy.txt; ln -s /etc out/l")}, part]}]})
        digest = hashlib.sha256(secret).hexdigest()
        rid = field(r, "id")
        recs = by_id(records(s, until=lambda rs: any(x.get("CODELLM_REQUEST_ID") == rid for x in rs)), rid)
        rec = recs[0] if recs else {}
        t.eq((rec.get("CODELLM_FILES_IN"), rec.get("CODELLM_FILES_OUT")),
             ("%s %d in.txt" % (digest, len(secret)),
              "%s %d out/copy.txt\n- 0 out/l (omitted: a symbolic link)" % (digest, len(secret))),
             "files in and out: one line each, sha256, size and name")
        t.eq(rec.get("CODELLM_FACE"), "chat", "the record names the face (chat)")
        # the other faces that run code name themselves too
        rr = s.request("POST", "/v1/responses", {"model": "codellm", "input": block("bash", "echo r")})
        rm = s.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "run_code", "arguments": {"language": "bash", "code": "echo m"}}},
            headers={"Accept": "application/json, text/event-stream"})
        rid_r = rr.header("x-request-id")
        rid_m = rm.header("x-request-id")
        faces = {x.get("CODELLM_REQUEST_ID"): (x.get("CODELLM_FACE"), x.get("MESSAGE_ID"))
                 for x in records(s, until=lambda rs: {rid_r, rid_m} <= {x.get("CODELLM_REQUEST_ID") for x in rs})}
        t.eq((rr.status, rm.status, faces.get(rid_r), faces.get(rid_m)),
             (200, 200, ("responses", ID_RAN), ("mcp", ID_RAN)),
             "a /v1/responses run and an MCP tools/call: records of runs naming their faces")
        t.ok(recs and not any(secret.decode() in str(v) for v in rec.values()),
             "… and never their content")


try:
    scenario(Tagged("no journal, stderr"))
    journald = private_journal()
    T.ok(journald is not None, "a private journald is listening")
    scenario(Tagged("journal"))
finally:
    if journald is not None:
        journald.terminate()
        journald.wait(5)
T.done()
