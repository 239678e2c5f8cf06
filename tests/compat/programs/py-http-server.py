# http.server in a thread + urllib.request / http.client against localhost
import http.client
import http.server
import json
import threading
import urllib.request


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        data = self.rfile.read(n)
        self.send_response(201)
        self.end_headers()
        self.wfile.write(data[::-1])

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
port = srv.server_address[1]
t = threading.Thread(target=srv.serve_forever, daemon=True)
t.start()
with urllib.request.urlopen("http://127.0.0.1:%d/hello?x=1" % port, timeout=60) as r:
    assert json.load(r) == {"path": "/hello?x=1"}
with urllib.request.urlopen("http://localhost:%d/again" % port, timeout=60) as r:
    assert r.status == 200
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
c.request("POST", "/p", body=b"abc")
resp = c.getresponse()
assert resp.status == 201 and resp.read() == b"cba"
srv.shutdown()
print("served on", port)
print("OK")
