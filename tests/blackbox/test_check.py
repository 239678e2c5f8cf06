#!/usr/bin/env python3
"""`codellm-handler --check FILE.md...` (SPEC §9): the dry run an operator
does on fleet role notes before moving them to codellm. The real binary,
run directly (no socket, no systemd), over the sample notes in
tests/check/notes: the report's lines, the problems each note is known to
have, and the exit status (0 nothing flagged, 1 flagged, 2 configuration
error). Also proves that nothing is executed: a block that would create a
file leaves no file behind.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

NOTES = os.path.join("tests", "check", "notes")
ALLOW = "python,bash,node"
GOOD = ["good-python.md", "good-pipeline.md", "read-only-report.md"]

t = Tap()


def check(*args, env=None, cwd=TOP):
    """Runs the handler with a clean CODELLM_* environment; returns
    (status, stdout lines, stderr)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("CODELLM_")
         and k not in ("LISTEN_FDS", "LISTEN_PID")}
    e.update(env or {})
    p = subprocess.run([HANDLER] + list(args), cwd=cwd, env=e, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode("utf-8", "replace")
    if any(m in err for m in SANITIZER_MARKS):
        SANITIZER_REPORTS.append(err[-8000:])
    return p.returncode, p.stdout.decode("utf-8", "replace").splitlines(), err


def note(name):
    return os.path.join(NOTES, name)


def of(lines, name):
    """The report lines of one file, without the "FILE: " prefix."""
    pre = note(name) + ": "
    return [ln[len(pre):] for ln in lines if ln.startswith(pre)]


def has(lines, prefix):
    return any(ln.startswith(prefix) for ln in lines)


# ---- every sample note at once, with a typical allowlist --------------------
all_notes = sorted(f for f in os.listdir(os.path.join(TOP, NOTES)) if f.endswith(".md"))
t.ok(8 <= len(all_notes) <= 12, "there are 8-12 sample notes", all_notes)
rc, out, err = check("--check", "--allowed-programs", ALLOW, *[note(f) for f in all_notes])
t.eq(rc, 1, "all notes: exit 1 (something flagged)")
t.eq(err, "", "all notes: nothing on stderr")
t.ok(all(any(ln.startswith(note(f) + ": ") for f in all_notes) for ln in out),
     "all notes: every line names its file", out)
finals = [ln for ln in out if ln.endswith(": ok") or ln.endswith(" problem(s)")]
t.eq(finals, [[ln for ln in out if ln.startswith(note(f) + ": ")][-1] for f in all_notes],
     "all notes: each file ends with one ok / N problem(s) line, in argument order")
t.ok(not any("problem:" in ln and not ln.split(": ", 1)[1].startswith("problem: ")
             for ln in out), "all notes: problem lines are 'FILE: problem: ...'")

# what each note is known to have: (final line, problem prefixes)
expect = {
    "good-python.md": ("ok", []),
    "good-pipeline.md": ("ok", []),
    "read-only-report.md": ("ok", []),
    "env-passthrough.md": ("1 problem(s)", ["problem: env_passthrough (line 4): [GITHUB_TOKEN]"]),
    "env-prefix.md": ("1 problem(s)", ["problem: env_prefix (line 4): [SEARCH_]"]),
    "no-write-patterns.md": ("1 problem(s)", ["problem: write_patterns: missing"]),
    "empty-write-patterns.md": ("1 problem(s)", ["problem: write_patterns (line 5): empty"]),
    "tools-no-finish.md": ("1 problem(s)", ["problem: tools (line 4): lacks finish"]),
    "not-allowed.md": ("1 problem(s)",
                       ["problem: block 1 (line 13-18): ruby is not in --allowed-programs"]),
    "prose-only.md": ("1 problem(s)", ["problem: no runnable block: none of the 2"]),
    "many-problems.md": ("4 problem(s)", ["problem: env_passthrough (line 4): [OPENAI_API_KEY, HOME]",
                                          "problem: env_prefix (line 5): [FLEET_]",
                                          "problem: tools (line 6): lacks finish",
                                          "problem: write_patterns: missing"]),
    "unclosed-frontmatter.md": ("1 problem(s)", ["problem: frontmatter (line 1): opened by ---"]),
}
t.eq(sorted(expect), all_notes, "every sample note has an expectation")
for f in all_notes:
    mine = of(out, f)
    final, probs = expect.get(f, ("?", []))
    t.eq(mine[-1:], [final], "%s: final line %r" % (f, final))
    got = [ln for ln in mine if ln.startswith("problem: ")]
    t.ok(len(got) == len(probs) and all(has(got, p) for p in probs),
         "%s: problems %s" % (f, [p.split(":")[1].strip() for p in probs] or "none"), mine)

# the block listing, exactly
t.eq([ln for ln in of(out, "good-pipeline.md") if ln.startswith("block ")],
     ["block 0 label=mermaid lang=unknown line 10-12: prose, skipped",
      "block 1 label=bash lang=bash line 14-17: runs",
      "block 2 label=py lang=python line 19-30: runs"],
     "good-pipeline: prose listed, aliases resolved, lines in the whole file")
t.eq(of(out, "good-python.md")[:2],
     ["frontmatter: line 1-9", "role: tools=default writes=yes write_patterns=1"],
     "good-python: frontmatter and role lines")
t.ok("role: tools=[finish] writes=no write_patterns=none" in of(out, "read-only-report.md"),
     "read-only-report: a finish-only role does not write, needs no scope")
t.ok("block 1 label=ruby lang=ruby line 13-18: not run: ruby is not in --allowed-programs"
     in of(out, "not-allowed.md"), "not-allowed: the refused block says why")
t.ok("block 0 label=javascript lang=node line 11-14: runs" in of(out, "many-problems.md"),
     "many-problems: javascript is node")
t.ok("frontmatter: unclosed" in of(out, "unclosed-frontmatter.md") and
     not has(of(out, "unclosed-frontmatter.md"), "role:"),
     "unclosed-frontmatter: no key read")

# ---- exit status ------------------------------------------------------------
rc, out, err = check("--check", "--allowed-programs", ALLOW, *[note(f) for f in GOOD])
t.eq(rc, 0, "good notes only: exit 0")
t.ok(not any("problem:" in ln for ln in out) and len([ln for ln in out if ln.endswith(": ok")]) == 3,
     "good notes only: three ok lines, no problem", out)

rc2, out2, _ = check("--check", "--allowed-programs", ALLOW, *[note(f) for f in GOOD])
t.ok(rc2 == rc and out2 == out, "the report is stable from run to run")

# files first, the flag after: the order of the command line does not matter
rc, out2, _ = check(note("good-python.md"), "--allowed-programs", ALLOW, "--check")
t.ok(rc == 0 and out2 == [ln for ln in out if ln.startswith(note("good-python.md") + ":")],
     "files before --check work the same", out2)

rc, out, err = check("--check", note("good-python.md"))
t.ok(rc == 1 and "block 0 label=python lang=python line 14-25: not run: execution disabled"
     in of(out, "good-python.md") and has(of(out, "good-python.md"),
                                          "problem: --allowed-programs is empty"),
     "no --allowed-programs: execution disabled is flagged once", out)

rc, out, err = check("--check", note("good-python.md"),
                     env={"CODELLM_ALLOWED_PROGRAMS": "python"})
t.ok(rc == 0 and of(out, "good-python.md")[-1] == "ok",
     "CODELLM_ALLOWED_PROGRAMS counts as --allowed-programs", out)

rc, out, err = check("--check", "--allowed-programs", ALLOW, "--max-blocks", "1",
                     note("good-pipeline.md"))
t.ok(rc == 1 and has(of(out, "good-pipeline.md"), "problem: 2 code blocks, more than --max-blocks 1"),
     "--max-blocks: more code blocks than the server takes is flagged", out)

missing = note("no-such-note.md")
rc, out, err = check("--check", "--allowed-programs", ALLOW, missing, note("good-python.md"))
t.ok(rc == 1 and out[:2] == [missing + ": problem: cannot read: No such file or directory",
                             missing + ": 1 problem(s)"] and out[-1] == note("good-python.md") + ": ok",
     "a missing file is a problem and the next file is still checked", out)

rc, out, err = check("--check", "--allowed-programs", ALLOW, NOTES)
t.ok(rc == 1 and out == [NOTES + ": problem: cannot read: Is a directory", NOTES + ": 1 problem(s)"],
     "a directory is a problem", out)

rc, out, err = check("--check")
t.ok(rc == 2 and out == [] and "--check needs at least one file" in err,
     "--check without a file: exit 2", err)

rc, out, err = check("--check", "--allowed-programs", "python,cobol", note("good-python.md"))
t.ok(rc == 2 and out == [] and "configuration error" in err,
     "an unknown --allowed-programs entry: exit 2, no report", err)

rc, out, err = check("--check", "--max-blocks", "0", note("good-python.md"))
t.ok(rc == 2 and "configuration error" in err, "an invalid option value: exit 2", err)

rc, out, err = check("--allowed-programs", ALLOW, note("good-python.md"))
t.ok(rc != 0 and "unexpected argument" in err,
     "a file without --check is still refused", err)

rc, out, err = check("--help")
t.ok(rc == 0 and any(ln.lstrip().startswith("--check FILE") for ln in out),
     "--help lists --check", out)

with tempfile.TemporaryDirectory(prefix="codellm-check-") as tmp:
    # nothing is ever executed: this block would leave a file behind
    marker = os.path.join(tmp, "ran")
    p = os.path.join(tmp, "writer.md")
    with open(p, "w") as f:
        f.write("---\nwrite_patterns: [a.md]\n---\n```python\nopen(%r, 'w').write('x')\n```\n"
                "```bash\ntouch %s\n```\n" % (marker, marker))
    rc, out, err = check("--check", "--allowed-programs", "python,bash", p)
    t.ok(rc == 0 and out[-1] == p + ": ok" and not os.path.exists(marker),
         "no execution: the blocks would run, yet nothing ran", out)

    # another --interpreters language is known to the check
    reg = os.path.join(tmp, "interp.json")
    with open(reg, "w") as f:
        f.write('{"lua": {"argv": ["lua", "{file}"], "ext": ".lua"}}')
    p = os.path.join(tmp, "lua.md")
    with open(p, "w") as f:
        f.write("---\ntools: [finish]\n---\n```lua\nprint(1)\n```\n")
    rc, out, err = check("--check", "--interpreters", reg, "--allowed-programs", "lua", p)
    t.ok(rc == 0 and p + ": block 0 label=lua lang=lua line 4-6: runs" in out,
         "--interpreters: a merged language is listed and runs", out)

    # CRLF line endings, as a note edited on Windows has
    p = os.path.join(tmp, "crlf.md")
    with open(p, "wb") as f:
        f.write(b"---\r\ntools:\r\n  - write_note\r\n  - finish\r\nwrite_patterns: [a]\r\n---\r\n"
                b"```python\r\nprint(1)\r\n```\r\n")
    rc, out, err = check("--check", "--allowed-programs", "python", p)
    t.ok(rc == 0 and p + ": block 0 label=python lang=python line 7-9: runs" in out
         and p + ": role: tools=[write_note, finish] writes=yes write_patterns=1" in out,
         "CRLF: the same keys and line numbers", out)

    # a control byte in a file name cannot forge a report line
    p = os.path.join(tmp, "evil\nx: ok.md")
    with open(p, "w") as f:
        f.write("")
    rc, out, err = check("--check", "--allowed-programs", "python", p)
    esc = p.replace("\n", "\\x0a")
    t.ok(rc == 1 and all(ln.startswith(esc + ": ") for ln in out),
         "a newline in a file name is shown as \\x0a", out)

    # bigger than 8 MiB: refused unread, not a crash
    p = os.path.join(tmp, "big.md")
    with open(p, "wb") as f:
        f.write(b"---\nwrite_patterns: [a]\n---\n```python\n```\n")
        f.truncate(8 * 1024 * 1024 + 1)
    rc, out, err = check("--check", "--allowed-programs", "python", p)
    t.ok(rc == 1 and out == [p + ": problem: cannot read: larger than 8388608 bytes",
                             p + ": 1 problem(s)"], "a note over 8 MiB is a problem", out)

    # exactly 8 MiB is read whole
    with open(p, "r+b") as f:
        f.truncate(8 * 1024 * 1024)
    rc, out, err = check("--check", "--allowed-programs", "python", p)
    t.ok(rc == 0 and out[-1] == p + ": ok", "a note of exactly 8 MiB is checked", out)

    # an unreadable path (a file used as a directory: refused to root too)
    p = os.path.join(NOTES, "good-python.md", "x.md")
    rc, out, err = check("--check", p)
    t.ok(rc == 1 and out == [p + ": problem: cannot read: Not a directory", p + ": 1 problem(s)"],
         "an unreadable path is a problem", out)

t.done()
