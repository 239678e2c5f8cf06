// child_process: exec, execSync, execFile, spawn with pipes, spawnSync, shell pipelines
const cp = require("child_process");
const assert = require("assert");
const { promisify } = require("util");

(async () => {
  const { stdout } = await promisify(cp.exec)("echo hello | tr a-z A-Z");
  assert.strictEqual(stdout, "HELLO\n");
  assert.strictEqual(cp.execSync("seq 1 3 | paste -sd+ | bc").toString().trim(), "6");
  const r = await promisify(cp.execFile)("python3", ["-c", "print(6*7)"]);
  assert.strictEqual(r.stdout.trim(), "42");
  const child = cp.spawn("sort", [], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stdin.end("b\na\nc\n");
  const code = await new Promise((res) => child.on("close", res));
  assert.strictEqual(code, 0);
  assert.strictEqual(out, "a\nb\nc\n");
  const s = cp.spawnSync("sh", ["-c", "echo err >&2; exit 3"]);
  assert.strictEqual(s.status, 3);
  assert.strictEqual(s.stderr.toString(), "err\n");
  const killed = cp.spawn("sleep", ["10"]);
  setTimeout(() => killed.kill("SIGTERM"), 50);
  const sig = await new Promise((res) => killed.on("exit", (c, sg) => res(sg)));
  assert.strictEqual(sig, "SIGTERM");
  console.log("child_process fine");
  console.log("OK");
})().catch((e) => { console.error(e); process.exit(1); });
