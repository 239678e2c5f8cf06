// writing /dev/stdout and /dev/stderr by path, reading /dev/stdin by path
const fs = require("fs");
const assert = require("assert");

fs.writeFileSync("/dev/stderr", "to stderr by path\n");
fs.appendFileSync("/dev/stdout", "to stdout by path\n");
const s = fs.createWriteStream("/dev/stdout");
s.write("through a stream on /dev/stdout\n");
s.end(() => {
  const input = fs.readFileSync("/dev/stdin", "utf8");
  assert.strictEqual(input, "");
  const fd = fs.openSync("/dev/fd/1", "w");
  fs.writeSync(fd, "via /dev/fd/1\n");
  fs.closeSync(fd);
  console.log("OK");
});
