# the interfaces a program can see: if_nameindex (netlink), the loopback address
import fcntl
import socket
import struct

names = [n for _, n in socket.if_nameindex()]
print("interfaces", names)
assert "lo" in names
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
addr = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", b"lo"))   # SIOCGIFADDR
assert socket.inet_ntoa(addr[20:24]) == "127.0.0.1"
flags = struct.unpack("H", fcntl.ioctl(s.fileno(), 0x8913, struct.pack("256s", b"lo"))[16:18])[0]
assert flags & 1, "lo is down"                                        # IFF_UP
assert socket.if_nametoindex("lo") >= 1
print("OK")
