# subprocess: run, Popen pipes, communicate, check_output, shell pipelines, timeouts
import subprocess
import sys

r = subprocess.run(["echo", "hello"], capture_output=True, text=True, check=True)
assert r.stdout == "hello\n"
p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read()[::-1])"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out, _ = p.communicate(b"abcdef", timeout=60)
assert out == b"fedcba" and p.returncode == 0
assert subprocess.check_output("seq 1 100 | sort -rn | head -3", shell=True) == b"100\n99\n98\n"
p1 = subprocess.Popen(["printf", "b\\na\\nc\\n"], stdout=subprocess.PIPE)
p2 = subprocess.Popen(["sort"], stdin=p1.stdout, stdout=subprocess.PIPE)
p1.stdout.close()
assert p2.communicate()[0] == b"a\nb\nc\n"
try:
    subprocess.run(["sleep", "5"], timeout=0.2)
    raise AssertionError("no timeout")
except subprocess.TimeoutExpired:
    pass
r = subprocess.run(["sh", "-c", "echo err >&2; exit 7"], capture_output=True)
assert r.returncode == 7 and r.stderr == b"err\n"
r = subprocess.run("ls -la . >/dev/null && uname -s", shell=True, capture_output=True, text=True)
assert r.stdout.strip() == "Linux", r
print("subprocess pipes fine")
print("OK")
