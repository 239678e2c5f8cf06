# TCP over IPv6 loopback (::1) and a dual-stack listener
import socket
import threading

assert socket.has_ipv6
srv = socket.create_server(("::1", 0), family=socket.AF_INET6)
port = srv.getsockname()[1]


def serve():
    c, addr = srv.accept()
    with c:
        c.sendall(addr[0].encode())


t = threading.Thread(target=serve)
t.start()
with socket.create_connection(("::1", port), timeout=60) as c:
    assert c.recv(100) == b"::1"
t.join(60)
srv.close()
ds = socket.create_server(("", 0), family=socket.AF_INET6, dualstack_ipv6=True)
p2 = ds.getsockname()[1]
with socket.create_connection(("127.0.0.1", p2), timeout=60):
    c, addr = ds.accept()
    assert addr[0] == "::ffff:127.0.0.1", addr
    c.close()
ds.close()
print("OK")
