// The real codellm-handler behind systemd-socket-activate, for tests that
// talk to it through the official OpenAI clients (as tests/blackbox/harness.py
// does with raw sockets). Each server gets a free port, its own temp dir
// (TMPDIR for the runs, the slot directory, the key file and the log).
//
//   const s = await startServer({ args: ['--max-concurrent', '1'] });
//   const client = s.client();            // an OpenAI client for it
//   s.spawned()                           // connections that reached a handler
//   await s.stop();                       // throws on a sanitizer report
//
// Waits end on what they wait for, never after a fixed time: a block the
// test must catch running waits at a gate (gate(), s.openGate()) until the
// test lets it go. Their deadlines (WAIT) only end waits for what never
// comes, and are many times what a busy machine (a load of several times
// its CPUs) takes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const TOP = path.resolve(HERE, '..', '..');
export const HANDLER = process.env.CODELLM_HANDLER || path.join(TOP, 'codellm-handler');
export const KEY = 'test-key-5d41402abc4b2a76b9719d911017c592';
export const ALLOWED = 'python,bash,node';
const SANITIZER_MARKS = ['AddressSanitizer', 'LeakSanitizer', 'runtime error:',
  'UndefinedBehaviorSanitizer'];

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The deadline (ms) of a wait for something that should come. */
export const WAIT = 60000;

/**
 * Code that makes a FIFO `name` in the block's working directory and waits
 * until a line comes through it: the block waits there until the test calls
 * s.openGate(name), however long that takes.
 */
export function gate(lang, name = 'gate') {
  if (lang === 'python') return `import os\nos.mkfifo(${JSON.stringify(name)})\nopen(${JSON.stringify(name)}).readline()\n`;
  if (lang === 'bash') return `mkfifo ${name} && read -r _ < ${name}\n`;
  throw new Error('no gate for ' + lang);
}

export function block(lang, code) {
  return '```' + lang + '\n' + code + '\n```\n';
}

/** Agent-mode tools, as fleet declares them. */
export const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'write_note', description: 'Create or replace a note.',
      parameters: {
        type: 'object', required: ['path', 'content'],
        properties: { path: { type: 'string' }, content: { type: 'string' } },
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'patch_note', description: 'Replace text in a note.',
      parameters: {
        type: 'object', required: ['path', 'find', 'replace'],
        properties: { path: { type: 'string' }, find: { type: 'string' }, replace: { type: 'string' } },
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'finish', description: 'End the run with an answer.',
      parameters: { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } },
    },
  },
];

/** A python block that prints fleet's {"changes":[…],"answer":…}, after
 * `delay` seconds of silence when given. */
export function changesBlock(changes, answer, delay = 0) {
  // A JSON string literal is a valid Python string literal.
  const lit = JSON.stringify(JSON.stringify({ changes, answer }));
  const wait = delay ? `import time\ntime.sleep(${delay})\n` : '';
  return block('python', `import json\n${wait}print(json.dumps(json.loads(${lit})))`);
}

/** The tool calls (name, parsed arguments) codellm makes of `changes`. */
export function expectedCalls(changes, answer) {
  const calls = changes.map((c) => (c.content !== undefined
    ? { name: 'write_note', args: { path: c.path, content: c.content } }
    : { name: 'patch_note', args: { path: c.path, find: c.find, replace: c.replace } }));
  calls.push({ name: 'finish', args: { answer } });
  return calls;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function readText(p) {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return '';
  }
}

/** pid → ppid for every process (from /proc/PID/stat). */
function parentMap() {
  const parent = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = readText(`/proc/${d}/stat`);
    const i = st.lastIndexOf(')');
    if (i < 0) continue;
    parent.set(Number(d), Number(st.slice(i + 2).split(' ')[1]));
  }
  return parent;
}

function cmdline(pid) {
  return readText(`/proc/${pid}/cmdline`).replaceAll('\0', ' ');
}

export class Server {
  constructor({ args = [], allowed = ALLOWED, env = {} } = {}) {
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codellm-clients-'));
    this.runs = path.join(this.tmp, 'runs');
    this.slots = path.join(this.tmp, 'slots');
    fs.mkdirSync(this.runs);
    fs.mkdirSync(this.slots, { mode: 0o777 });
    fs.chmodSync(this.slots, 0o777);
    this.keyfile = path.join(this.tmp, 'api-key');
    fs.writeFileSync(this.keyfile, KEY + '\n');
    this.logPath = path.join(this.tmp, 'socket-activate.log');
    this.key = KEY;
    this.extraArgs = args;
    this.allowed = allowed;
    this.env = env;
    this.proc = null;
  }

  async start() {
    this.port = await freePort();
    this.baseURL = `http://127.0.0.1:${this.port}/v1`;
    const argv = ['--accept', '-l', `127.0.0.1:${this.port}`,
      '-E', `TMPDIR=${this.runs}`, '-E', `CODELLM_RUNTIME_DIR=${this.slots}`];
    for (const [k, v] of Object.entries(this.env)) argv.push('-E', `${k}=${v}`);
    for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) {
      if (process.env[k] && !(k in this.env)) argv.push('-E', `${k}=${process.env[k]}`);
    }
    argv.push(HANDLER, '--api-key-file', this.keyfile);
    if (this.allowed !== null) argv.push('--allowed-programs', this.allowed);
    argv.push(...this.extraArgs);
    const log = fs.openSync(this.logPath, 'w');
    this.proc = spawn('systemd-socket-activate', argv, {
      detached: true, stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    this.exited = new Promise((resolve) => this.proc.once('exit', resolve));
    // "Listening on …" is printed once the socket is bound: no probe
    // connection needed, so every Spawned line is a test's request.
    const deadline = Date.now() + WAIT;
    while (!this.log().includes('Listening on')) {
      if (Date.now() > deadline || this.proc.exitCode !== null) {
        throw new Error('server did not start: ' + this.log());
      }
      await sleep(20);
    }
    return this;
  }

  log() {
    return readText(this.logPath);
  }

  /** Connections that reached the handler (one "Spawned" line each). */
  spawned() {
    return (this.log().match(/^Spawned /gm) || []).length;
  }

  /**
   * Connections that reached a handler since `base` (a spawned() value), once
   * there are at least `n` (or after `ms`): systemd-socket-activate writes a
   * connection's "Spawned" line after its fork, so on a busy machine the line
   * can come after the handler has answered.
   */
  async spawnedSince(base, n, ms = WAIT) {
    const deadline = Date.now() + ms;
    while (this.spawned() - base < n && Date.now() < deadline) await sleep(20);
    return this.spawned() - base;
  }

  /** The handler processes (direct children of systemd-socket-activate). */
  handlerPids() {
    const parent = parentMap();
    return [...parent].filter(([pid, pp]) => pp === this.proc.pid && cmdline(pid).includes(HANDLER))
      .map(([pid]) => pid);
  }

  /** Processes running a block file of this server. */
  blockPids() {
    const parent = parentMap();
    const found = [];
    let frontier = new Set([this.proc.pid]);
    while (frontier.size) {
      const next = new Set();
      for (const [pid, pp] of parent) if (frontier.has(pp)) next.add(pid);
      for (const pid of next) if (cmdline(pid).includes('/code/block-')) found.push(pid);
      frontier = next;
    }
    return found;
  }

  async waitFor(cond, ms = WAIT, what = 'condition') {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await cond();
      if (v) return v;
      if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
      await sleep(20);
    }
  }

  /**
   * Lets a block waiting at gate `name` (gate()) go on: writes a line into the
   * FIFO it made in its working directory (through /proc/PID/cwd). Waits until
   * a block of this server has it open for reading; returns the ms that took.
   */
  async openGate(name = 'gate', ms = WAIT) {
    const t0 = Date.now();
    for (;;) {
      for (const pid of this.blockPids()) {
        let fd;
        try {
          fd = fs.openSync(`/proc/${pid}/cwd/${name}`, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
        } catch {
          continue; // not made yet (ENOENT), nobody reading it yet (ENXIO), or another block
        }
        try {
          fs.writeSync(fd, 'go\n');
        } finally {
          fs.closeSync(fd);
        }
        return Date.now() - t0;
      }
      if (Date.now() - t0 > ms) throw new Error(`no block waited at gate ${name} within ${ms} ms`);
      await sleep(20);
    }
  }

  /** Run directories still present (none once every handler is done). */
  async leftovers(ms = 30000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const left = fs.readdirSync(this.runs);
      if (!left.length || Date.now() > deadline) return left;
      await sleep(50);
    }
  }

  /** An OpenAI client; its timeout only guards against a hang. */
  client(opts = {}) {
    return new OpenAI({ baseURL: this.baseURL, apiKey: this.key, timeout: 120000, ...opts });
  }

  /**
   * A TCP relay in front of the server that counts the connections and
   * the HTTP requests (connections that carried a request line) going
   * through it. Needed beside the "Spawned" count because Node 20's fetch
   * (undici 6) opens a fresh, empty connection whenever a request is
   * aborted mid-body — as the SDK's stream iterator does when it throws on
   * an error event: that connection reaches a handler but carries no
   * request, and nothing runs for it.
   */
  async relay() {
    const conns = [];
    const sockets = new Set();
    const srv = net.createServer((down) => {
      const c = { head: '', answer: '' };
      conns.push(c);
      const up = net.connect(this.port, '127.0.0.1');
      sockets.add(down).add(up);
      down.on('data', (d) => { if (c.head.length < 64) c.head += d.toString('latin1'); });
      up.on('data', (d) => { if (c.answer.length < 64) c.answer += d.toString('latin1'); });
      down.pipe(up);
      up.pipe(down);
      // the client gone: the server sees it go; the server done: what it
      // sent is delivered (pipe ends `down`), then the client is closed
      down.on('close', () => { up.destroy(); sockets.delete(down); });
      up.on('close', () => { down.end(); sockets.delete(up); });
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
    });
    await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
    return {
      baseURL: `http://127.0.0.1:${srv.address().port}/v1`,
      connections: () => conns.length,
      requests: () => conns.filter((c) => /^[A-Z]+ \S+ HTTP\/1\.[01]\r\n/.test(c.head)).length,
      // status lines passed on to the client (written to its socket)
      answers: () => conns.filter((c) => /^HTTP\/1\.[01] \d{3} /.test(c.answer)).length,
      close: () => { for (const x of sockets) x.destroy(); srv.close(); },
    };
  }

  /**
   * An OpenAI client (SDK defaults: maxRetries 2) that goes through a
   * relay; counts() tells how many HTTP requests and connections went
   * through it and how many connections reached a handler since. Call it
   * once the SDK's promise has settled: the SDK makes its retries before
   * that, so the relay's counts are final then; counts() waits (up to
   * `ms`) for the server's "Spawned" line of each of those connections,
   * which can come late on a busy machine. answers() counts the status
   * lines the relay passed on to the client.
   */
  async counting(opts = {}) {
    const r = await this.relay();
    const base = this.spawned();
    return {
      client: this.client({ baseURL: r.baseURL, ...opts }),
      counts: async (ms = WAIT) => {
        const deadline = Date.now() + ms;
        while (this.spawned() - base < r.connections() && Date.now() < deadline) await sleep(20);
        return { requests: r.requests(), connections: r.connections(), spawned: this.spawned() - base };
      },
      answers: r.answers,
      close: r.close,
    };
  }

  async stop() {
    if (!this.proc) return;
    const proc = this.proc;
    this.proc = null;
    if (proc.exitCode === null && proc.signalCode === null) {
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ }
      const t = await Promise.race([this.exited.then(() => 'exited'), sleep(15000)]);
      if (t !== 'exited') {
        try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
        await this.exited;
      }
    }
    const text = this.log();
    if (!process.env.CODELLM_KEEP_TMP) fs.rmSync(this.tmp, { recursive: true, force: true });
    if (SANITIZER_MARKS.some((m) => text.includes(m))) {
      throw new Error('sanitizer report in the handler log:\n' + text.slice(-8000));
    }
  }
}

export async function startServer(opts) {
  return new Server(opts).start();
}

/** Calls fn, returns what it threw (fails when it did not throw). */
export async function rejection(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an exception, got none');
}
