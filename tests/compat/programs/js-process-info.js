// process: memoryUsage, resourceUsage, cpuUsage, hrtime, getuid, umask, kill(0), signals
const assert = require("assert");

assert.ok(process.memoryUsage().rss > 0);
assert.ok(process.resourceUsage().maxRSS > 0);
assert.ok(process.cpuUsage().user >= 0);
assert.ok(process.hrtime.bigint() > 0n);
assert.strictEqual(typeof process.getuid(), "number");
assert.ok(process.getgroups().length >= 0);
assert.strictEqual(process.kill(process.pid, 0), true);
process.umask(0o022);
console.log("pid", process.pid, "ppid", process.ppid, "uid", process.getuid(), "cwd", process.cwd());
process.on("SIGUSR2", () => {
  console.log("got SIGUSR2");
  console.log("OK");
});
process.kill(process.pid, "SIGUSR2");
setTimeout(() => {}, 50);
