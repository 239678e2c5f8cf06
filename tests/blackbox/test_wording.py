#!/usr/bin/env python3
"""Error messages worded as OpenAI words the same conditions (issue 15;
codellm.7 "ERROR MESSAGES"): clients that match on the text (LiteLLM
keys a 401 on "Incorrect API key provided", a context-window error on
"maximum context length") classify codellm's refusals as they would
OpenAI's. Each message starts with OpenAI's sentence and carries
codellm's own detail after "codellm:"; status, type and code are
unchanged."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()


def check(r, status, typ, code, starts, detail, desc):
    e = r.error() or {}
    msg = e.get("message") or ""
    t.ok(r.status == status and e.get("type") == typ and e.get("code") == code and
         msg.startswith(starts) and "codellm: " + detail in msg,
         "%s: %d %s/%s, %r…, then codellm's detail" % (desc, status, typ, code, starts),
         r.body[:600])


with Server("--max-request-bytes", "2000", "--max-concurrent", "1", "--timeout", "30") as s:
    req = {"model": "codellm", "messages": [{"role": "user", "content": block("bash", "echo hi")}]}
    check(s.chat(req, key=None), 401, "invalid_request_error", "invalid_api_key",
          "You didn't provide an API key. You need to provide your API key in an "
          "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          "no Authorization header was sent", "no key")
    check(s.chat(req, key="sk-not-the-key"), 401, "invalid_request_error", "invalid_api_key",
          "Incorrect API key provided.", "the Authorization header does not carry",
          "a wrong key")
    check(s.chat(req, key=None, headers={"Authorization": "Basic dTpw"}), 401,
          "invalid_request_error", "invalid_api_key", "Incorrect API key provided.",
          "the Authorization header does not carry", "another scheme")
    r = Resp(raw(s.port, build_request("GET", "/v1/models/gpt-4o")))
    check(r, 404, "invalid_request_error", "model_not_found",
          "The model `gpt-4o` does not exist or you do not have access to it.",
          "GET /v1/models lists", "an unknown model")
    big = dict(req, messages=[{"role": "user", "content": "x" * 3000 + block("bash", "echo hi")}])
    check(s.chat(big), 413, "invalid_request_error", "request_too_large",
          "This model's maximum context length is 2000 bytes. However, your request is ",
          "the request body exceeds --max-request-bytes", "a request over --max-request-bytes")
    t.ok("Please reduce the length of the messages." in ((s.chat(big).error() or {}).get("message") or ""),
         "… and asks to reduce the length of the messages, as OpenAI does")

    # the slot taken by a slow run: the next one is rate limited. The slow
    # block waits for a file `go` in its working directory, made once the
    # next run has its answer (the run's --timeout 30 is the backstop).
    slow = {}
    th = threading.Thread(target=lambda: slow.setdefault("r", s.run(block(
        "bash", HOLD + "; echo slow"))))
    th.start()
    running = running_blocks(s)
    busy = s.run(block("bash", "echo fast")) if running else None
    let_go(running)
    th.join()
    check(busy or Resp(b""), 429, "rate_limit_error", "rate_limit_exceeded",
          "Rate limit reached for codellm on concurrent runs: Limit 1, Used 1, Requested 1. "
          "Please try again in 1s.", "all run slots are busy (--max-concurrent)",
          "every run slot busy")
    t.eq(content(slow.get("r")) if slow.get("r") else None, "slow\n", "… while the slow run answers")

t.done()
