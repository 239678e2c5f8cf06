#!/usr/bin/env python3
"""A reference agent client: what fleet's runtime does with a code role
once `executor: code` points at codellm (seed 000, "The wire protocol",
"Backward-compat and cutover", Phase 3), and the old in-process contract
it replaces. The parity tests (tests/blackbox/test_parity.py) run every
role both ways and compare.

The two paths:

  run_agent(role, store, base_url, key)        the new path
      renders the request exactly as agentruntime.Run does (the
      micro-agent system wrapper around the role body, the delivery bag as
      a system message named fleet_input, user "Begin.", the tool schemas
      of the role's tools or the default three), sends it, and applies the
      returned tool calls. MaxSteps 1: one request, stop at finish.

  run_inprocess(role, store, base_url, key)    the old path
      runs the same blocks and reads the LAST block's stdout directly as
      {"changes":[...],"answer":"..."}. That stdout comes from codellm's
      run mode (the same request without tools: content is the last
      block's stdout, same sandbox), so only the contract differs.

Both end in apply(): the changes go, in order, into an in-memory note
store {path: content} through the role's write_patterns. Both return
(store_after, applied, answer, error):

  store_after  a new dict; the store unchanged when error is set
  applied      the changes applied, each {"op":"write","path","content"}
               or {"op":"patch","path","find","replace"}; [] on error
  answer       finish's answer (None when the run failed)
  error        None, or a RunError with .kind:
                 "scope"      a path outside write_patterns (nothing applied)
                 "apply"      a patch whose find text is absent, or whose
                              note does not exist (nothing applied)
                 "execution"  the run failed (.code: block_failed, timeout,
                              output_limit, invalid_changes, undeclared_tool)
                 "protocol"   an answer fleet's loop could not use (no
                              finish, a tool the role does not declare, …)

Decisions pinned here (fleet's ScopedKB as the seed describes it):
  * A set of changes applies whole or not at all (the seed's recommended
    hard-fail: a bad patch is an error, not a soft skip).
  * write_patterns are globs over the slash-separated path: `*` and `?`
    never cross "/", `**` does (and `**/` may match nothing), `[...]` is a
    class ("!" or "^" negates). An absolute path or a ".." segment is never
    in scope.
  * patch_note replaces the first occurrence of find; the note must exist.

Standard library only.
"""
import copy
import json
import re
import urllib.error
import urllib.request

SYSTEM_WRAPPER = (
    "You are a scoped trip2g micro-agent. You act on the knowledge base only "
    "through your tools: write_note creates or replaces a note, patch_note "
    "replaces text inside a note, finish ends the run with your answer. You "
    "may write only notes whose paths match your write patterns: {patterns}. "
    "The delivery that woke you is in the fleet_input message."
)

TOOL_SCHEMAS = {
    "write_note": {
        "type": "function",
        "function": {
            "name": "write_note",
            "description": "Create a note, or replace a note's whole content.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string",
                             "description": "Vault-relative path, e.g. concepts/x.md"},
                    "content": {"type": "string",
                                "description": "The note's full markdown content"},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
    },
    "patch_note": {
        "type": "function",
        "function": {
            "name": "patch_note",
            "description": "Replace the first occurrence of find in a note with replace.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Vault-relative path of an existing note"},
                    "find": {"type": "string", "minLength": 1,
                             "description": "Exact text to find in the note"},
                    "replace": {"type": "string", "description": "Text that replaces it"},
                },
                "required": ["path", "find", "replace"],
                "additionalProperties": False,
            },
        },
    },
    "finish": {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "End the run. Call exactly once, last.",
            "parameters": {
                "type": "object",
                "properties": {
                    "answer": {"type": "string", "description": "A short report of what was done"},
                },
                "required": ["answer"],
                "additionalProperties": False,
            },
        },
    },
}

DEFAULT_TOOLS = ["write_note", "patch_note", "finish"]
DEFAULT_NOW = "2026-07-14T09:30:00Z"


class RunError(Exception):
    def __init__(self, kind, message, code=None):
        super().__init__(message)
        self.kind = kind
        self.code = code
        self.message = message

    def key(self):
        """What two paths must agree on."""
        return (self.kind, self.code)

    def __repr__(self):
        return "RunError(%r, %r, code=%r)" % (self.kind, self.message, self.code)


# ---- role notes ---------------------------------------------------------------

class Role:
    def __init__(self, name, meta, body):
        self.name = name
        self.meta = meta
        self.body = body
        wp = meta.get("write_patterns")
        self.write_patterns = [] if wp in (None, "") else list(wp) if isinstance(wp, list) else [wp]
        tools = meta.get("tools")
        # empty or absent tools: the full default set (runtime.go:334)
        self.tools = list(tools) if isinstance(tools, list) and tools else list(DEFAULT_TOOLS)


def _scalar(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    if v.isdigit():
        return int(v)
    return v


def _strip_comment(v):
    out, q = [], None
    for i, c in enumerate(v):
        if q:
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c == "#" and (i == 0 or v[i - 1] in " \t"):
            break
        out.append(c)
    return "".join(out).rstrip()


def parse_frontmatter(lines):
    """The small YAML subset role notes use: `key: scalar`,
    `key: [a, b]`, and `key:` followed by `  - item` lines."""
    meta, key = {}, None
    for ln in lines:
        s = _strip_comment(ln)
        if not s.strip():
            continue
        m = re.match(r"^\s+-\s*(.*)$", s)
        if m and key is not None:
            if not isinstance(meta.get(key), list):
                meta[key] = []
            meta[key].append(_scalar(m.group(1)))
            continue
        k, sep, v = s.partition(":")
        if not sep:
            raise ValueError("frontmatter line without a key: %r" % ln)
        key, v = k.strip(), v.strip()
        if v.startswith("[") and v.endswith("]"):
            inner = v[1:-1].strip()
            meta[key] = [_scalar(x) for x in inner.split(",")] if inner else []
        elif v == "":
            meta[key] = None
        else:
            meta[key] = _scalar(v)
    return meta


def parse_role(text, name="role"):
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return Role(name, parse_frontmatter(lines[1:i]), "\n".join(lines[i + 1:]))
        raise ValueError("%s: unclosed frontmatter" % name)
    return Role(name, {}, text)


def load_role(path):
    with open(path, encoding="utf-8") as f:
        return parse_role(f.read(), name=path.rsplit("/", 1)[-1])


# ---- the request -----------------------------------------------------------

def make_bag(store, changed=(), attached=(), depth=1, now=DEFAULT_NOW):
    """The delivery bag (buildInputBag): note content, not just paths."""
    bag = {
        "changed_files": [{"path": p, "content": store[p]} for p in changed],
        "attached_notes": [{"path": p, "content": store[p]} for p in attached],
        "depth": depth,
        "now": now,
    }
    return json.dumps(bag, ensure_ascii=False, separators=(",", ":"))


def render_request(role, bag_text, model="codellm", with_tools=True):
    patterns = ", ".join(role.write_patterns) if role.write_patterns else "(none)"
    payload = {
        "model": model,
        "messages": [
            {"role": "system",
             "content": SYSTEM_WRAPPER.format(patterns=patterns) + "\n" + role.body},
            {"role": "system", "name": "fleet_input", "content": bag_text},
            {"role": "user", "content": "Begin."},
        ],
        "max_tokens": 1024,     # MaxTokens must be > 0; codellm reports 0 usage
    }
    if with_tools:
        payload["tools"] = [TOOL_SCHEMAS[n] for n in role.tools if n in TOOL_SCHEMAS]
    return payload


def post(base_url, key, payload, timeout=60):
    """POST /v1/chat/completions; returns (status, headers, parsed body)."""
    data = json.dumps(payload).encode("utf-8")
    req = urllib.request.Request(base_url.rstrip("/") + "/v1/chat/completions", data=data,
                                 method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, headers, body = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, dict(e.headers), e.read()
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        parsed = None
    return status, headers, parsed


# ---- scope and apply -------------------------------------------------------

def glob_regex(pattern):
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
                i += 1
                continue
            cls = pattern[i + 1:j]
            neg = cls[:1] in ("!", "^")
            if neg:
                cls = cls[1:]
            cls = cls.replace("\\", "\\\\")
            out.append("[%s%s]" % ("^/" if neg else "", cls))
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def in_scope(path, patterns):
    if not path or path.startswith("/") or ".." in path.split("/"):
        return False
    return any(glob_regex(p).match(path) for p in patterns)


def apply(store, changes, write_patterns):
    """Apply changes in order to a copy of store; all or nothing.
    Returns (store_after, applied, error)."""
    new = dict(store)
    applied = []
    for i, ch in enumerate(changes):
        path = ch["path"]
        if not in_scope(path, write_patterns):
            return dict(store), [], RunError(
                "scope", "change %d: %r is outside write_patterns %r" % (i, path, write_patterns))
        if ch["op"] == "write":
            new[path] = ch["content"]
        else:
            if path not in new:
                return dict(store), [], RunError("apply", "change %d: patch of missing note %r" % (i, path))
            if ch["find"] == "" or ch["find"] not in new[path]:
                return dict(store), [], RunError(
                    "apply", "change %d: find text %r not in %r" % (i, ch["find"][:80], path))
            new[path] = new[path].replace(ch["find"], ch["replace"], 1)
        applied.append(copy.deepcopy(ch))
    return new, applied, None


# ---- the new path: tool calls -------------------------------------------------

def calls_to_changes(role, message):
    """Tool calls of one step → (changes, answer). MaxSteps 1: the step
    must end in finish."""
    calls = message.get("tool_calls") or []
    changes = []
    for c in calls:
        if c.get("type") != "function" or not isinstance(c.get("function"), dict):
            raise RunError("protocol", "tool call %r is not a function call" % (c,))
        name = c["function"].get("name")
        if name not in role.tools:
            # the loop's allowlist (runtime.go:180)
            raise RunError("protocol", "tool %r is not in the role's tools %r" % (name, role.tools))
        try:
            args = json.loads(c["function"].get("arguments"))
        except (TypeError, ValueError) as e:
            raise RunError("protocol", "arguments of %s are not JSON: %s" % (name, e))
        if name == "finish":
            if set(args) != {"answer"} or not isinstance(args["answer"], str):
                raise RunError("protocol", "finish arguments %r" % (args,))
            return changes, args["answer"]
        want = {"write_note": ("path", "content"), "patch_note": ("path", "find", "replace")}[name]
        if set(args) != set(want) or not all(isinstance(args[k], str) for k in want):
            raise RunError("protocol", "%s arguments %r" % (name, args))
        ch = {"op": "write" if name == "write_note" else "patch"}
        ch.update((k, args[k]) for k in want)
        changes.append(ch)
    raise RunError("protocol", "the step has no finish: fleet's loop would call again "
                               "and codellm would run the blocks again")


def run_agent(role, store, base_url, key, bag=None, model="codellm", timeout=60):
    bag = make_bag(store) if bag is None else bag
    payload = render_request(role, bag, model=model)
    status, _, body = post(base_url, key, payload, timeout)
    if status != 200:
        err = (body or {}).get("error") or {}
        return dict(store), [], None, RunError(
            "execution" if status == 422 else "protocol",
            "HTTP %d: %s" % (status, err.get("message")), err.get("code"))
    try:
        choice = body["choices"][0]
        if choice.get("finish_reason") != "tool_calls":
            raise RunError("protocol", "finish_reason %r" % choice.get("finish_reason"))
        changes, answer = calls_to_changes(role, choice["message"])
    except RunError as e:
        return dict(store), [], None, e
    except (TypeError, KeyError, IndexError) as e:
        return dict(store), [], None, RunError("protocol", "response shape: %r" % (e,))
    new, applied, err = apply(store, changes, role.write_patterns)
    return new, applied, (None if err else answer), err


def followup_payload(payload, message, results=None):
    """The request fleet's loop would send as step 2 (MaxSteps > 1): the
    assistant turn with its tool calls, then one tool message per call."""
    p = copy.deepcopy(payload)
    p["messages"].append({"role": "assistant", "content": message.get("content"),
                          "tool_calls": message.get("tool_calls")})
    for c in message.get("tool_calls") or []:
        p["messages"].append({"role": "tool", "tool_call_id": c["id"],
                              "content": (results or {}).get(c["id"], "ok")})
    return p


# ---- the old path: the last block's stdout, read directly --------------------

def stdout_to_changes(text):
    """fleet's in-process contract: stdout is {"changes":[…],"answer":"…"}."""
    try:
        out = json.loads(text)
    except ValueError as e:
        raise RunError("execution", "stdout is not JSON: %s" % e, "invalid_changes")
    if not isinstance(out, dict):
        raise RunError("execution", "stdout is not an object", "invalid_changes")
    raw, answer = out.get("changes") or [], out.get("answer")
    if answer is None:
        answer = ""
    if not isinstance(raw, list) or not isinstance(answer, str):
        raise RunError("execution", "changes/answer have the wrong type", "invalid_changes")
    changes = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("path"), str) or not c["path"]:
            raise RunError("execution", "changes[%d] needs a path" % i, "invalid_changes")
        op = c.get("op")
        if op is None:
            has_c, has_f = c.get("content") is not None, (c.get("find") is not None
                                                         or c.get("replace") is not None)
            op = "write" if has_c and not has_f else "patch" if has_f and not has_c else None
        if op == "write" and isinstance(c.get("content"), str):
            changes.append({"op": "write", "path": c["path"], "content": c["content"]})
        elif op == "patch" and isinstance(c.get("find"), str) and c["find"] \
                and isinstance(c.get("replace"), str):
            changes.append({"op": "patch", "path": c["path"], "find": c["find"],
                            "replace": c["replace"]})
        else:
            raise RunError("execution", "changes[%d] is neither a write nor a patch" % i,
                           "invalid_changes")
    return changes, answer


def run_inprocess(role, store, base_url, key, bag=None, model="codellm", timeout=60):
    bag = make_bag(store) if bag is None else bag
    payload = render_request(role, bag, model=model, with_tools=False)
    status, _, body = post(base_url, key, payload, timeout)
    try:
        if status != 200:
            raise RunError("protocol", "HTTP %d: %r" % (status, body))
        ext = body.get("codellm") or {}
        choice = body["choices"][0]
        if ext.get("timed_out"):
            raise RunError("execution", "the run timed out", "timeout")
        if ext.get("exit_code") != 0:
            raise RunError("execution", "exit %r: %s" % (ext.get("exit_code"), ext.get("stderr")),
                           "block_failed")
        if choice.get("finish_reason") != "stop":
            raise RunError("execution", "stdout over the cap", "output_limit")
        changes, answer = stdout_to_changes(choice["message"]["content"])
    except RunError as e:
        return dict(store), [], None, e
    except (TypeError, KeyError, IndexError, AttributeError) as e:
        return dict(store), [], None, RunError("protocol", "response shape: %r" % (e,))
    new, applied, err = apply(store, changes, role.write_patterns)
    return new, applied, (None if err else answer), err


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("role")
    ap.add_argument("--base-url", default="http://127.0.0.1:8080")
    ap.add_argument("--key", required=True)
    ap.add_argument("--store", help="JSON file {path: content}", default=None)
    ap.add_argument("--inprocess", action="store_true", help="the old contract")
    a = ap.parse_args()
    st = {}
    if a.store:
        with open(a.store, encoding="utf-8") as f:
            st = json.load(f)
    fn = run_inprocess if a.inprocess else run_agent
    after, applied, answer, error = fn(load_role(a.role), st, a.base_url, a.key)
    json.dump({"store": after, "applied": applied, "answer": answer,
               "error": error and {"kind": error.kind, "code": error.code, "message": error.message}},
              sys.stdout, ensure_ascii=False, indent=1)
    print()
    sys.exit(1 if error else 0)
