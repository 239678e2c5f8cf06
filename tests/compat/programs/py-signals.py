# signals: handlers, alarm, setitimer, SIGCHLD, pthread_kill, sigwait, signal to a child
import os
import signal
import threading
import time

got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
os.kill(os.getpid(), signal.SIGUSR1)
assert got == [signal.SIGUSR1]
signal.signal(signal.SIGALRM, lambda s, f: got.append("alarm"))
signal.alarm(1)
signal.pause()
assert got[-1] == "alarm"
signal.signal(signal.SIGALRM, lambda s, f: got.append("itimer"))
signal.setitimer(signal.ITIMER_REAL, 0.05)
time.sleep(1)
assert got[-1] == "itimer"
chld = []
signal.signal(signal.SIGCHLD, lambda s, f: chld.append(s))
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.05)
assert chld, "no SIGCHLD"
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)
assert signal.sigwait({signal.SIGUSR2}) == signal.SIGUSR2
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, lambda s, f: os._exit(42))
    os.write(w, b"!")          # the handler is set: the parent may signal now
    time.sleep(30)
    os._exit(0)
os.close(w)
assert os.read(r, 1) == b"!", "the child ended before setting its handler"
os.close(r)
os.kill(pid, signal.SIGTERM)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 42
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
print("OK")
