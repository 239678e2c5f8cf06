#!/usr/bin/env python3
"""The request surface (SPEC §6, THREATS.md #16 and #11): what a web page,
a log reader and an unauthenticated client can make the handler do.

  1. A browser's request (Origin, Sec-Fetch-Site) is refused on every
     route, with a key or without (403, nothing runs, one 'refused'
     record); the debug page's own origin passes on the debug routes.
  2. Every POST body is Content-Type: application/json (415 otherwise).
  3. With --no-auth the loopback Host rule holds on every route.
  4. No control byte from a request reaches the journal or stderr:
     path, model, header values, write paths, each read back from a
     private systemd-journald, escaped, with the original length.
  5. A POST without a valid key is refused from the head alone.
  6. /healthz reuses its sandbox check for --healthz-cache seconds.
  7. Slot files and the slot directory are private to the service user.
  8. Out of memory reading a request is 503 server_overloaded with
     x-should-retry: true, never a 4xx.

Runs inside `unshare -m` with a tmpfs /run (its own journald)."""
import json
import os
import shutil
import stat
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

if not reexec_in_mount_ns("CODELLM_SURFACE_INNER"):
    print("ok 1 - request surface # SKIP needs root and unshare(1)")
    print("1..1")
    sys.exit(1 if MUST_SANDBOX else 0)

ID_RAN = "5a1f3c0e8b7d4e2a9c6b1d0f3e7a2c41"
ID_REFUSED = "8d2e6b4a1c9f4d7e8a3b5c0d2f1e6a73"

t = Tap()
journald = private_journal()
t.ok(journald is not None, "a private journald is listening")

CHAT = {"model": "bash", "messages": [{"role": "user", "content": block("bash", "echo ran-$((6*7))")}]}
BODY = json.dumps(CHAT).encode()


def req(s, method, path, headers, body=None, key=KEY):
    """A raw request with exactly the given headers (plus Host, the key,
    Content-Length): nothing added behind the test's back."""
    h = "%s %s HTTP/1.1\r\n" % (method, path)
    if not any(k.lower() == "host" for k, _ in headers):
        h += "Host: 127.0.0.1:%d\r\n" % s.port
    if key:
        h += "Authorization: Bearer %s\r\n" % key
    h += "".join("%s: %s\r\n" % kv for kv in headers)
    if body is not None:
        h += "Content-Length: %d\r\n" % len(body)
    return s.raw(h.encode() + b"\r\n" + (body or b""))


def records_for(rid):
    """The journal records of request `rid`, read again until there is
    one (each goes out after its answer's end), 30 s at most."""
    mine = lambda recs: [r for r in recs if r.get("CODELLM_REQUEST_ID") == rid]  # noqa: E731
    return mine(journal_records(until=mine, wait=30))


def field_bytes(v):
    """A journal JSON field: a string, or an array of byte values when
    journalctl found it binary."""
    if isinstance(v, list) and all(isinstance(b, int) for b in v):
        return bytes(v)
    return (v or "").encode() if isinstance(v, str) else json.dumps(v).encode()


def refused(r, status, code, desc, nothing_ran=True):
    t.eq((r.status, (r.error() or {}).get("code")), (status, code), desc, r.raw[:400])
    if nothing_ran:
        t.ok(b"ran-42" not in r.raw, desc + ": nothing ran")
        rid = r.header("x-request-id")
        recs = records_for(rid)
        t.eq([(x.get("MESSAGE_ID"), x.get("CODELLM_STATUS")) for x in recs], [(ID_REFUSED, str(status))],
             desc + ": one 'refused' record")


CT = ("Content-Type", "application/json")

try:
    # --- 1. the browser guard ------------------------------------------------
    for label, args, key in (("--no-auth", ("--no-auth",), None), ("with a key", (), KEY)):
        with Server(*args, key=key is not None) as s:
            # the reproduction: a web page's simple request
            r = req(s, "POST", "/v1/chat/completions",
                    [("Content-Type", "text/plain"), ("Origin", "https://evil.example"),
                     ("Sec-Fetch-Site", "cross-site")], BODY, key=key)
            refused(r, 403, "cross_site_request", "[%s] the drive-by POST (text/plain, Origin, cross-site) → 403" % label)
            r = req(s, "POST", "/v1/chat/completions", [CT, ("Origin", "https://evil.example")], BODY, key=key)
            refused(r, 403, "cross_origin_request", "[%s] Origin alone, JSON body → 403" % label)
            for site in ("cross-site", "same-site", "CROSS-SITE", "nonsense"):
                r = req(s, "POST", "/v1/chat/completions", [CT, ("Sec-Fetch-Site", site)], BODY, key=key)
                refused(r, 403, "cross_site_request", "[%s] Sec-Fetch-Site: %s → 403" % (label, site))
            r = req(s, "POST", "/v1/chat/completions", [CT, ("Origin", "null")], BODY, key=key)
            refused(r, 403, "cross_origin_request", "[%s] Origin: null (a sandboxed frame) → 403" % label)
            r = req(s, "POST", "/v1/chat/completions",
                    [CT, ("Sec-Fetch-Site", "none"), ("Sec-Fetch-Site", "cross-site")], BODY, key=key)
            refused(r, 403, "cross_site_request", "[%s] two Sec-Fetch-Site fields → 403" % label)
            r = req(s, "GET", "/v1/models", [("Origin", "http://127.0.0.1:%d" % s.port)], key=key)
            refused(r, 403, "cross_origin_request",
                    "[%s] GET /v1/models with even this server's own origin → 403 (no page here)" % label)
            r = req(s, "GET", "/healthz", [("Sec-Fetch-Site", "cross-site")], key=None)
            refused(r, 403, "cross_site_request", "[%s] /healthz from a web page → 403, recorded" % label)
            for site in ("none", "same-origin"):
                r = req(s, "POST", "/v1/chat/completions", [CT, ("Sec-Fetch-Site", site)], BODY, key=key)
                t.eq((r.status, content(r)), (200, "ran-42\n"), "[%s] Sec-Fetch-Site: %s runs" % (label, site))
            r = req(s, "POST", "/v1/chat/completions", [CT], BODY, key=key)
            t.eq((r.status, content(r)), (200, "ran-42\n"), "[%s] an API client's request (no Origin) runs" % label)

    # the debug routes: the page's own origin passes, no other
    with Server("--debug") as s:
        own = "http://127.0.0.1:%d" % s.port
        md = CHAT["messages"][0]["content"]
        pipe = json.dumps({"body": md}).encode()
        r = req(s, "POST", "/debug/run-pipeline",
                [CT, ("Origin", own), ("Sec-Fetch-Site", "same-origin")], pipe)
        t.eq(r.status, 200, "[debug] the page's own call (Origin = http://Host, same-origin) runs", r.raw[:300])
        r = req(s, "POST", "/debug/run-pipeline",
                [CT, ("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site")], pipe)
        refused(r, 403, "cross_site_request", "[debug] run-pipeline from another site → 403")
        r = req(s, "POST", "/debug/run-pipeline", [CT, ("Origin", "https://evil.example")], pipe)
        refused(r, 403, "cross_origin_request", "[debug] run-pipeline with a foreign Origin → 403")
        r = req(s, "POST", "/debug/run-block",
                [CT, ("Origin", "http://localhost:%d" % s.port)], json.dumps({"body": md, "block": 0}).encode())
        refused(r, 403, "cross_origin_request", "[debug] an Origin naming another loopback name than Host → 403")
        r = req(s, "GET", "/", [("Sec-Fetch-Site", "cross-site")], key=None)
        refused(r, 403, "cross_site_request", "[debug] the page opened from a link on another site → 403")
        r = req(s, "GET", "/", [("Sec-Fetch-Site", "none")], key=None)
        t.eq(r.status, 200, "[debug] the page opened by typing its address → 200")

    # --- 2. JSON bodies only -------------------------------------------------
    with Server("--debug") as s:
        for ctype in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                      "application/json-patch+json", "application/jsonx", "text/json"):
            hs = [("Content-Type", ctype)] if ctype else []
            r = req(s, "POST", "/v1/chat/completions", hs, BODY)
            refused(r, 415, "unsupported_media_type", "POST with Content-Type %s → 415" % ctype)
        r = req(s, "POST", "/v1/chat/completions", [CT, ("Content-Type", "text/plain")], BODY)
        refused(r, 415, "unsupported_media_type", "two Content-Type fields → 415")
        r = req(s, "POST", "/debug/blocks", [("Content-Type", "text/plain")], json.dumps({"body": CHAT["messages"][0]["content"]}).encode(),
                key=None)
        t.eq((r.status, (r.error() or {}).get("code")), (415, "unsupported_media_type"), "/debug/blocks: text/plain → 415")
        for ctype in ("application/json", "application/json; charset=utf-8", "Application/JSON",
                      "application/json ;charset=UTF-8"):
            r = req(s, "POST", "/v1/chat/completions", [("Content-Type", ctype)], BODY)
            t.eq((r.status, content(r)), (200, "ran-42\n"), "Content-Type: %s runs" % ctype)
        r = req(s, "POST", "/v1/chat/completions", [("Content-Type", "text/plain")], BODY, key="wrong")
        t.eq(r.status, 401, "a wrong key is refused before the media type (401, not 415)")

    # --- 3. --no-auth: loopback Host on every route ------------------------
    with Server("--no-auth", key=False) as s:
        for path in ("/v1/models", "/healthz", "/v1/models/bash"):
            r = req(s, "GET", path, [("Host", "evil.example:%d" % s.port)], key=None)
            t.eq((r.status, (r.error() or {}).get("code")), (403, "host_not_allowed"),
                 "--no-auth: GET %s with Host evil.example → 403 (DNS rebinding)" % path)
        r = req(s, "POST", "/v1/chat/completions", [CT, ("Host", "evil.example")], BODY, key=None)
        refused(r, 403, "host_not_allowed", "--no-auth: a run with Host evil.example → 403")
        for host in ("localhost:%d" % s.port, "127.0.0.1", "[::1]:1"):
            r = req(s, "GET", "/v1/models", [("Host", host)], key=None)
            t.eq(r.status, 200, "--no-auth: Host %s → 200" % host)
    with Server() as s:
        r = req(s, "GET", "/v1/models", [("Host", "codellm.example.net")])
        t.eq(r.status, 200, "with a key, any Host name is served (a remote client)")

    # --- 4. no control byte into the journal or stderr --------------------------
    evil_path = "/v1/models/x%0AFAKE=1%0D%1B[31mred%7F%C2%9B"
    with Server("--no-auth", key=False) as s:
        r = req(s, "GET", evil_path, [], key=None)
        t.eq(r.status, 404, "an injecting model path → 404", r.raw[:300])
        rid_path = r.header("x-request-id")
        evil_model = "m\nFAKE_FIELD=1\r\x1b[2J\x7f\u009b\u2028end"
        r = s.chat(dict(CHAT, model=evil_model), key=None)
        rid_model = r.header("x-request-id")
        t.ok(r.status in (200, 400, 404), "a request with a control-byte model is answered", r.raw[:300])
        tools = [{"type": "function", "function": {"name": n}} for n in ("write_note", "patch_note", "finish")]
        r = s.chat({"model": "codellm", "tools": tools, "messages": [{"role": "user", "content": block(
            "python", "import json\nprint(json.dumps({'changes':[{'path':'a\\nFAKE=1\\x1b[1m.md','content':'x'},"
            "{'path':'ok.md','content':'y'}],'answer':'ok'}))")}]}, key=None)
        rid_agent = r.header("x-request-id")
        t.ok(r.status in (200, 422), "an agent run writing a control-byte path is answered", r.raw[:300])
        r = req(s, "GET", "/v1/models", [("Sec-Fetch-Site", "x\x1b[1m")], key=None)
        t.eq(r.status, 400, "a header value with ESC is malformed HTTP (400): it never reaches a log")
        r = req(s, "GET", "/v1/models", [("Sec-Fetch-Site", "x\u009b[1m")], key=None)
        rid_hdr = r.header("x-request-id")
        t.eq(r.status, 403, "a Sec-Fetch-Site value with a C1 CSI (obs-text) → 403", r.raw[:300])
        r = req(s, "GET", "/v1/models", [("Origin", "http://x\u009b2J\u0085")], key=None)
        rid_origin = r.header("x-request-id")
        t.eq(r.status, 403, "an Origin with C1 controls → 403")
        r = req(s, "POST", "/v1/chat/completions", [("Content-Type", "text/\u009b1m")], BODY, key=None)
        rid_ctype = r.header("x-request-id")
        t.eq(r.status, 415, "a Content-Type with a C1 control → 415")
        r = req(s, "GET", "/v1/models/x%00y", [], key=None)
        t.eq(r.status, 400, "a NUL in the path (%00) is refused as an invalid target")
        r = s.chat(dict(CHAT, model="a\u0000FAKE=1"), key=None)
        rid_nul = r.header("x-request-id")
        t.eq(r.status, 400, "a NUL in the model (\\u0000) is refused")
        log = s.log_text()
    with Server(key=False) as s:
        r = req(s, "GET", evil_path, [], key=None)
        t.eq((r.status, (r.error() or {}).get("code")), (503, "api_key_not_configured"),
             "no key configured: the injecting path → 503, logged to stderr")
        rid_nokey = r.header("x-request-id")
        log += s.log_text()
    recs = {k: records_for(v) for k, v in (("path", rid_path), ("model", rid_model), ("agent", rid_agent),
                                             ("header", rid_hdr), ("nokey", rid_nokey),
                                             ("origin", rid_origin), ("ctype", rid_ctype), ("nul", rid_nul))}
    for k, v in recs.items():
        t.eq(len(v), 1, "control bytes (%s): exactly one record" % k)
    for k, v in recs.items():
        for rec in v:
            for name, val in rec.items():
                if not (name.startswith("CODELLM_") or name == "MESSAGE"):
                    continue
                b = field_bytes(val)
                if name == "CODELLM_WRITE_PATHS":
                    b = b.replace(b"\n", b"")   # the separator, one path per line
                bad = [c for c in b if c < 0x20 or c == 0x7f] + \
                      [i for i in range(len(b) - 1) if b[i] == 0xc2 and 0x80 <= b[i + 1] <= 0x9f]
                t.ok(not bad and b"\xe2\x80\xa8" not in b, "control bytes (%s): %s carries none" % (k, name), b[:200])
            t.ok(not any(n.startswith("FAKE") for n in rec), "control bytes (%s): no forged field" % k)
    route = field_bytes(recs["path"][0].get("CODELLM_ROUTE")).decode() if recs["path"] else ""
    t.eq(route, "GET /v1/models/x\\x0aFAKE=1\\x0d\\x1b[31mred\\x7f\\xc2\\x9b [31 bytes]",
         "the path: escaped as \\xNN, its original length shown")
    model = field_bytes(recs["model"][0].get("CODELLM_MODEL")).decode() if recs["model"] else ""
    t.eq(model, "m\\x0aFAKE_FIELD=1\\x0d\\x1b[2J\\x7f\\xc2\\x9b\\xe2\\x80\\xa8end [28 bytes]",
         "the model: escaped (C1, U+2028 too), original length")
    if recs["agent"] and "CODELLM_WRITE_PATHS" in recs["agent"][0]:
        wp = field_bytes(recs["agent"][0]["CODELLM_WRITE_PATHS"]).decode()
        t.eq(wp, "a\\x0aFAKE=1\\x1b[1m.md [15 bytes]\nok.md", "the write paths: each escaped, one per line")
    else:
        t.ok(recs["agent"] and recs["agent"][0].get("CODELLM_STATUS") == "422",
             "the agent run with a control-byte path was refused (nothing to record)", recs["agent"])
    lines = log.splitlines()
    t.ok(not any(ln.startswith(("FAKE", "\r")) or any(c in ln for c in "\x00\x1b\x7f\x85\x9b\u2028")
                 for ln in lines),
         "stderr: no forged line, no NUL, ESC, DEL or C1", [ln for ln in lines if "FAKE" in ln])
    t.ok(any("Origin: http://x\\xc2\\x9b2J\\xc2\\x85 [" in ln for ln in lines),
         "stderr: a refused Origin is quoted escaped", [ln for ln in lines if "Origin" in ln][:3])
    t.ok(any("x\\x0aFAKE=1" in ln for ln in lines), "stderr: the refused path is logged escaped",
         [ln for ln in lines if "FAKE" in ln][:3])

    # --- 5. no key: refused from the head, body never read ---------------
    with Server("--body-timeout", "60") as s:
        head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Content-Length: 8000000\r\n\r\n").encode()
        r = s.raw(head, timeout=30)
        t.eq((r.status, (r.error() or {}).get("code")), (401, "invalid_api_key"),
             "a POST without a key announcing 8 MB gets 401 without sending a byte of its body (not 408)")
        r = s.raw(head.replace(b"Host", b"Authorization: Bearer nope\r\nHost"), timeout=30)
        t.eq(r.status, 401, "the same with a wrong key: 401 from the head alone")
        r = s.raw(head.replace(b"application/json", b"text/plain").replace(
            b"Host", b"Authorization: Bearer %s\r\nHost" % KEY.encode()), timeout=30)
        t.eq(r.status, 415, "with the key but text/plain: 415 from the head alone")

    # --- 6. /healthz's check, cached ------------------------------------------
    with Server("--healthz-cache", "3600") as s:
        a = s.request("GET", "/healthz", key=None)
        b = s.request("GET", "/healthz", key=None)
        at = lambda r: (r.json or {}).get("checked_at_ms")  # noqa: E731
        t.ok(a.status == 200 and isinstance(at(a), int), "/healthz says when the sandbox was checked", a.raw[:300])
        t.eq(at(b), at(a), "--healthz-cache 3600: the second /healthz reuses the first check")
        t.eq((b.json or {}).get("sandbox"), (a.json or {}).get("sandbox"), "the same sandbox object")
        cache = os.path.join(s.slots, "healthz.cache")
        st = os.lstat(cache) if os.path.exists(cache) else None
        t.ok(st is not None and stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
             "the cached check is a 0600 file in the slot directory", st)
        # a cache file that is not ours, or others may write, is never trusted
        for owner, mode in ((NOBODY, 0o600), (0, 0o664)):
            if os.path.exists(cache):
                os.unlink(cache)
            with open(cache, "w") as f:
                f.write('%d\n1\n{"forged":true}' % (time.time() * 1000))
            os.chown(cache, owner, owner)
            os.chmod(cache, mode)
            c = s.request("GET", "/healthz", key=None)
            t.ok(c.status == 200 and "forged" not in c.raw.decode("latin1"),
                 "a cache file owned by uid %d, mode %o, is ignored" % (owner, mode), c.raw[:300])
    with Server("--healthz-cache", "0") as s:
        a = s.request("GET", "/healthz", key=None)
        b = s.request("GET", "/healthz", key=None)
        t.ok(at(a) != at(b), "--healthz-cache 0: every /healthz checks afresh", (at(a), at(b)))
        t.ok(not os.path.exists(os.path.join(s.slots, "healthz.cache")), "--healthz-cache 0 writes no file")
    for bad in ("-1", "86401", "x"):
        with Server("--healthz-cache", bad) as s:
            r = s.request("GET", "/healthz", key=None)
            t.eq((r.status, (r.error() or {}).get("code")), (503, "server_misconfigured"),
                 "--healthz-cache %s is a configuration error" % bad)

    # --- 7. private slots --------------------------------------------------------
    top = tempfile.mkdtemp(prefix="codellm-slots-")
    sub = os.path.join(top, "newslots")
    with Server(env={"CODELLM_RUNTIME_DIR": sub}) as s:
        r = s.run(block("bash", "echo hi"))
        t.eq(r.status, 200, "a run with a fresh slot directory")
        st = os.stat(sub)
        t.eq(oct(stat.S_IMODE(st.st_mode)), oct(0o700), "the handler creates the slot directory 0700")
        modes = {n: oct(stat.S_IMODE(os.stat(os.path.join(sub, n)).st_mode)) for n in os.listdir(sub)
                 if n.startswith("slot.")}
        t.ok(modes and set(modes.values()) == {oct(0o600)}, "slot files are 0600", modes)
        for n in modes:
            os.chmod(os.path.join(sub, n), 0o644)
        r = s.run(block("bash", "echo hi"))
        t.eq(oct(stat.S_IMODE(os.stat(os.path.join(sub, "slot.0")).st_mode)), oct(0o600),
             "a slot file left 0644 is made private again")
        os.chown(os.path.join(sub, "slot.0"), NOBODY, NOBODY)
        r = s.run(block("bash", "echo hi"))
        t.eq((r.status, (r.error() or {}).get("code")), (503, "server_misconfigured"),
             "a slot file owned by another user is refused (503), never used", r.raw[:300])
    shutil.rmtree(top, ignore_errors=True)
    with unprivileged_server() as s:
        r = s.run(block("bash", "echo hi"))
        t.eq(r.status, 200, "a handler running as nobody takes its slot", r.raw[:300])
        own = {n: (os.stat(os.path.join(s.slots, n)).st_uid, oct(stat.S_IMODE(os.stat(os.path.join(s.slots, n)).st_mode)))
               for n in os.listdir(s.slots) if n.startswith("slot.")}
        t.ok(own and all(v == (NOBODY, oct(0o600)) for v in own.values()),
             "its slot files belong to it, 0600", own)

    # --- 8. out of memory reading a request ----------------------------------------
    # ASan reserves terabytes of shadow address space: RLIMIT_AS cannot
    # bound a sanitizer build, so make sanitize skips these (make check runs them)
    if SANITIZE:
        t.skip("out of memory reading a request: 503 server_overloaded", "a sanitizer build cannot run under RLIMIT_AS")
    else:
        w = handler_wrapper(["prlimit", "--as=%d" % (64 << 20), "--"])
        with Server("--max-request-bytes", "64M", handler=w) as s:
            body = b'{"model":"bash","messages":[{"role":"user","content":"' + b"a" * (60 << 20) + b'"}]}'
            r = s.request("POST", "/v1/chat/completions", body)
            t.eq((r.status, (r.error() or {}).get("code"), r.header("x-should-retry")),
                 (503, "server_overloaded", "true"),
                 "no memory for the body: 503 server_overloaded, x-should-retry: true", r.raw[:400])
        w = handler_wrapper(["prlimit", "--as=%d" % (80 << 20), "--"])
        with Server("--max-request-bytes", "64M", handler=w) as s:
            r = s.request("POST", "/v1/chat/completions", body)
            t.eq((r.status, (r.error() or {}).get("code"), r.header("x-should-retry")),
                 (503, "server_overloaded", "true"),
                 "no memory to parse the JSON: 503 server_overloaded, never 400 invalid_json", r.raw[:400])
    remove_wrappers()
finally:
    if journald:
        journald.terminate()
        journald.wait()
t.done()
