# a TCP server and client on 127.0.0.1 in the same program (thread), and via "localhost"
import socket
import threading

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen()
port = srv.getsockname()[1]


def serve():
    for _ in range(2):
        c, _ = srv.accept()
        with c:
            c.sendall(c.recv(1024)[::-1])


t = threading.Thread(target=serve)
t.start()
with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
    c.sendall(b"loopback")
    assert c.recv(1024) == b"kcabpool"
with socket.create_connection(("localhost", port), timeout=60) as c:
    c.sendall(b"abc")
    assert c.recv(1024) == b"cba"
t.join(60)
srv.close()
print("tcp on port", port)
print("OK")
