# the usual /proc reads: cpuinfo, meminfo, loadavg, uptime, self/status, cpu counts
import os

with open("/proc/cpuinfo") as f:
    cpu = f.read()
assert "processor" in cpu
with open("/proc/meminfo") as f:
    mem = dict(line.split(":", 1) for line in f)
assert int(mem["MemTotal"].split()[0]) > 0
with open("/proc/loadavg") as f:
    print("loadavg", f.read().split()[:3])
with open("/proc/uptime") as f:
    assert float(f.read().split()[0]) > 0
with open("/proc/self/status") as f:
    st = f.read()
assert "VmRSS" in st and "Uid:" in st
print("cpus", os.cpu_count(), len(os.sched_getaffinity(0)))
assert os.cpu_count() >= 1 and len(os.sched_getaffinity(0)) >= 1
print("loadavg()", os.getloadavg())
with open("/proc/self/cmdline", "rb") as f:
    assert b"python3" in f.read()
assert os.readlink("/proc/self/exe").startswith("/usr/bin/python3")
with open("/proc/version") as f:
    assert f.read().startswith("Linux")
with open("/proc/self/mountinfo") as f:
    assert f.read()
print("OK")
