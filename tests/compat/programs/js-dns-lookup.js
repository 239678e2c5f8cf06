// dns.lookup of local names (getaddrinfo through libuv's thread pool)
const dns = require("dns");
const os = require("os");
const assert = require("assert");

dns.lookup("localhost", { all: true }, (err, addrs) => {
  assert.ifError(err);
  console.log("localhost", addrs);
  assert.ok(addrs.some((a) => a.address === "127.0.0.1" || a.address === "::1"));
  dns.lookup(os.hostname(), (err2, addr) => {
    assert.ifError(err2);
    console.log("hostname", os.hostname(), addr);
    dns.promises.lookup("127.0.0.1").then((r) => {
      assert.strictEqual(r.address, "127.0.0.1");
      console.log("OK");
    });
  });
});
