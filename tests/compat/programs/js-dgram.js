// UDP (dgram) on 127.0.0.1
const dgram = require("dgram");
const assert = require("assert");

const srv = dgram.createSocket("udp4");
srv.on("message", (msg, rinfo) => srv.send(msg.toString().split("").reverse().join(""), rinfo.port, rinfo.address));
srv.bind(0, "127.0.0.1", () => {
  const c = dgram.createSocket("udp4");
  c.on("message", (m) => {
    assert.strictEqual(m.toString(), "olleh");
    c.close();
    srv.close();
    console.log("OK");
  });
  c.send("hello", srv.address().port, "127.0.0.1");
});
