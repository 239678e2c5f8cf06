// net.createServer + net.connect on 127.0.0.1 and ::1 in the same program
const net = require("net");
const assert = require("assert");

function roundTrip(host) {
  return new Promise((resolve, reject) => {
    const srv = net.createServer((s) => s.on("data", (d) => s.end(d.toString().toUpperCase())));
    srv.on("error", reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      const c = net.connect({ host, port }, () => c.write("ping " + host));
      let got = "";
      c.on("data", (d) => (got += d));
      c.on("error", reject);
      c.on("end", () => { srv.close(); resolve(got); });
    });
  });
}

(async () => {
  assert.strictEqual(await roundTrip("127.0.0.1"), "PING 127.0.0.1");
  assert.strictEqual(await roundTrip("::1"), "PING ::1");
  assert.strictEqual(await roundTrip("localhost"), "PING LOCALHOST");
  console.log("OK");
})().catch((e) => { console.error(e); process.exit(1); });
