# socketserver: threading TCP, forking TCP and UDP servers on loopback
import socket
import socketserver
import threading


class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(self.rfile.readline().upper())


class UEcho(socketserver.DatagramRequestHandler):
    def handle(self):
        self.wfile.write(self.rfile.read().lower())


for cls in (socketserver.ThreadingTCPServer, socketserver.ForkingTCPServer):
    with cls(("127.0.0.1", 0), Echo) as srv:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        with socket.create_connection(srv.server_address, timeout=60) as c:
            c.sendall(b"line\n")
            assert c.makefile("rb").readline() == b"LINE\n"
        srv.shutdown()
with socketserver.UDPServer(("127.0.0.1", 0), UEcho) as u:
    threading.Thread(target=u.serve_forever, daemon=True).start()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(60)
    s.sendto(b"QUIET", u.server_address)
    assert s.recv(100) == b"quiet"
    u.shutdown()
print("OK")
