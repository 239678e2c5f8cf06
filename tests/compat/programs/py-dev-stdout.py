# writing to /dev/stdout and /dev/stderr by name, and /proc/self/fd/1
import os
import sys

with open("/dev/stderr", "w") as err:
    err.write("to stderr by name\n")
with open("/dev/stdout", "w") as out:
    out.write("to stdout by name\n")
with open("/proc/self/fd/1", "w") as out:
    out.write("to /proc/self/fd/1\n")
fd = os.open("/dev/fd/2", os.O_WRONLY)
os.write(fd, b"to /dev/fd/2\n")
os.close(fd)
sys.stdout.flush()
print("OK")
