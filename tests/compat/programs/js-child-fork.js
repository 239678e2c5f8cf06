// child_process.fork with an IPC channel (a unix socketpair) to a node child
const cp = require("child_process");
const assert = require("assert");

if (process.argv[2] === "child") {
  process.on("message", (m) => {
    process.send({ doubled: m.n * 2, pid: process.pid });
    process.disconnect();
  });
} else {
  const c = cp.fork(__filename, ["child"]);
  c.send({ n: 21 });
  c.on("message", (m) => {
    assert.strictEqual(m.doubled, 42);
    assert.notStrictEqual(m.pid, process.pid);
  });
  c.on("exit", (code) => {
    assert.strictEqual(code, 0);
    console.log("forked child answered");
    console.log("OK");
  });
}
