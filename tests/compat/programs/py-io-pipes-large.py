# large data through pipes between processes (no deadlock), and to our own stdout
import subprocess
import sys

data = b"0123456789abcdef" * (1 << 16)          # 1 MiB
p = subprocess.run(["cat"], input=data, capture_output=True)
assert p.stdout == data
p = subprocess.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'y' * (4 << 20))"],
                   capture_output=True)
assert len(p.stdout) == 4 << 20
for i in range(2000):
    print("line %04d of ordinary output" % i)
print("OK")
