// streams (pipeline, Transform, readline), timers, EventEmitter, promises, gzip to a file
const { pipeline, Transform, Readable } = require("stream");
const fs = require("fs");
const zlib = require("zlib");
const readline = require("readline");
const assert = require("assert");

const upper = new Transform({ transform(chunk, enc, cb) { cb(null, chunk.toString().toUpperCase()); } });
pipeline(Readable.from(["a\n", "b\n", "c\n"]), upper, zlib.createGzip(), fs.createWriteStream("out.gz"), async (err) => {
  assert.ifError(err);
  const rl = readline.createInterface({ input: fs.createReadStream("out.gz").pipe(zlib.createGunzip()) });
  const lines = [];
  for await (const l of rl) lines.push(l);
  assert.deepStrictEqual(lines, ["A", "B", "C"]);
  await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setImmediate(r));
  console.log("OK");
});
