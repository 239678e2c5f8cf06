# the machine's own time zone (/etc/localtime) as naive code reads it
import datetime
import time

print("tzname", time.tzname, "localtime", time.strftime("%c"))
now = datetime.datetime.now().astimezone()
assert now.tzinfo is not None
# bounds a busy machine keeps; a wrong clock or time zone is off by far more
assert abs(time.time() - now.timestamp()) < 60
assert time.monotonic() > 0 and time.perf_counter() > 0 and time.process_time() >= 0
t0 = time.monotonic()
time.sleep(0.05)
assert 0.04 < time.monotonic() - t0 < 30
for clk in (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME,
            time.CLOCK_PROCESS_CPUTIME_ID, time.CLOCK_THREAD_CPUTIME_ID):
    assert time.clock_gettime(clk) >= 0
print("OK")
