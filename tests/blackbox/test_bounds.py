#!/usr/bin/env python3
"""What a request can make the handler hold and answer is bounded.

An authenticated 8 MiB body of some 700,000 unknown fences cost the
handler about 94 MiB and got a 20 MB answer: every skipped fence was
stored and listed. Now the first --max-skipped-fences (16) are listed and
the rest counted in "skipped_fences_truncated"; the answer stays small
and the handler's memory does not grow with the number of fences. 8 MiB
of tiny JSON values made cJSON build a 330 MiB tree; a text of more than
131072 values is refused before it is parsed. And --max-skipped-fences
has bounds, crossed here.

The handler's peak resident memory is read from a wrapper that runs it
(inetd style) and waits for it (ru_maxrss); not under a sanitizer, whose
shadow memory counts too.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
LIMIT = 8 * 1024 * 1024     # --max-request-bytes, the default
FENCE = "```zz\n```\n"      # one unknown fence: two lines


def fences_body(n, tail="```bash\necho ran\n```\n", model="codellm"):
    return json.dumps({"model": model, "messages": [
        {"role": "user", "content": FENCE * n + tail}]}).encode()


def most_fences():
    """As many fences as fit the default --max-request-bytes."""
    per = len(fences_body(2)) - len(fences_body(1))
    n = (LIMIT - len(fences_body(0))) // per
    while len(fences_body(n)) > LIMIT:
        n -= 1
    return n


def skipped(r):
    c = ext(r) or {}
    return c.get("skipped_fences"), c.get("skipped_fences_truncated")


# a handler that reports its peak resident memory: run through this
# wrapper, which forks it, waits for it and writes ru_maxrss (KiB) to a
# file of its pid, then renames it to RSS_LOG: the file appears whole,
# and only once the handler has exited (the test waits for it, however
# long load makes that take)
wrap_dir = tempfile.mkdtemp(prefix="codellm-rss-")
os.chmod(wrap_dir, 0o755)
RSS_LOG = os.path.join(wrap_dir, "maxrss")
RSS_WRAPPER = os.path.join(wrap_dir, "handler")
with open(RSS_WRAPPER, "w") as f:
    f.write("""#!/usr/bin/python3
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(%r, [%r] + sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
tmp = "%%s.%%d" %% (%r, os.getpid())
with open(tmp, "w") as f:
    f.write("%%d\\n" %% ru.ru_maxrss)
os.rename(tmp, %r)
sys.exit(os.waitstatus_to_exitcode(status))
""" % (HANDLER, HANDLER, RSS_LOG, RSS_LOG))
os.chmod(RSS_WRAPPER, 0o755)


def peak_kib(s, body):
    """The request on server s (RSS_WRAPPER, inetd), and the handler's
    peak resident memory in KiB."""
    s.idle()
    if os.path.exists(RSS_LOG):
        os.unlink(RSS_LOG)
    r = s.request("POST", "/v1/chat/completions", body)
    deadline = time.time() + 30
    while time.time() < deadline and not os.path.exists(RSS_LOG):
        time.sleep(0.02)
    with open(RSS_LOG) as f:
        return r, int(f.read().split()[-1])


N = most_fences()
body = fences_body(N)
t.ok(len(body) <= LIMIT and N > 690000, "the body: %d unknown fences in %d bytes" % (N, len(body)))

with Server(sandbox="off") as s:
    # ---- the default: 16 listed, the rest counted ------------------------------------------
    r = s.chat(json.loads(body))
    listed, more = skipped(r)
    t.eq((r.status, content(r)), (200, "ran\n"), "the block after %d unknown fences runs" % N)
    t.ok(len(r.raw) < 64 * 1024, "… and the whole answer is %d bytes, under 64 KiB" % len(r.raw))
    t.eq(listed, [{"label": "zz", "line": 1 + 2 * i} for i in range(16)],
         "… skipped_fences lists the first 16, with their lines")
    t.eq(more, N - 16, "… skipped_fences_truncated counts the other %d" % (N - 16))

    # no runnable block: the 400 and its "labels seen" are small too
    r = s.chat(json.loads(fences_body(N, tail="")))
    e = r.error() or {}
    t.ok(r.status == 400 and e.get("code") == "no_runnable_block" and
         '(labels seen: "zz")' in e.get("message", "") and len(r.raw) < 4096,
         "%d unknown fences and nothing runnable → a short 400 listing \"zz\" once" % N,
         r.raw[:500])

    # at most 16: the answer as it always was, no new key
    r = s.run(FENCE * 16 + "```bash\necho ok\n```\n")
    c = ext(r) or {}
    t.ok(r.status == 200 and len(c.get("skipped_fences") or []) == 16 and
         "skipped_fences_truncated" not in c and b"skipped_fences_truncated" not in r.body,
         "16 unknown fences: all listed, no skipped_fences_truncated key", r.body[-400:])
    r = s.run(FENCE * 17 + "```bash\necho ok\n```\n")
    t.eq(skipped(r), ([{"label": "zz", "line": 1 + 2 * i} for i in range(16)], 1),
         "17 unknown fences: 16 listed, 1 counted")

    # a long label is cut to 64 bytes, before a character
    label = "x" * 63 + "\u00e9" * 100
    r = s.run("```%s\n```\n```bash\necho ok\n```\n" % label)
    t.eq(skipped(r), ([{"label": "x" * 63, "line": 1}], None),
         "a label of %d bytes is listed as its first 63 (64 would cut a character)"
         % len(label.encode()))

    # ---- cJSON's tree is bounded by a count of values ----------------------------------------
    zeros = b'{"model":"codellm","x":[' + b"0," * ((LIMIT - 200) // 2) + \
        b'0],"messages":[{"role":"user","content":"```bash\\necho ran\\n```"}]}'
    r = s.request("POST", "/v1/chat/completions", zeros)
    e = r.error() or {}
    t.ok(r.status == 400 and e.get("code") == "invalid_json" and
         "more than 131072 JSON values" in e.get("message", ""),
         "%d bytes of [0,0,…] → 400: more than 131072 JSON values" % len(zeros), r.raw[:400])
    t.eq(s.leftovers(), [], "no run directory left")

# ---- --max-skipped-fences --------------------------------------------------------------------
with Server("--max-skipped-fences", "2", sandbox="off") as s:
    r = s.run(FENCE * 5 + "```bash\necho ok\n```\n")
    t.eq((r.status, skipped(r)), (200, ([{"label": "zz", "line": 1}, {"label": "zz", "line": 3}], 3)),
         "--max-skipped-fences 2: two listed, three counted")
with Server("--max-skipped-fences", "0", sandbox="off") as s:
    r = s.run(FENCE * 5 + "```bash\necho ok\n```\n")
    t.eq((r.status, skipped(r)), (200, ([], 5)), "--max-skipped-fences 0: none listed, five counted")
with Server(sandbox="off", env={"CODELLM_MAX_SKIPPED_FENCES": "1"}) as s:
    r = s.run(FENCE * 3 + "```bash\necho ok\n```\n")
    t.eq(skipped(r), ([{"label": "zz", "line": 1}], 2), "CODELLM_MAX_SKIPPED_FENCES=1 works as the flag")
with Server("--max-skipped-fences", "4096", sandbox="off") as s:
    r = s.run(FENCE * 4097 + "```bash\necho ok\n```\n")
    listed, more = skipped(r)
    t.ok(r.status == 200 and len(listed or []) == 4096 and more == 1,
         "--max-skipped-fences 4096, the most: 4096 listed, 1 counted", r.raw[:300])
# (the log line is waited for: it may reach the log after the answer)
for bad in ("4097", "-1", "many", "1e3"):
    with Server("--max-skipped-fences", bad) as s:
        r = s.run("```bash\necho ok\n```\n")
        e = r.error() or {}
        said = "--max-skipped-fences: \"%s\" is not a size between 0 and 4096" % bad
        deadline = time.time() + 20
        while said not in s.log_text() and time.time() < deadline:
            time.sleep(0.02)
        log = s.log_text()
        t.ok(r.status == 503 and e.get("code") == "server_misconfigured" and said in log,
             "--max-skipped-fences %s is a configuration error (503 server_misconfigured, "
             "the log says the bounds)" % bad, "%r\n%s" % (r.raw[:300], log[-500:]))
with Server(env={"CODELLM_MAX_SKIPPED_FENCES": "5000"}) as s:
    r = s.run("```bash\necho ok\n```\n")
    t.eq((r.status, (r.error() or {}).get("code")), (503, "server_misconfigured"),
         "CODELLM_MAX_SKIPPED_FENCES=5000 is a configuration error too")

# ---- debug: the block list is capped the same way ------------------------------------------------
with Server("--debug", "--max-skipped-fences", "3") as d:
    r = d.request("POST", "/debug/blocks", {"body": FENCE * 10 + "```bash\necho\n```\n"}, key=None)
    j = r.json or {}
    t.ok(r.status == 200 and len(j.get("skipped_fences") or []) == 3 and
         j.get("skipped_fences_truncated") == 7 and len(j.get("blocks") or []) == 1,
         "/debug/blocks: 3 skipped fences listed, 7 counted", r.raw[:400])

# ---- the handler's peak memory ----------------------------------------------------------------
if SANITIZE:
    t.skip("peak memory of the handler", "sanitizer build: its shadow memory counts")
else:
    with Server(sandbox="off", inetd=True, handler=RSS_WRAPPER) as s:
        r, small = peak_kib(s, json.dumps({"model": "codellm", "messages": [
            {"role": "user", "content": "```bash\necho ran\n```"}]}).encode())
        t.ok(r.status == 200 and small < 16 * 1024, "a small request: peak %d KiB" % small)
        r, kib = peak_kib(s, body)
        t.ok(r.status == 200 and kib < 32 * 1024,
             "%d unknown fences (8 MiB): peak %.1f MiB, under 32 MiB (it was 94)" % (N, kib / 1024),
             r.raw[:300])
        r, kib = peak_kib(s, zeros)
        t.ok(r.status == 400 and kib < 24 * 1024,
             "8 MiB of [0,0,…]: refused at peak %.1f MiB, under 24 MiB (it was 331)" % (kib / 1024),
             r.raw[:300])

shutil.rmtree(wrap_dir, ignore_errors=True)
t.done()
