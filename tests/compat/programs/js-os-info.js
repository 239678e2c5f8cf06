// the os module as scripts use it: cpus, memory, interfaces, tmpdir, userInfo, hostname, loadavg
const os = require("os");
const assert = require("assert");

const cpus = os.cpus();
console.log("cpus", cpus.length, cpus[0] && cpus[0].model);
assert.ok(cpus.length >= 1);
assert.ok(os.availableParallelism() >= 1);
assert.ok(os.totalmem() > 0 && os.freemem() > 0);
const ifs = os.networkInterfaces();
console.log("interfaces", Object.keys(ifs));
assert.ok(ifs.lo && ifs.lo.some((a) => a.address === "127.0.0.1"));
assert.strictEqual(os.tmpdir(), process.env.TMPDIR);
const u = os.userInfo();
console.log("user", u.username, u.uid, u.homedir);
assert.strictEqual(u.uid, process.getuid());
assert.ok(os.hostname());
assert.strictEqual(os.loadavg().length, 3);
assert.ok(os.uptime() > 0);
assert.strictEqual(os.platform(), "linux");
console.log(os.type(), os.release(), os.arch(), os.version(), os.machine());
assert.strictEqual(os.homedir(), process.env.HOME);
console.log("OK");
