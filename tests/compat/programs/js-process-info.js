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
// keeps the loop alive until the signal is handled (60 s: only when it never is)
const keep = setTimeout(() => { console.error("no SIGUSR2"); process.exit(1); }, 60000);
process.on("SIGUSR2", () => {
  clearTimeout(keep);
  console.log("got SIGUSR2");
  console.log("OK");
});
process.kill(process.pid, "SIGUSR2");
