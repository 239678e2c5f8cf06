# socketpair, passing a file descriptor over SCM_RIGHTS to a forked child
import array
import os
import socket

a, b = socket.socketpair()
with open("passed.txt", "w") as f:
    f.write("passed by fd")
pid = os.fork()
if pid == 0:
    a.close()
    msg, anc, _, _ = b.recvmsg(10, socket.CMSG_LEN(4))
    fds = array.array("i")
    for level, typ, data in anc:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    text = os.read(fds[0], 100)
    b.send(text)
    os._exit(0)
b.close()
fd = os.open("passed.txt", os.O_RDONLY)
socket.send_fds(a, [b"fd"], [fd])
assert a.recv(100) == b"passed by fd"
os.waitpid(pid, 0)
os.unlink("passed.txt")
print("OK")
