// net server on a unix socket path in the working directory
const net = require("net");
const path = require("path");
const assert = require("assert");

const sock = path.join(process.cwd(), "s.sock");
const srv = net.createServer((c) => c.end("unix hello"));
srv.listen(sock, () => {
  const c = net.connect(sock);
  let got = "";
  c.on("data", (d) => (got += d));
  c.on("end", () => {
    assert.strictEqual(got, "unix hello");
    srv.close();
    console.log("OK");
  });
});
