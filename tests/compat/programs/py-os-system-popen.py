# os.system, os.popen, os.posix_spawn, os.spawnvp
import os

assert os.system("true") == 0
assert os.waitstatus_to_exitcode(os.system("exit 3")) == 3
with os.popen("echo popen; echo two") as f:
    assert f.read() == "popen\ntwo\n"
pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 5"], os.environ)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 5
pid = os.posix_spawnp("true", ["true"], os.environ)
assert os.waitpid(pid, 0)[1] == 0
assert os.spawnvp(os.P_WAIT, "sh", ["sh", "-c", "exit 2"]) == 2
print("os.system and friends fine")
print("OK")
