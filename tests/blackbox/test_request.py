#!/usr/bin/env python3
"""Reading a chat request (SPEC §4) through the real handler.

Which message is the code, which fences are blocks (CommonMark), what is
skipped, stdin and the delivery bag, the allowlist, request parameters and
the re-execution guard. Blocks print what they got so the run itself shows
what the handler read; marker files in a directory the test owns prove
what did not run.
"""
import json
import os
import shutil
import hashlib
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
T_START = time.time()


def msg(role, text, name=None):
    m = {"role": role, "content": text}
    if name is not None:
        m["name"] = name
    return m


def chat(s, messages, model="codellm", **extra):
    p = {"model": model, "messages": messages}
    p.update(extra)
    return s.chat(p)


def is_error(r, status, desc, code=None, contains=(), etype=None):
    e = r.error() or {}
    ok = (r.status == status and isinstance(e.get("message"), str) and isinstance(e.get("type"), str)
          and "param" in e and "code" in e)
    if code is not None:
        ok = ok and e.get("code") == code
    if etype is not None:
        ok = ok and e.get("type") == etype
    for c in contains:
        ok = ok and c in (e.get("message") or "")
    return t.ok(ok, desc, "status %s body %r" % (r.status, r.body[:600]))


def show_file():
    """A python block that prints its own file: what the handler took as
    the block's content."""
    return "import sys\nsys.stdout.write(open(__file__).read())\n"


marks = tempfile.mkdtemp(prefix="codellm-marks-")
os.chmod(marks, 0o777)


def marker(name):
    return os.path.join(marks, name)


def touch_block(name, lang="python"):
    if lang == "python":
        return block("python", "open(%r, 'w').write('ran')\nprint(%r)" % (marker(name), name))
    return block("bash", "echo ran > %s\necho %s" % (marker(name), name))


# Blocks that must leave a trace on the host (marker files proving what
# ran and what did not) go to a --sandbox off server: harmless code, and
# the rules under test are the same in every mode.
with Server("--timeout", "30") as s, Server("--timeout", "30", sandbox="off") as m:
    # ---- content forms -------------------------------------------------------
    r = chat(s, [msg("user", "```python\nprint('string content')\n```")])
    t.eq((r.status, content(r)), (200, "string content\n"), "content as a string")
    r = chat(s, [msg("user", [{"type": "text", "text": "intro\n"},
                              {"type": "text", "text": "```python\nprint('parts')\n```\n"}])])
    t.eq((r.status, content(r)), (200, "parts\n"), "content as an array of text parts")
    r = chat(s, [msg("user", [{"type": "text", "text": "```py"},
                              {"type": "text", "text": "thon\nprint('sp"},
                              {"type": "text", "text": "lit')\n``"},
                              {"type": "text", "text": "`\n"}])])
    t.eq((r.status, content(r), field(r, "codellm", "blocks")), (200, "split\n", 1),
         "text parts are joined with nothing between (a fence split across parts works)")
    r = chat(s, [msg("system", None), msg("user", None),
                 msg("user", block("python", "import sys\nprint(repr(sys.stdin.read()))"))])
    t.eq((r.status, content(r)), (200, "''\n"), "null content is accepted (empty)")
    r = chat(s, [{"role": "user"}, msg("user", block("python", "print('no content key')"))])
    t.eq((r.status, content(r)), (200, "no content key\n"), "a message without content is accepted (empty)")

    # ---- CommonMark fences ------------------------------------------------------
    r = chat(s, [msg("user", "~~~python\nprint('tilde')\n~~~\n")])
    t.eq(content(r), "tilde\n", "~~~ fences")
    r = chat(s, [msg("user", "~~~~~bash\necho five\n~~~~~~~~\n")])
    t.eq(content(r), "five\n", "a closing fence may be longer than the opening one")
    r = chat(s, [msg("user", "```python\nprint(\'\'\'a\n~~~\n``\nb\'\'\')\n```\n")])
    t.eq(content(r), "a\n~~~\n``\nb\n", "~~~ and a shorter `` do not close a ``` fence")
    text = ("Intro\n"
            "   ```python\n"
            "   import sys\n"
            "   sys.stdout.write(open(__file__).read())\n"
            "     # two more\n"
            "  x = 1\n"
            "   ```\n")
    r = chat(s, [msg("user", text)])
    t.eq(content(r), "import sys\nsys.stdout.write(open(__file__).read())\n  # two more\nx = 1\n",
         "a fence indented 3 spaces: up to 3 spaces of indent stripped from each content line")
    r = chat(s, [msg("user", " ```python\n" + show_file() + "print('one')\n   ```\n")])
    t.eq(content(r), show_file() + "print('one')\none\n", "indent 1 opening, indent 3 closing fence")
    r = chat(s, [msg("user", "    ```python\n    print('indented code')\n    ```\n")])
    is_error(r, 400, "a fence indented 4 spaces is not a fence (no runnable block → 400)")
    r = chat(s, [msg("user", "    ```python\n    print('indented')\n    ```\n```python\nprint('real')\n```\n")])
    t.eq((content(r), field(r, "codellm", "blocks")), ("real\n", 1),
         "4-space-indented fence lines are text; the real fence after them runs")
    inner = ("````python\n"
             "import sys\n"
             "sys.stdout.write(open(__file__).read())\n"
             "s = '''\n"
             "```bash\n"
             "echo nested\n"
             "```\n"
             "'''\n"
             "````\n")
    r = chat(s, [msg("user", inner)])
    want = "import sys\nsys.stdout.write(open(__file__).read())\ns = '''\n```bash\necho nested\n```\n'''\n"
    t.eq((content(r), field(r, "codellm", "blocks")), (want, 1),
         "a ```` fence holding ``` lines: one block, the inner fences are content")
    r = chat(s, [msg("user", "```python\nprint('unclosed')\n# the end of the message\n")])
    t.eq(content(r), "unclosed\n", "an unclosed fence runs to the end of the message")
    r = chat(s, [msg("user", "```python\n" + show_file())])
    t.eq(content(r), show_file(), "an unclosed fence without a final newline: content is the rest")
    r = chat(s, [msg("user", "```python title=\"x.py\" {.cls}\nprint('info string')\n```\n")])
    t.eq(content(r), "info string\n", "the info string's first word picks the interpreter")
    r = chat(s, [msg("user", "``` python\nprint('space before label')\n```\n")])
    t.eq(content(r), "space before label\n", "spaces between the fence and the label are allowed")
    r = chat(s, [msg("user", "```python\r\nprint('crlf')\r\n```\r\n")])
    t.eq(content(r), "crlf\n", "CRLF line endings")
    r = chat(s, [msg("user", "```python\nprint('a')\n```\ntext between\n```bash\necho b\n```\n")])
    t.eq((content(r), field(r, "codellm", "blocks")), ("b\n", 2), "two blocks in one message run as a pipeline")

    # ---- which message is the code --------------------------------------------------
    for f in os.listdir(marks):
        os.unlink(os.path.join(marks, f))
    r = chat(m, [msg("user", touch_block("early")),
                 msg("user", touch_block("late")),
                 msg("user", "and a note\n```json\n{\"x\": 1}\n```\n")])
    t.eq(content(r), "late\n", "the code message is the last system/user message with a runnable block")
    t.ok(os.path.exists(marker("late")) and not os.path.exists(marker("early")),
         "the earlier code message did not run", repr(os.listdir(marks)))
    r = chat(s, [msg("user", block("python", "print('user-code')")),
                 msg("system", block("bash", "echo system-code"))])
    t.eq(content(r), "system-code\n", "a system message can be the code message (the last one wins)")
    r = chat(s, [msg("user", block("python", "print('user-code')")),
                 msg("user", "no code here, just chat")])
    t.eq(content(r), "user-code\n", "a later message without fences does not hide the code message")

    # ---- skipped fences ------------------------------------------------------------
    text = ("Some prose.\n"                # 1
            "```json\n"                    # 2
            "{\"a\": 1}\n"                 # 3
            "```\n"                        # 4
            "```python\n"                  # 5
            "print('ran')\n"               # 6
            "```\n"                        # 7
            "```mermaid\n"                 # 8
            "graph TD; A-->B\n"            # 9
            "```\n"                        # 10
            "~~~text\n"                    # 11
            "hello\n"                      # 12
            "~~~\n")                       # 13
    r = chat(s, [msg("user", text)])
    t.eq(content(r), "ran\n", "unknown labels do not run")
    t.eq(field(r, "codellm", "skipped_fences"),
         [{"label": "json", "line": 2}, {"label": "mermaid", "line": 8}, {"label": "text", "line": 11}],
         "skipped_fences lists label and line of json, mermaid, text")
    t.eq(field(r, "codellm", "blocks"), 1, "blocks counts only the runnable block")

    # ---- unlabeled fences and the model -------------------------------------------------
    unl = "```\nimport sys\nprint('unlabeled', sys.version_info[0])\n```\n"
    r = chat(s, [msg("user", unl)], model="python")
    t.eq(content(r), "unlabeled 3\n", "model python: an unlabeled fence runs as python")
    r = chat(s, [msg("user", unl)], model="py")
    t.eq((content(r), field(r, "model")), ("unlabeled 3\n", "py"), "model py (an alias): unlabeled runs, model echoed")
    r = chat(s, [msg("user", "```\necho unlabeled-bash\n```\n")], model="bash")
    t.eq(content(r), "unlabeled-bash\n", "model bash: an unlabeled fence runs as bash")
    r = chat(s, [msg("user", unl)], model="codellm")
    is_error(r, 400, "model codellm: an unlabeled fence alone is not runnable (400)")
    r = chat(s, [msg("user", unl)], model="gpt-4o")
    is_error(r, 400, "model gpt-4o: an unlabeled fence is not runnable (400)")
    r = chat(s, [msg("user", unl + block("bash", "echo labeled"))], model="codellm")
    t.eq((content(r), field(r, "codellm", "blocks")), ("labeled\n", 1),
         "model codellm: the unlabeled fence is skipped, the labeled one runs")
    r = chat(s, [msg("user", "```\necho from-unlabeled\n```\n" + block("python", "import sys\nprint(sys.stdin.read().strip(), 'then python')"))],
             model="bash")
    t.eq((content(r), [b.get("lang") for b in field(r, "codellm", "block_results") or []]),
         ("from-unlabeled then python\n", ["bash", "python"]),
         "model bash: unlabeled and labeled blocks mix in one pipeline")
    r = chat(s, [msg("user", "print('first user')"), msg("user", "print('whole message')")], model="python")
    t.eq(content(r), "whole message\n", "model python without fences: the last user message runs whole")
    r = chat(s, [msg("user", "echo whole bash; exit 4")], model="bash")
    t.eq((content(r), field(r, "codellm", "exit_code")), ("whole bash\n", 4), "model bash without fences: whole message")
    r = chat(s, [msg("user", "print('x')")], model="codellm")
    is_error(r, 400, "model codellm without fences: 400")

    # ---- no runnable block ---------------------------------------------------------
    r = chat(s, [msg("user", "```json\n{}\n```\n```Mermaid\ngraph\n```\n```text\nhi\n```\n")])
    is_error(r, 400, "no runnable block → 400 listing the labels seen (json, Mermaid, text)",
             contains=("json", "Mermaid", "text"), etype="invalid_request_error")
    r = chat(s, [msg("user", "just prose")])
    is_error(r, 400, "no fence at all → 400")

    # ---- request parameters ----------------------------------------------------------
    r = chat(s, [msg("user", block("python", "print('n')"))], n=2)
    is_error(r, 400, "n=2 → 400")
    r = chat(s, [msg("user", block("python", "print('n')"))], n=1)
    t.eq((r.status, content(r)), (200, "n\n"), "n=1 → 200")
    r = chat(s, [msg("user", block("python", "print('sampling')"))], temperature=1.7, top_p=0.1, seed=42,
             max_tokens=1, presence_penalty=2, frequency_penalty=-1, stop=["\n"], user="u1",
             logprobs=False, response_format={"type": "text"})
    t.eq((r.status, content(r)), (200, "sampling\n"),
         "temperature/top_p/seed/max_tokens/stop/… are accepted and ignored")
    for bad in (0, -1, "x", True, [], {}):
        r = chat(s, [msg("user", block("python", "print('t')"))], codellm={"timeout_s": bad})
        is_error(r, 400, "codellm.timeout_s %r → 400" % (bad,))
    r = chat(s, [msg("user", block("python", "print('t')"))], codellm={"timeout_s": 20})
    t.eq((r.status, content(r)), (200, "t\n"), "codellm.timeout_s 20 is accepted")
    r = chat(s, [msg("user", block("python", "print('t')"))], codellm="fast")
    is_error(r, 400, "codellm that is not an object → 400")

    # ---- stdin ------------------------------------------------------------------------
    echo_stdin = block("python", "import sys\nprint(repr(sys.stdin.read()))")
    r = chat(s, [msg("user", "from the stdin message\n", name="stdin"), msg("user", echo_stdin)])
    t.eq(content(r), "'from the stdin message\\n'\n", "a message named stdin feeds block 0")
    r = chat(s, [msg("system", "plain system"), msg("user", echo_stdin), msg("user", "named", name="stdin")])
    t.eq(content(r), "'named'\n", "the stdin message wins over a system message, wherever it is")
    r = chat(s, [msg("user", "```python\nprint('not code')\n```\n", name="stdin"), msg("user", echo_stdin)])
    t.eq(content(r), repr("```python\nprint('not code')\n```\n") + "\n",
         "a fence inside the stdin message is data, not code")
    r = chat(s, [msg("system", "sys-stdin"), msg("system", echo_stdin)])
    t.eq(content(r), "'sys-stdin'\n", "code in a system message, stdin from the system message before it")
    r = chat(s, [msg("system", "s1"), msg("system", "s2"), msg("user", echo_stdin)])
    t.eq(content(r), "'s2'\n", "else the last system message before the code message")
    r = chat(s, [msg("system", "plain"), msg("system", "has a fence\n```json\n{}\n```\n"), msg("user", echo_stdin)])
    t.eq(content(r), "'plain'\n", "a system message with a fence is not stdin")
    r = chat(s, [msg("system", "plain"), msg("system", "named", name="policy"), msg("user", echo_stdin)])
    t.eq(content(r), "'plain'\n", "a system message with a name is not stdin")
    r = chat(s, [msg("user", echo_stdin), msg("system", "after the code")])
    t.eq(content(r), "''\n", "a system message after the code message is not stdin")
    r = chat(s, [msg("user", "a user message"), msg("user", echo_stdin)])
    t.eq(content(r), "''\n", "a user message is not stdin")
    r = chat(s, [msg("system", "to block 0"), msg("user", block("bash", "cat") + echo_stdin)])
    t.eq(content(r), "'to block 0'\n", "stdin feeds block 0, whose output feeds block 1")
    big = "".join("line %06d\n" % i for i in range(200000))
    r = chat(s, [msg("user", big, name="stdin"), msg("user", block("python", "import sys, hashlib\nd = sys.stdin.buffer.read()\nprint(len(d), hashlib.sha256(d).hexdigest())"))])
    t.eq(content(r), "%d %s\n" % (len(big), hashlib.sha256(big.encode()).hexdigest()),
         "a 2.4 MB stdin message arrives whole")
    r = chat(s, [msg("user", "unicode \u00e9\u2028 \U0001f600", name="stdin"),
                 msg("user", block("python", "import sys\nprint(sys.stdin.buffer.read().hex())"))])
    t.eq(content(r), "unicode \u00e9\u2028 \U0001f600".encode().hex() + "\n", "stdin bytes are the UTF-8 of the message")

    # ---- the re-execution guard ---------------------------------------------------------
    for f in os.listdir(marks):
        os.unlink(os.path.join(marks, f))
    r = chat(m, [msg("user", touch_block("guard-assistant")), msg("assistant", "I ran it")])
    t.ok(r.status == 200 and content(r) == "" and field(r, "choices", 0, "finish_reason") == "stop",
         "assistant message after the code message → 200, empty content, stop", r.body[:500])
    t.ok(not os.path.exists(marker("guard-assistant")), "… and nothing ran")
    t.eq((field(r, "codellm", "blocks"), field(r, "codellm", "block_results")), (0, []),
         "… and codellm reports no block run")
    r = chat(m, [msg("user", touch_block("guard-tool", "bash")),
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "call_0", "content": "done"}])
    t.ok(r.status == 200 and content(r) == "" and field(r, "choices", 0, "finish_reason") == "stop"
         and not os.path.exists(marker("guard-tool")),
         "tool message after the code message → 200, empty, nothing ran", r.body[:500])
    r = chat(m, [msg("user", touch_block("guard-user")), msg("assistant", "ok"), msg("user", "thanks")])
    t.ok(r.status == 200 and content(r) == "" and not os.path.exists(marker("guard-user")),
         "assistant then a plain user message after the code → still nothing runs")
    r = chat(m, [msg("assistant", "earlier turn"), msg("user", touch_block("guard-before"))])
    t.ok(content(r) == "guard-before\n" and os.path.exists(marker("guard-before")),
         "an assistant message BEFORE the code message does not stop the run")
    r = chat(m, [msg("user", touch_block("guard-old")), msg("assistant", "ran"),
                 msg("user", touch_block("guard-new"))])
    t.ok(content(r) == "guard-new\n" and os.path.exists(marker("guard-new"))
         and not os.path.exists(marker("guard-old")),
         "a new code message after the assistant turn runs (only it)", repr(os.listdir(marks)))
    t.eq(s.leftovers(), [], "no run directory left")

# ---- --max-blocks ------------------------------------------------------------------------
with Server("--max-blocks", "2", sandbox="off") as s:
    for f in os.listdir(marks):
        os.unlink(os.path.join(marks, f))
    r = chat(s, [msg("user", touch_block("mb1") + touch_block("mb2") + touch_block("mb3"))])
    is_error(r, 400, "--max-blocks 2 with 3 blocks → 400")
    t.eq(os.listdir(marks), [], "… and nothing ran")
    r = chat(s, [msg("user", block("bash", "echo two") + block("bash", "cat") + block("json", "{}"))])
    t.eq((r.status, content(r)), (200, "two\n"), "--max-blocks 2 with 2 runnable blocks (+1 skipped) → 200")

# ---- the allowlist ---------------------------------------------------------------------
with Server(allowed="python", sandbox="off") as s:
    for f in os.listdir(marks):
        os.unlink(os.path.join(marks, f))
    r = chat(s, [msg("user", touch_block("al-py") + touch_block("al-sh", "bash"))])
    is_error(r, 403, "a block whose interpreter is not in --allowed-programs → 403 naming it",
             contains=("bash",), etype="permission_error")
    t.eq(os.listdir(marks), [], "… and no block ran (not even the allowed python one)")
    r = chat(s, [msg("user", block("sh", "echo x"))])
    is_error(r, 403, "an alias (sh) of a disallowed interpreter → 403", contains=("bash",))
    r = chat(s, [msg("user", block("python", "print('allowed')"))])
    t.eq(content(r), "allowed\n", "the allowed interpreter runs")
    r = chat(s, [msg("user", "```\necho hi\n```\n")], model="bash")
    is_error(r, 403, "model bash with an unlabeled fence, bash not allowed → 403", contains=("bash",))

for allowed, name in ((None, "no --allowed-programs"), ("", "--allowed-programs ''")):
    with Server(allowed=allowed, sandbox="off") as s:
        for f in os.listdir(marks):
            os.unlink(os.path.join(marks, f))
        r = chat(s, [msg("user", touch_block("empty-allow"))])
        is_error(r, 403, "%s: execution disabled → 403" % name, etype="permission_error")
        t.eq(os.listdir(marks), [], "%s: nothing ran" % name)

# ---- the delivery bag (as nobody, so read-only binds) -------------------------------------
bag = "{\"trigger\": {\"path\": \"notes/a.md\"}, \"text\": \"caf\u00e9 \u2028 \\\\ \\\" \U0001f600\"}\n  trailing  "
with unprivileged_server("--timeout", "30") as s:
    probe = ("import os, sys, json\n"
             "p = os.environ.get('FLEET_INPUT')\n"
             "out = {'path': p}\n"
             "if p:\n"
             "    st = os.stat(p)\n"
             "    out['mode'] = oct(st.st_mode & 0o7777)\n"
             "    out['data'] = open(p, 'rb').read().decode('utf-8')\n"
             "    out['dir'] = os.path.dirname(p) == os.getcwd()\n"
             "    try:\n"
             "        open(p, 'a').write('x')\n"
             "        out['write'] = 'succeeded'\n"
             "    except OSError as e:\n"
             "        out['write'] = type(e).__name__\n"
             "    out['after'] = open(p, 'rb').read().decode('utf-8') == out['data']\n"
             "out['uid'] = os.geteuid()\n"
             "print(json.dumps(out))\n")
    r = chat(s, [msg("user", bag, name="fleet_input"), msg("user", block("python", probe))])
    try:
        j = json.loads(content(r))
    except Exception:
        j = {}
    t.ok(isinstance(j.get("path"), str) and j.get("dir") is True,
         "fleet_input → $FLEET_INPUT names a file in the workdir", r.body[:600])
    t.eq(j.get("data"), bag, "$FLEET_INPUT holds exactly the bag's content")
    t.ok(j.get("mode") in ("0o444", "0o440", "0o400"), "$FLEET_INPUT is a read-only file (%s)" % j.get("mode"))
    if j.get("uid") == 0:
        t.skip("a block cannot write $FLEET_INPUT", "the block runs as root")
    else:
        t.ok(j.get("write") == "PermissionError" and j.get("after") is True,
             "a block cannot write $FLEET_INPUT (%s, uid %s)" % (j.get("write"), j.get("uid")))
    r = chat(s, [msg("user", block("python", probe))])
    try:
        j = json.loads(content(r))
    except Exception:
        j = {"path": "?"}
    t.ok("path" in j and j["path"] is None, "no fleet_input message → FLEET_INPUT unset", r.body[:300])
    r = chat(s, [msg("user", "", name="fleet_input"), msg("user", block("python", probe))])
    try:
        j = json.loads(content(r))
    except Exception:
        j = {}
    t.eq((isinstance(j.get("path"), str), j.get("data")), (True, ""), "an empty bag is still a file")
    r = chat(s, [msg("user", touch_block("bag-not-code"), name="fleet_input"),
                 msg("user", block("bash", "cat \"$FLEET_INPUT\" | head -c 9"))])
    t.ok(content(r) == "```python" and not os.path.exists(marker("bag-not-code")),
         "a fenced block inside the bag is data, not code", r.body[:400])
    r = chat(s, [msg("user", "stdin-data", name="stdin"), msg("user", "bag-data", name="fleet_input"),
                 msg("user", block("bash", "printf '%s|%s' \"$(cat)\" \"$(cat \"$FLEET_INPUT\")\""))])
    t.eq(content(r), "stdin-data|bag-data", "stdin and the bag together, each to its place")
    t.eq(s.leftovers(), [], "no run directory left (unprivileged handler)")
if getattr(s, "wrap_dir", None):
    shutil.rmtree(s.wrap_dir, ignore_errors=True)

shutil.rmtree(marks, ignore_errors=True)
t.diag("test_request.py took %.1f s" % (time.time() - T_START))
t.done()
