# AF_UNIX stream and datagram sockets on a path in the working directory, and abstract names
import os
import socket
import threading

path = os.path.abspath("sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen()


def serve():
    c, _ = srv.accept()
    with c:
        c.sendall(c.recv(100) + b"!")


t = threading.Thread(target=serve)
t.start()
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(path)
c.sendall(b"unix")
assert c.recv(100) == b"unix!"
c.close()
t.join(60)
srv.close()
os.unlink(path)
name = "\0compat-%d" % os.getpid()
a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
a.bind(name)
b = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
b.sendto(b"abstract", name)
assert a.recv(100) == b"abstract"
print("OK")
