# UDP on 127.0.0.1: sendto/recvfrom, connected sockets, a broadcast-free exchange
import socket

a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.bind(("127.0.0.1", 0))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.settimeout(60)
a.settimeout(60)
b.sendto(b"hello udp", a.getsockname())
data, addr = a.recvfrom(100)
assert data == b"hello udp"
a.sendto(data.upper(), addr)
assert b.recv(100) == b"HELLO UDP"
b.connect(a.getsockname())
b.send(b"connected")
assert a.recv(100) == b"connected"
print("udp", a.getsockname())
print("OK")
