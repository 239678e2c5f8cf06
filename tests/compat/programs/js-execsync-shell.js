// execSync shell one-liners as node scripts use them: ls, grep, uname, whoami, cat /etc/os-release
const { execSync } = require("child_process");
const assert = require("assert");

const sh = (c) => execSync(c, { encoding: "utf8" }).trim();
assert.strictEqual(sh("uname -s"), "Linux");
assert.ok(sh("whoami"));
assert.ok(sh("ls / | wc -l") > 3);
assert.match(sh(". /etc/os-release && echo $ID"), /\w+/);
assert.strictEqual(sh("echo $HOME"), process.env.HOME);
assert.strictEqual(sh("pwd"), process.cwd());
console.log("node", process.version, "on", sh("uname -r"));
console.log("OK");
