# python3 -m venv (without pip) in the working directory, then run its python
import os
import subprocess
import sys

r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", "env"], capture_output=True, text=True)
print(r.stderr.strip())
assert r.returncode == 0
out = subprocess.check_output(["env/bin/python", "-c", "import sys; print(sys.prefix != sys.base_prefix)"])
assert out.strip() == b"True", out
assert os.path.exists("env/pyvenv.cfg")
print("OK")
