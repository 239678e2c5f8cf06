// several wasm memories in one process, as several wasm-based libraries loaded together make
// (V8 reserves ~10 GiB of address space for each)
const assert = require("assert");
// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add) (memory (export "mem") 1))
const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 127, 127, 1, 127, 3, 2, 1, 0,
  5, 3, 1, 0, 1, 7, 13, 2, 3, 97, 100, 100, 0, 0, 3, 109, 101, 109, 2, 0, 10, 9, 1, 7, 0, 32, 0, 32, 1, 106, 11]);
WebAssembly.instantiate(bytes).then(({ instance }) => {
  assert.strictEqual(instance.exports.add(2, 40), 42);
  instance.exports.mem.grow(100);
  assert.strictEqual(instance.exports.mem.buffer.byteLength, 101 * 65536);
  const mems = [];
  for (let i = 0; i < 8; i++) mems.push(new WebAssembly.Memory({ initial: 1, maximum: 65536 }));
  console.log("1 instance and", mems.length, "more wasm memories");
  console.log("OK");
}).catch((e) => { console.error(e); process.exit(1); });
