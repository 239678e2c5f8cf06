# platform and host identity: uname, hostname, machine, libc, python build
import os
import platform
import socket

u = platform.uname()
print(u.system, u.node, u.release, u.machine)
assert u.system == "Linux" and u.machine and u.release
assert os.uname().sysname == "Linux"
host = socket.gethostname()
assert host and host == os.uname().nodename
assert socket.getfqdn()
print(platform.platform())
print(platform.libc_ver(), platform.python_implementation(), platform.architecture()[0])
assert platform.libc_ver()[0] == "glibc"
print("OK")
