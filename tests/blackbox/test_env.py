#!/usr/bin/env python3
"""Environments as models (--environments; issue 31), against the small
environment `make envs` builds for the tests (deploy/envs/tiny.packages:
python3-minimal and a package the host does not have):

- it is a model in GET /v1/models, with its languages, packages and digest;
- a block of it runs there and imports its packages; the host's /usr is
  not visible (a file and a package only the host has are absent), while
  the same code on model "codellm" sees the host's;
- a model that is neither codellm, a language nor an environment is the
  OpenAI unknown-model error; a language the environment lacks is 400;
- a tree or manifest tampered with (a file's bytes, a mode, an owner, the
  digest, a directory above) is a 503 that names the environment, and
  /healthz says which; the kept full check is trusted only while the
  tree's top is unchanged and for --environment-verify seconds;
- the answer and the journal record name the environment and its digest.

The record goes to standard error as a JSON line where no journal
listens: the test runs itself in `unshare -m` with a tmpfs on /run, so
none does."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import *  # noqa: E402,F401,F403

if not reexec_in_mount_ns("CODELLM_ENV_INNER"):
    print("ok 1 - environments # SKIP needs root and unshare(1)")
    print("1..1")
    sys.exit(1 if MUST_SANDBOX else 0)
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)

t = Tap()
ENVDIR = os.environ.get("CODELLM_TEST_ENVDIR", os.path.join(TOP, "build", "envs"))
TINY = os.path.join(ENVDIR, "tiny")
# what only the host has: a program (gcc builds codellm) and the package
# the environment adds, which the host must not have
HOST_ONLY_FILE = "/usr/bin/gcc"
ENV_ONLY_MODULE = "tabulate"


def manifest(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


if not os.path.isfile(os.path.join(TINY, "manifest.json")):
    t.ok(False, "the test environment %s is built (make envs)" % TINY)
    t.done()
M = manifest(TINY)
t.ok(os.path.exists(HOST_ONLY_FILE) and
     subprocess.run(["/usr/bin/python3", "-c", "import " + ENV_ONLY_MODULE],
                    capture_output=True).returncode != 0,
     "the host has %s and not the module %s (what the checks below tell apart)"
     % (HOST_ONLY_FILE, ENV_ONLY_MODULE))

PROBE = ("import json, os, sys\n"
         "r = {'host_file': os.path.exists(%r), 'python': sys.version.split()[0]}\n"
         "try:\n"
         "    import %s as m\n"
         "    r['module'] = m.__file__\n"
         "except ImportError as e:\n"
         "    r['module'] = None\n"
         "print(json.dumps(r))\n") % (HOST_ONLY_FILE, ENV_ONLY_MODULE)


def jout(r):
    try:
        return json.loads(content(r))
    except (TypeError, ValueError):
        return {}


with Server("--environments", ENVDIR) as s:
    r = s.request("GET", "/v1/models")
    ids = [m.get("id") for m in (r.json or {}).get("data", [])]
    tiny = next((m for m in (r.json or {}).get("data", []) if m.get("id") == "tiny"), {})
    cl = tiny.get("codellm") or {}
    pkgs = {p.get("name"): p.get("version") for p in cl.get("packages") or []}
    t.ok(r.status == 200 and ids[:1] == ["codellm"] and "python" in ids and "tiny" in ids,
         "GET /v1/models lists codellm, the languages and the environment tiny", ids)
    t.ok(cl.get("environment") is True and cl.get("digest") == M["digest"]
         and "python" in (cl.get("languages") or []) and "ruby" not in (cl.get("languages") or [])
         and pkgs.get("python3-" + ENV_ONLY_MODULE) and pkgs == {p["name"]: p["version"] for p in M["packages"]},
         "its codellm member: environment, its languages (python, not ruby), its digest and "
         "every package with its version, as the manifest has them", cl)
    r1 = s.request("GET", "/v1/models/tiny")
    t.ok(r1.status == 200 and (r1.json or {}).get("id") == "tiny"
         and dig(r1.json, "codellm", "digest") == M["digest"], "GET /v1/models/tiny", r1)

    r = s.run(block("python", PROBE), model="tiny")
    got = jout(r)
    t.ok(r.status == 200 and got.get("module", "").startswith("/usr/lib/python3/dist-packages/"),
         "a block of model tiny imports %s, the environment's package" % ENV_ONLY_MODULE, r)
    t.eq(got.get("host_file"), False,
         "the host's /usr is not there: %s, which only the host has, is absent" % HOST_ONLY_FILE)
    t.eq(field(r, "codellm", "environment"), {"name": "tiny", "digest": M["digest"]},
         "the answer's codellm object names the environment and its digest")
    rec = stderr_audit_records(s, r.json["id"]) if r.json else []
    t.ok(rec and rec[-1].get("CODELLM_ENVIRONMENT") == "tiny"
         and rec[-1].get("CODELLM_ENVIRONMENT_DIGEST") == M["digest"],
         "the journal record has CODELLM_ENVIRONMENT and CODELLM_ENVIRONMENT_DIGEST", rec[-1:])
    r = s.run(block("python", PROBE), model="codellm")
    got = jout(r)
    t.ok(r.status == 200 and got.get("host_file") is True and got.get("module") is None
         and field(r, "codellm", "environment") is None,
         "the same code on model codellm runs on the host's trees (%s there, no %s, no "
         "environment in the answer)" % (HOST_ONLY_FILE, ENV_ONLY_MODULE), r)
    r = s.run(block("bash", "ls /usr/bin | wc -l; test -e /usr/bin/python3 && echo py"), model="tiny")
    t.ok(r.status == 200 and (content(r) or "").endswith("py\n"), "a bash block runs there too", r)

    r = s.run(block("python", "print(1)"), model="no-such-env")
    t.ok(r.status == 404 and (r.error() or {}).get("code") == "model_not_found"
         and "`no-such-env` does not exist" in (r.error() or {}).get("message", ""),
         "a model that is no environment: 404 model_not_found, OpenAI's wording", r)
    os.mkdir(os.path.join(ENVDIR, "half-built"), 0o755) if not os.path.exists(
        os.path.join(ENVDIR, "half-built")) else None
    r = s.run(block("python", "print(1)"), model="half-built")
    t.ok(r.status == 404 and (r.error() or {}).get("code") == "model_not_found",
         "a directory without a manifest is no environment: 404", r)
    os.rmdir(os.path.join(ENVDIR, "half-built"))
    r = s.run(block("ruby", "puts 1"), model="tiny")
    e = r.error() or {}
    t.ok(r.status == 400 and e.get("code") == "language_not_available"
         and "`tiny` has no ruby" in e.get("message", "") and "python" in e.get("message", ""),
         "a block in a language the environment lacks: 400 language_not_available, naming the "
         "environment and its languages; nothing runs", r)
    r = s.run(block("python", "print('py')") + block("ruby", "puts 2"), model="tiny")
    t.eq(r.status, 400, "… also when it is the second block of a pipeline")
    r = s.request("GET", "/healthz")
    envs = (r.json or {}).get("environments") or []
    t.ok(r.status == 200 and {"name": "tiny", "digest": M["digest"], "ok": True} in envs
         and all(e.get("ok") is True for e in envs),
         "/healthz lists each environment with its digest, ok", envs)

# ---- without --environments: as before ------------------------------------------------
with Server() as s:
    r = s.run(block("python", "print('any model')"), model="gpt-4o")
    t.ok(r.status == 200 and content(r) == "any model\n",
         "without --environments any model runs as codellm does (as before)", r)
    r = s.request("GET", "/v1/models")
    t.ok("tiny" not in [m.get("id") for m in (r.json or {}).get("data", [])],
         "… and no environment is listed")

# ---- --sandbox off builds no root: an environment cannot be given ---------------------
with Server("--environments", ENVDIR, sandbox="off") as s:
    r = s.run(block("python", "print(1)"), model="tiny")
    t.ok(r.status == 503 and (r.error() or {}).get("code") == "sandbox_unavailable"
         and "root" in (r.error() or {}).get("message", ""),
         "--sandbox off: a request on an environment is 503 sandbox_unavailable (root), not a "
         "run on the host's trees", r)

# ---- tampering ------------------------------------------------------------------------
# A copy of the environment in a directory of root's own (mkdtemp: 0700,
# under sticky /var/tmp), tampered with one way at a time.


def fresh_copy(where="/var/tmp"):
    base = tempfile.mkdtemp(prefix="codellm-envs-", dir=where)
    os.chmod(base, 0o755)        # the blocks' users reach the tree through it
    subprocess.run(["cp", "-a", TINY, os.path.join(base, "tiny")], check=True)
    return base


def module_file(root):
    for dirpath, _, files in os.walk(os.path.join(root, "usr", "lib", "python3", "dist-packages")):
        for fn in files:
            if fn.endswith(".py") and ENV_ONLY_MODULE in os.path.join(dirpath, fn):
                return os.path.join(dirpath, fn)
    return None


def tamper_case(desc, tamper, verify="0", expect_log=None):
    base = fresh_copy()
    try:
        with Server("--environments", base, "--environment-verify", verify) as s:
            before = s.run(block("python", "print('before')"), model="tiny")
            tamper(os.path.join(base, "tiny"))
            r = s.run(block("python", "print('after')"), model="tiny")
            h = s.request("GET", "/healthz")
            log = s.log_text()
        envs = (h.json or {}).get("environments") or [{}]
        e = r.error() or {}
        t.ok(before.status == 200 and r.status == 503 and e.get("code") == "environment_unavailable"
             and "`tiny`" in e.get("message", "") and r.header("x-should-retry") == "false"
             and envs[0].get("ok") is False and h.status == 200
             and (expect_log is None or expect_log in log),
             "%s: 503 environment_unavailable naming it, nothing runs; /healthz says it is not ok"
             % desc, (repr(r)[:400], envs, log[-800:]))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def append_byte(env):
    with open(module_file(os.path.join(env, "root")), "a") as f:
        f.write("#")


def world_writable(env):
    os.chmod(module_file(os.path.join(env, "root")), 0o646)


def not_roots(env):
    os.chown(module_file(os.path.join(env, "root")), 65534, 65534)


def wrong_digest(env):
    p = os.path.join(env, "manifest.json")
    m = manifest(env)
    m["digest"] = "sha256:" + "0" * 64
    with open(p, "w") as f:
        json.dump(m, f)


def manifest_not_roots(env):
    os.chown(os.path.join(env, "manifest.json"), 65534, 65534)


def top_group_writable(env):
    os.chmod(os.path.join(env, "root", "usr"), 0o775)


def parent_writable(env):
    os.chmod(os.path.dirname(env), 0o777)


tamper_case("a file's bytes changed", append_byte, expect_log="hashes to")
tamper_case("a file others may write", world_writable, expect_log="may be written by others")
tamper_case("a file that is not root's", not_roots, expect_log="is not root's")
tamper_case("a manifest whose digest is not the tree's", wrong_digest, expect_log="its manifest says")
tamper_case("a manifest that is not root's", manifest_not_roots)
tamper_case("a top directory others may write", top_group_writable)
tamper_case("a directory above the environment others may write", parent_writable,
            expect_log="above the environment")
tamper_case("a directory above the environment the blocks cannot search",
            lambda env: os.chmod(os.path.dirname(env), 0o700), expect_log="searchable by all")

# The kept full check: trusted while the tree's top is unchanged, for
# --environment-verify seconds; a change at the top is seen at once.
base = fresh_copy()
try:
    with Server("--environments", base, "--environment-verify", "3600") as s:
        r0 = s.run(block("python", "print(1)"), model="tiny")
        kept = [n for n in os.listdir(s.slots) if n.startswith("env-")]
        append_byte(os.path.join(base, "tiny"))
        r1 = s.run(block("python", "print(2)"), model="tiny")
        os.utime(os.path.join(base, "tiny", "manifest.json"))   # a change at the top
        os.chmod(os.path.join(base, "tiny", "manifest.json"), 0o644)
        r2 = s.run(block("python", "print(3)"), model="tiny")
    t.ok(r0.status == 200 and kept == ["env-tiny.verified"],
         "the full check's result is kept in the runtime directory (env-tiny.verified)", kept)
    t.ok(r1.status == 200 and content(r1) == "2\n",
         "a file changed deep inside after the check (only root can) is trusted until the "
         "check is due again (--environment-verify 3600)", r1)
    t.ok(r2.status == 503 and (r2.error() or {}).get("code") == "environment_unavailable",
         "a change at the tree's top (the manifest's change time) checks it in full at once: 503",
         r2)
finally:
    shutil.rmtree(base, ignore_errors=True)

# A tree below /tmp (a checkout there, as CI's fresh clone is): the run's
# own tmpfs on /tmp must not hide it from the blocks.
base = fresh_copy("/tmp")
try:
    with Server("--environments", base) as s:
        r = s.run(block("python", PROBE), model="tiny")
    got = jout(r)
    t.ok(r.status == 200 and got.get("module") and got.get("host_file") is False,
         "an environment kept below /tmp (%s) runs: the run's tmpfs on /tmp does not hide it" % base, r)
finally:
    shutil.rmtree(base, ignore_errors=True)
t.done()
