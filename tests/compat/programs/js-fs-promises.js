// fs.promises: mkdir -p, writeFile, readFile, readdir, stat, rename, rm -r, mkdtemp in os.tmpdir()
const fs = require("fs/promises");
const fss = require("fs");
const os = require("os");
const path = require("path");
const assert = require("assert");

(async () => {
  await fs.mkdir("a/b/c", { recursive: true });
  await fs.writeFile("a/b/c/x.json", JSON.stringify({ ok: true }));
  assert.deepStrictEqual(JSON.parse(await fs.readFile("a/b/c/x.json", "utf8")), { ok: true });
  assert.deepStrictEqual(await fs.readdir("a/b"), ["c"]);
  assert.strictEqual((await fs.stat("a/b/c/x.json")).size, 11);
  await fs.rename("a/b/c/x.json", "a/y.json");
  await fs.appendFile("a/y.json", "\n");
  await fs.symlink("y.json", "a/link");
  assert.strictEqual(await fs.readlink("a/link"), "y.json");
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "compat-"));
  await fs.writeFile(path.join(tmp, "t"), "x");
  await fs.rm(tmp, { recursive: true });
  await fs.rm("a", { recursive: true });
  assert.ok(!fss.existsSync("a"));
  await fs.copyFile(__filename, "copy.js");
  const fh = await fs.open("copy.js", "r");
  const { bytesRead } = await fh.read(Buffer.alloc(10), 0, 10, 0);
  await fh.close();
  assert.strictEqual(bytesRead, 10);
  console.log("tmpdir", os.tmpdir());
  console.log("OK");
})().catch((e) => { console.error(e); process.exit(1); });
