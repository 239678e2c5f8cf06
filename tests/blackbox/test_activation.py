#!/usr/bin/env python3
"""Socket activation's variables, read by the handler itself (issue 14:
http/conn.c, no libsystemd): LISTEN_PID must name the handler, then
LISTEN_FDS=1 means the connection is descriptor 3; LISTEN_PID naming
another process means the descriptors are not ours (inetd style, the
connection on stdin/stdout); a malformed or unsupported LISTEN_FDS is no
connection (exit 1, a line on stderr, nothing written anywhere). A
served block never sees the variables."""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()
REQ = b"GET /no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
# exec keeps the shell's pid, so $$ is the handler's pid
SELF = ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', HANDLER, "--no-auth"]


def run(argv, listen_fds, on_fd3, on_stdio, env_pid=None):
    """Runs the handler with one end of a socketpair as fd 3 and/or as
    stdin/stdout; returns (exit status, bytes on fd 3's peer, bytes on
    stdio's peer, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LISTEN_")}
    env["LISTEN_FDS"] = listen_fds
    if env_pid is not None:
        env["LISTEN_PID"] = env_pid
    a3, b3 = socket.socketpair()
    a0, b0 = socket.socketpair()
    for s, data in ((a3, on_fd3), (a0, on_stdio)):
        if data:
            s.sendall(data)
        s.shutdown(socket.SHUT_WR)

    def fds():
        os.dup2(b3.fileno(), 3)
        os.dup2(b0.fileno(), 0)
        os.dup2(b0.fileno(), 1)
    p = subprocess.Popen(argv, env=env, preexec_fn=fds, pass_fds=(), stderr=subprocess.PIPE,
                         close_fds=False)
    b3.close()
    b0.close()
    err = p.communicate(timeout=30)[1].decode("utf-8", "replace")
    out3, out0 = b"", b""
    for s in (a3, a0):
        s.settimeout(5)
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        s.close()
        if s is a3:
            out3 = got
        else:
            out0 = got
    return p.returncode, out3, out0, err


rc, out3, out0, err = run(SELF, "1", REQ, b"")
t.ok(rc == 0 and out3.startswith(b"HTTP/1.1 404 ") and out0 == b"",
     "LISTEN_PID names the handler, LISTEN_FDS=1: the request on fd 3 is answered there",
     (rc, out3[:200], out0[:200], err[-300:]))

rc, out3, out0, err = run([HANDLER, "--no-auth"], "1", b"", REQ, env_pid="1")
t.ok(rc == 0 and out0.startswith(b"HTTP/1.1 404 ") and out3 == b"",
     "LISTEN_PID names another process: not ours, the connection is stdin/stdout (inetd)",
     (rc, out3[:200], out0[:200], err[-300:]))

for bad in ("abc", "", "-1", "1x", "2"):
    rc, out3, out0, err = run(SELF, bad, REQ, REQ)
    t.ok(rc == 1 and "no connection" in err and out3 == b"" and out0 == b"",
         "LISTEN_FDS=%r: no connection (exit 1, said on stderr, nothing answered)" % bad,
         (rc, out3[:200], out0[:200], err[-300:]))

rc, out3, out0, err = run(["sh", "-c", 'LISTEN_PID=x$$ exec "$0" "$@"', HANDLER, "--no-auth"],
                          "1", REQ, REQ)
t.ok(rc == 1 and "no connection" in err and out3 == b"" and out0 == b"",
     "a malformed LISTEN_PID: no connection", (rc, out3[:200], out0[:200], err[-300:]))

# a served block never sees the variables
with Server("--timeout", "20") as s:
    r = s.run(block("bash", "env | grep -c '^LISTEN_' || true"))
    t.eq((r.status, content(r)), (200, "0\n"), "a block's environment holds no LISTEN_ variable")
t.done()
