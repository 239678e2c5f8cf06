// worker_threads: workers, MessageChannel, SharedArrayBuffer + Atomics
const { Worker, isMainThread, parentPort, workerData } = require("worker_threads");
const assert = require("assert");

if (!isMainThread) {
  const arr = new Int32Array(workerData.sab);
  for (let i = 0; i < 10000; i++) Atomics.add(arr, 0, 1);
  parentPort.postMessage(workerData.id);
} else {
  const sab = new SharedArrayBuffer(4);
  const done = [];
  let n = 4;
  for (let id = 0; id < 4; id++) {
    const w = new Worker(__filename, { workerData: { sab, id } });
    w.on("message", (m) => done.push(m));
    w.on("error", (e) => { console.error(e); process.exit(1); });
    w.on("exit", () => {
      if (--n === 0) {
        assert.strictEqual(new Int32Array(sab)[0], 40000);
        assert.deepStrictEqual(done.sort(), [0, 1, 2, 3]);
        console.log("4 workers, 40000 atomic adds");
        console.log("OK");
      }
    });
  }
}
