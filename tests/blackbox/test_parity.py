#!/usr/bin/env python3
"""Parity (seed 000, Phase 3): the same role note gives the same applied
changes through codellm's agent mode (tool calls, fleet's new path) and
through the old in-process contract (the last block's stdout read as
{"changes","answer"}), including the apply-error path (a patch whose find
text is absent fails both ways) and scope (a write outside write_patterns
is refused both ways).

Both paths are tests/agent/reference_client.py; the roles are
tests/agent/roles/*.md; each runs both ways from the same starting store
against one handler (--sandbox native, the default).
"""
import copy
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(os.path.dirname(HERE), "agent")
sys.path.insert(0, HERE)
sys.path.insert(0, AGENT)
from harness import *  # noqa: E402,F401,F403
import reference_client as rc  # noqa: E402

t = Tap()
T_START = time.time()

INBOX = "inbox/2026-07-14 caf\u00e9 \u2615.md"
STORE0 = {
    "index.md": "# Index\n\n- [[old]]\n",
    "concepts/old.md": "Old concept.\nstatus: draft\n",
    INBOX: "Met Zo\u00eb about the \U0001F680 launch.\r\nTODO: follow up\n",
    "private/secret.md": "do not touch\n",
}
FROZEN = copy.deepcopy(STORE0)
BAG = rc.make_bag(STORE0, changed=[INBOX, "index.md"], attached=["concepts/old.md"])


UNICODE_TEXT = ("emoji \U0001F680\U00010348 CRLF\r\nCR\rtab\t\"quotes\" back\\slash "
                "sep\u2028para\u2029 ctl\x01\x1f\x7f bom\ufeff end")
inbox_sum = INBOX + "\n%d chars, sha256 %s\nfirst line: %s\nat 2026-07-14T09:30:00Z depth 1\n" % (
    len(STORE0[INBOX]), hashlib.sha256(STORE0[INBOX].encode()).hexdigest(),
    STORE0[INBOX].splitlines()[0])
index_sum = "index.md\n%d chars, sha256 %s\nfirst line: # Index\nat 2026-07-14T09:30:00Z depth 1\n" % (
    len(STORE0["index.md"]), hashlib.sha256(STORE0["index.md"].encode()).hexdigest())

# role file → (error key or None, answer, final store, number of changes applied)
EXPECT = {
    "01-write-concepts.md": (None, "seeded 2 concepts", dict(
        STORE0, **{"concepts/alpha.md": "# Alpha\n\nFirst letter.\n",
                   "concepts/beta.md": "# Beta\n\nSecond letter.\n"}), 2),
    "02-patch-index.md": (None, "linked", dict(
        STORE0, **{"index.md": "# Index\n\n- [[old]]\n- [[alpha]]\n",
                   "concepts/old.md": "Old concept.\nstatus: done\n"}), 2),
    "03-mixed-pipeline.md": (None, "added gamma, delta", dict(
        STORE0, **{"concepts/gamma.md": "# Gamma\n\nThird letter.\nsee: [[delta]], TBD\n",
                   "concepts/delta.md": "# Delta\n\nFourth letter.\nsee: TBD, TBD\n",
                   "index.md": "# Index\n\n- [[old]]\n- [[gamma]]\n- [[delta]]\n"}), 4),
    "04-zero-changes.md": (None, "nothing to do today", STORE0, 0),
    "05-absent-find.md": (("apply", None), None, STORE0, 0),
    "06-out-of-scope.md": (("scope", None), None, STORE0, 0),
    "07-bag-reader.md": (None, "2 changed, 1 attached", dict(
        STORE0, **{"summaries/" + INBOX: inbox_sum, "summaries/index.md": index_sum,
                   "summaries/bag.json": BAG}), 3),
    # JS's text.length counts UTF-16 code units
    "08-unicode-node.md": (None, "\u2713 %d" % (len(UNICODE_TEXT.encode("utf-16-le")) // 2), dict(
        STORE0, **{"concepts/\u00fcn\u00efc\u00f8d\u00e9 \U0001F389.md": UNICODE_TEXT,
                   INBOX: STORE0[INBOX].replace("Zo\u00eb", "Zo\u00eb \U0001F469\u200d\U0001F4BB\t\"Z\"\\", 1)}), 2),
    "09-default-tools.md": (None, "sh done", dict(
        STORE0, **{"concepts/sh.md": "from sh\n", "index.md": "# Index (sh)\n\n- [[old]]\n"}), 2),
}


def errkey(e):
    return None if e is None else e.key()


# ---- the client's own pieces (no server) ------------------------------------------------
roles = {os.path.basename(p): rc.load_role(p) for p in sorted(glob.glob(os.path.join(AGENT, "roles", "*.md")))}
t.ok(6 <= len(roles) <= 10 and set(EXPECT) <= set(roles), "%d role notes in tests/agent/roles" % len(roles),
     sorted(roles))
t.eq((roles["01-write-concepts.md"].write_patterns, roles["01-write-concepts.md"].tools),
     (["concepts/*.md", "index.md"], ["write_note", "patch_note", "finish"]),
     "frontmatter: a block list of write_patterns and a flow list of tools")
t.eq((roles["04-zero-changes.md"].tools, roles["04-zero-changes.md"].write_patterns,
      roles["09-default-tools.md"].tools, roles["07-bag-reader.md"].write_patterns),
     (["finish"], [], ["write_note", "patch_note", "finish"], ["summaries/**"]),
     "tools: [finish] kept; no tools line → the default three; quoted patterns unquoted")
t.eq([rc.in_scope(p, ["concepts/*.md", "summaries/**", "a/**/z.md"]) for p in
      ("concepts/a.md", "concepts/sub/a.md", "concepts/a.txt", "summaries/x/y/z", "a/z.md", "a/b/c/z.md",
       "/concepts/a.md", "concepts/../private/secret.md", "summaries/../private/x")],
     [True, False, False, True, True, True, False, False, False],
     "write_patterns globs: * stays in one segment, ** crosses, absolute and .. are never in scope")
st, ap, err = rc.apply(STORE0, [{"op": "write", "path": "concepts/n.md", "content": "n"},
                                {"op": "patch", "path": "concepts/missing.md", "find": "x", "replace": "y"}],
                       ["concepts/*.md"])
t.ok(err is not None and err.kind == "apply" and st == STORE0 and ap == [],
     "apply: a patch of a missing note is an apply error and nothing applies", repr(err))
st, ap, err = rc.apply(STORE0, [{"op": "patch", "path": "index.md", "find": "[[", "replace": "<<"},
                                {"op": "patch", "path": "index.md", "find": "- <<old]]", "replace": "- done"}],
                       ["index.md"])
t.eq((st["index.md"], len(ap), err), ("# Index\n\n- done\n", 2, None),
     "apply: patches replace the first occurrence, in order, each seeing the last")

payload = rc.render_request(roles["07-bag-reader.md"], BAG)
m = payload["messages"]
t.ok(len(m) == 3 and m[0]["role"] == "system" and m[0]["content"].startswith("You are a scoped trip2g micro-agent")
     and m[0]["content"].endswith("\n" + roles["07-bag-reader.md"].body) and "```" not in m[0]["content"].split("\n")[0]
     and m[1] == {"role": "system", "name": "fleet_input", "content": BAG}
     and m[2] == {"role": "user", "content": "Begin."},
     "the rendered request is the seed's: wrapper + role body, fleet_input bag, \"Begin.\"", json.dumps(m)[:600])
t.eq([x["function"]["name"] for x in payload["tools"]], ["write_note", "finish"],
     "tools are the role's own (write_note, finish), with JSON-schema parameters")
t.ok("tools" not in rc.render_request(roles["07-bag-reader.md"], BAG, with_tools=False),
     "the in-process path's request is the same without tools (run mode)")
bag = json.loads(BAG)
t.eq((sorted(bag), bag["depth"], bag["changed_files"][0]),
     (["attached_notes", "changed_files", "depth", "now"], 1, {"path": INBOX, "content": STORE0[INBOX]}),
     "the delivery bag carries changed_files, attached_notes, depth, now (note content, not just paths)")

# ---- both ways --------------------------------------------------------------------------
with Server() as s:
    base = "http://127.0.0.1:%d" % s.port
    results = {}
    for name in sorted(EXPECT):
        role = roles[name]
        a = rc.run_agent(role, STORE0, base, KEY, bag=BAG)
        b = rc.run_inprocess(role, STORE0, base, KEY, bag=BAG)
        results[name] = (a, b)
        want_err, want_answer, want_store, want_n = EXPECT[name]
        t.eq(a[1], b[1], "%s: identical applied changes (%d)" % (name, len(a[1])))
        t.ok(a[0] == b[0] and a[0] == want_store,
             "%s: identical final stores, and the expected one" % name,
             "agent:     %r\ninprocess: %r\nwant:      %r" % (a[0], b[0], want_store))
        t.ok(errkey(a[3]) == errkey(b[3]) == want_err and a[2] == b[2] == want_answer
             and len(a[1]) == want_n,
             "%s: same outcome both ways: error %s, answer %r" % (name, want_err, want_answer),
             "agent: %r %r\ninprocess: %r %r" % (a[3], a[2], b[3], b[2]))
    t.eq(STORE0, FROZEN, "the starting store was never mutated")

    a, b = results["05-absent-find.md"]
    t.ok(a[3] is not None and a[3].kind == "apply" and b[3] is not None and b[3].kind == "apply"
         and "does-not-exist" in a[3].message and a[3].message == b[3].message,
         "absent find text: an apply error both ways, the same one", "%r / %r" % (a[3], b[3]))
    t.ok("concepts/x.md" not in a[0] and "concepts/x.md" not in b[0],
         "… and the write before it did not apply either way (no partial set)")
    a, b = results["06-out-of-scope.md"]
    t.ok(a[3] is not None and a[3].kind == "scope" and "private/secret.md" in a[3].message
         and b[3] is not None and b[3].kind == "scope" and a[3].message == b[3].message,
         "write outside write_patterns: refused both ways, naming the path", "%r / %r" % (a[3], b[3]))
    t.ok(a[0]["private/secret.md"] == b[0]["private/secret.md"] == "do not touch\n"
         and "concepts/ok.md" not in a[0] and "concepts/ok.md" not in b[0],
         "… the secret note is untouched and the in-scope write beside it not applied")
    a, b = results["07-bag-reader.md"]
    t.ok(a[0].get("summaries/bag.json", "").encode("utf-8") == BAG.encode("utf-8"),
         "the role reading $FLEET_INPUT saw the bag byte for byte (via tool calls)")
    a, b = results["08-unicode-node.md"]
    t.ok(a[1] and a[1][0]["content"].encode("utf-8") == UNICODE_TEXT.encode("utf-8") == b[1][0]["content"].encode("utf-8"),
         "the unicode role's content is byte-identical both ways")

    # the raw tool calls of one role, as fleet sees them
    role = roles["03-mixed-pipeline.md"]
    p1 = rc.render_request(role, BAG)
    st1, _, r1 = rc.post(base, KEY, p1)
    msg1 = dig(r1, "choices", 0, "message") or {}
    rid = (dig(r1, "id") or "").split("-", 1)[-1]
    t.eq([(c["id"], c["function"]["name"]) for c in msg1.get("tool_calls") or []],
         [("call_%s_0" % rid, "write_note"), ("call_%s_1" % rid, "write_note"),
          ("call_%s_2" % rid, "patch_note"), ("call_%s_3" % rid, "patch_note"),
          ("call_%s_4" % rid, "finish")],
         "mixed pipeline: 4 changes then finish, ids call_<response id>_<i> in order")
    answer1 = json.loads((msg1.get("tool_calls") or [{}])[-1].get("function", {}).get("arguments", "{}")).get("answer")

    # MaxSteps > 1 would send step 2: codellm must not run the blocks
    # again, and answers in text (the loop's end), finish's answer as content
    p2 = rc.followup_payload(p1, msg1)
    t0 = time.time()
    st2, _, r2 = rc.post(base, KEY, p2)
    el = time.time() - t0
    msg2 = dig(r2, "choices", 0, "message") or {}
    t.eq((st2, dig(r2, "choices", 0, "finish_reason"), msg2.get("content"), "tool_calls" in msg2),
         (200, "stop", answer1, False),
         "step 2 of fleet's loop (assistant tool_calls + tool results) → finish's answer as text, stop")
    t.eq((dig(r2, "codellm", "blocks"), dig(r2, "codellm", "block_results")), (0, []),
         "… no block ran again (%.2f s)" % el)
    t.ok(msg2.get("tool_calls") is None and (answer1 or "") != "",
         "… so step 2 carries no change to re-apply (answer %r)" % answer1)

    # a failing block: the same execution error both ways
    failing = rc.parse_role("---\nwrite_patterns: [concepts/*.md]\n---\n```python\nimport sys, json\n"
                            "print(json.dumps({'changes':[{'path':'concepts/f.md','content':'f'}]}))\n"
                            "sys.exit(4)\n```\n", name="failing")
    a = rc.run_agent(failing, STORE0, base, KEY, bag=BAG)
    b = rc.run_inprocess(failing, STORE0, base, KEY, bag=BAG)
    t.ok(errkey(a[3]) == errkey(b[3]) == ("execution", "block_failed") and a[0] == b[0] == STORE0,
         "a block exiting 4: execution error block_failed both ways, nothing applied",
         "%r / %r" % (a[3], b[3]))
    badjson = rc.parse_role("---\nwrite_patterns: [concepts/*.md]\n---\n```bash\necho '{\"changes\":[}'\n```\n",
                            name="badjson")
    a = rc.run_agent(badjson, STORE0, base, KEY, bag=BAG)
    b = rc.run_inprocess(badjson, STORE0, base, KEY, bag=BAG)
    t.ok(errkey(a[3]) == errkey(b[3]) == ("execution", "invalid_changes"),
         "stdout that is not the JSON: invalid_changes both ways", "%r / %r" % (a[3], b[3]))

    # migration constraint 1: the role's tools must include what it writes
    narrow = rc.parse_role("---\nwrite_patterns: [index.md]\ntools: [write_note, finish]\n---\n"
                           "```python\nimport json\nprint(json.dumps({'changes':[{'path':'index.md',"
                           "'find':'old','replace':'new'}],'answer':'p'}))\n```\n", name="narrow")
    a = rc.run_agent(narrow, STORE0, base, KEY, bag=BAG)
    b = rc.run_inprocess(narrow, STORE0, base, KEY, bag=BAG)
    t.ok(errkey(a[3]) == ("execution", "undeclared_tool") and "patch_note" in a[3].message
         and b[3] is None and b[0]["index.md"] == "# Index\n\n- [[new]]\n",
         "a role that patches without declaring patch_note: codellm refuses (undeclared_tool) "
         "where the in-process path applied it — the dry run must flag it",
         "%r / %r" % (a[3], b[3]))

    # the client's command line (given more than its own 60 s request timeout)
    store_file = os.path.join(s.tmp, "store.json")
    with open(store_file, "w", encoding="utf-8") as f:
        json.dump(STORE0, f)
    out = subprocess.run([sys.executable, os.path.join(AGENT, "reference_client.py"),
                          os.path.join(AGENT, "roles", "02-patch-index.md"), "--base-url", base,
                          "--key", KEY, "--store", store_file], capture_output=True, timeout=120)
    try:
        cli = json.loads(out.stdout.decode())
    except ValueError:
        cli = {}
    t.ok(out.returncode == 0 and cli.get("store") == EXPECT["02-patch-index.md"][2]
         and cli.get("answer") == "linked" and cli.get("error") is None,
         "reference_client.py from the command line applies a role to a store file",
         out.stdout[:400] + out.stderr[-400:])
    t.eq(s.leftovers(), [], "no run directory left")

t.diag("runtime %.1f s" % (time.time() - T_START))
t.done()
