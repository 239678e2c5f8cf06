# select, poll, epoll and selectors on pipes and a socketpair
import os
import select
import selectors
import socket

r, w = os.pipe()
assert select.select([r], [], [], 0) == ([], [], [])
os.write(w, b"x")
assert select.select([r], [], [], 1)[0] == [r]
p = select.poll()
p.register(r, select.POLLIN)
assert p.poll(1000) == [(r, select.POLLIN)]
ep = select.epoll()
ep.register(r, select.EPOLLIN)
assert ep.poll(1) == [(r, select.EPOLLIN)]
ep.close()
a, b = socket.socketpair()
sel = selectors.DefaultSelector()
sel.register(a, selectors.EVENT_READ, data="a")
b.send(b"ping")
ev = sel.select(1)
assert ev and ev[0][0].data == "a"
assert a.recv(4) == b"ping"
sel.close()
print(type(selectors.DefaultSelector()).__name__)
print("OK")
