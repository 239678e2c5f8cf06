// hard-coded /tmp paths, os.tmpdir(), readdir of / and /dev
const fs = require("fs");
const os = require("os");
const path = require("path");
const assert = require("assert");

const dir = `/tmp/compat-js-${process.pid}`;
fs.mkdirSync(dir);
fs.writeFileSync(path.join(dir, "f.txt"), "tmp data");
assert.strictEqual(fs.readFileSync(path.join(dir, "f.txt"), "utf8"), "tmp data");
fs.rmSync(dir, { recursive: true });
const t = fs.mkdtempSync(path.join(os.tmpdir(), "x-"));
fs.rmdirSync(t);
const root = fs.readdirSync("/");
console.log("/:", root.join(" "));
assert.ok(root.includes("usr") && root.includes("tmp"));
const dev = fs.readdirSync("/dev");
assert.ok(dev.includes("null") && dev.includes("shm"));
console.log("OK");
