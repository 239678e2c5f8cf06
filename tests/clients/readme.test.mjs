// README.md's SDK examples are the ones the tests run: its JavaScript
// example is readme-example.mjs byte for byte, run here against the real
// handler; its Python example (the `openai` Python package cannot be
// installed here: no PyPI) must be valid Python that sends exactly the
// requests the JavaScript one sends, to the same default URL, with the key
// from the same variable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startServer, HERE, TOP } from './harness.mjs';

const run = promisify(execFile);
const EXAMPLE = path.join(HERE, 'readme-example.mjs');
const README = fs.readFileSync(path.join(TOP, 'README.md'), 'utf8');

/** The body of the first ```LANG fence after `marker` in README.md. */
function snippet(marker, lang) {
  const at = README.indexOf(marker);
  assert.ok(at >= 0, `README.md has "${marker}"`);
  const open = '```' + lang + '\n';
  const start = README.indexOf(open, at);
  assert.ok(start >= 0, `a \`\`\`${lang} fence after "${marker}"`);
  const end = README.indexOf('\n```\n', start + open.length);
  return README.slice(start + open.length, end + 1);
}
const JS = snippet('official OpenAI SDK for JavaScript', 'js');
const PY = snippet('And for Python', 'python');

let s;
let recorded = null;
// the files example runs on the environment data (make envs builds it)
const ENVDIR = process.env.CODELLM_TEST_ENVDIR ?? path.join(TOP, 'build', 'envs');
before(async () => {
  s = await startServer({ allowed: 'python', args: ['--environments', ENVDIR] });
});
after(() => s?.stop().catch(() => {}));

test('README.md\'s JavaScript example is tests/clients/readme-example.mjs, byte for byte', () => {
  assert.equal(JS, fs.readFileSync(EXAMPLE, 'utf8'));
});

test('the README\'s JavaScript example runs against the real handler and prints what its comments say', async () => {
  const record = path.join(s.tmp, 'requests.jsonl');
  const { stdout } = await run(process.execPath, ['--import', path.join(HERE, 'record-request.mjs'), EXAMPLE], {
    cwd: HERE, timeout: 120000, // a hang guard only
    env: { ...process.env, CODELLM_BASE_URL: s.baseURL, KEY: s.key, CODELLM_RECORD: record },
  });
  // console.log of "42\n" prints "42\n\n"; then exit_code 0; then the stream
  assert.equal(stdout, '42\n\n0\n42\n');
  recorded = fs.readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(recorded.length, 2);
});

const PY_CHECK = String.raw`
import ast, json, sys
src = sys.stdin.read()
tree = ast.parse(src)          # a SyntaxError fails the test
compile(tree, "README.md", "exec")
out = {"calls": [], "base_url": None, "api_key": None}
def env(node):
    # os.environ.get("NAME", "default") or os.environ["NAME"]
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.get":
        return [ast.literal_eval(a) for a in node.args]
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
        return [ast.literal_eval(node.slice)]
    return ["literal", ast.literal_eval(node)]
for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
        continue
    f = ast.unparse(node.func)
    kw = {k.arg: k.value for k in node.keywords}
    if f == "OpenAI":
        out["base_url"] = env(kw["base_url"])
        out["api_key"] = env(kw["api_key"])
    elif f == "client.chat.completions.create":
        out["calls"].append({k: ast.literal_eval(v) for k, v in kw.items()})
print(json.dumps(out))
`;

test('the README\'s Python example is valid Python sending the same requests as the JavaScript one', async () => {
  assert.ok(recorded, 'the JavaScript example ran');
  const child = execFile('/usr/bin/python3', ['-c', PY_CHECK], { timeout: 60000 });
  child.stdin.end(PY);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `python3 could not read the snippet: ${err}`);
  const py = JSON.parse(out);
  const order = (bodies) => [...bodies].sort((a, b) => Number(!!a.stream) - Number(!!b.stream));
  assert.deepEqual(order(py.calls), order(recorded),
    'the same chat.completions.create bodies (model, messages, stream)');
  assert.equal(py.calls.length, 2);
  const m = JS.match(/baseURL: process\.env\.(\w+) \?\? "([^"]+)"/);
  assert.ok(m, 'the JavaScript example reads its base URL from the environment');
  assert.deepEqual(py.base_url, [m[1], m[2]], 'the same base URL variable and default');
  const k = JS.match(/apiKey: process\.env\.(\w+)/);
  assert.deepEqual(py.api_key, [k[1]], 'the key from the same variable');
});

const FILES_EXAMPLE = path.join(HERE, 'readme-files-example.mjs');

test('README.md\'s files example is tests/clients/readme-files-example.mjs, byte for byte', () => {
  assert.equal(snippet('### Files in, artifacts out', 'js'), fs.readFileSync(FILES_EXAMPLE, 'utf8'));
});

test('the files example sends a CSV, and saves the chart the block drew: a 400x300 PNG', async () => {
  const dir = fs.mkdtempSync(path.join(s.tmp, 'files-example-'));
  const { stdout } = await run(process.execPath, [FILES_EXAMPLE], {
    cwd: dir, timeout: 240000,
    env: { ...process.env, CODELLM_BASE_URL: s.baseURL, KEY: s.key },
  });
  assert.equal(stdout, '4 months\n\nout/chart.png image/png\n');
  const png = fs.readFileSync(path.join(dir, 'chart.png'));
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the PNG signature');
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [400, 300], 'figsize 4x3 at 100 dpi');
});

test('the server stops cleanly', async () => {
  await s.stop();
});
