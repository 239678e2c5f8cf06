// http server + http.get client + global fetch against localhost
const http = require("http");
const assert = require("assert");

const srv = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ method: req.method, url: req.url, body }));
  });
});
srv.listen(0, "127.0.0.1", async () => {
  const { port } = srv.address();
  try {
    const got = await new Promise((resolve, reject) => {
      http.get(`http://127.0.0.1:${port}/a?b=1`, (res) => {
        let d = "";
        res.on("data", (c) => (d += c));
        res.on("end", () => resolve(JSON.parse(d)));
      }).on("error", reject);
    });
    assert.deepStrictEqual(got, { method: "GET", url: "/a?b=1", body: "" });
    const r = await fetch(`http://localhost:${port}/p`, { method: "POST", body: "xyz" });
    assert.deepStrictEqual(await r.json(), { method: "POST", url: "/p", body: "xyz" });
    console.log("http on", port);
    console.log("OK");
  } catch (e) {
    console.error(e);
    process.exitCode = 1;
  } finally {
    srv.close();
  }
});
