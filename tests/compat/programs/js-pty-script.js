// a child under a pty through script(1) (node has no built-in pty)
const { spawnSync } = require("child_process");
const assert = require("assert");

const r = spawnSync("script", ["-qec", "node -e 'console.log(process.stdout.isTTY, process.stdin.isTTY)'", "/dev/null"], { encoding: "utf8" });
console.log(r.stdout.trim());
assert.strictEqual(r.status, 0);
assert.match(r.stdout, /true true/);
console.log("OK");
