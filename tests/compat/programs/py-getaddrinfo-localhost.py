# name resolution of local names: localhost, the own hostname, services, protocols
import socket

infos = socket.getaddrinfo("localhost", 80, proto=socket.IPPROTO_TCP)
addrs = {i[4][0] for i in infos}
print("localhost ->", sorted(addrs))
assert "127.0.0.1" in addrs or "::1" in addrs
assert socket.gethostbyname("localhost") == "127.0.0.1"
assert socket.getservbyname("http", "tcp") == 80
assert socket.getprotobyname("tcp") == 6
assert socket.gethostbyaddr("127.0.0.1")[0]
host = socket.gethostname()
print("hostname", host, socket.gethostbyname(host))
assert socket.inet_pton(socket.AF_INET6, "::1")
print("OK")
