// cluster: forked workers sharing one listening port on 127.0.0.1
const cluster = require("cluster");
const http = require("http");
const assert = require("assert");

if (cluster.isPrimary) {
  let port, ready = 0;
  const pids = new Set();
  for (let i = 0; i < 2; i++) cluster.fork();
  cluster.on("listening", (w, addr) => {
    port = addr.port;
    if (++ready < 2) return;
    let left = 6;
    for (let i = 0; i < 6; i++) {
      http.get(`http://127.0.0.1:${port}/`, { agent: false }, (res) => {
        let d = "";
        res.on("data", (c) => (d += c));
        res.on("end", () => {
          pids.add(d);
          if (--left === 0) {
            for (const id in cluster.workers) cluster.workers[id].kill();
            assert.ok(pids.size >= 1);
            console.log("served by", pids.size, "workers");
            console.log("OK");
          }
        });
      });
    }
  });
} else {
  http.createServer((req, res) => res.end(String(process.pid))).listen(0, "127.0.0.1");
}
