// The step debugger page (GET / with --debug, SPEC §8) driven in Debian's
// Chromium through playwright-core, against the real handler (default
// --sandbox native): parse a three-block pipeline, run it block by block
// with the pipe between blocks carried and edited in the page, run it all
// and see every tapped edge, a wrong key's 401 in #error, pick a file that
// a block reads and see what it left in out/ (an image, a download) — and
// the page asks nothing of any other origin. Leaves screenshots in
// tests/out/ (or $CODELLM_TEST_OUT): debug-page.png after the stepping,
// debug-page-run-all.png after run all, debug-page-files.png after the
// files; TAP diagnostics name them.
// A missing chromium fails every test (make deps-check installs it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, block, KEY, TOP } from './harness.mjs';

// playwright-core never downloads a browser; Debian's chromium is the one
const CHROMIUM = process.env.CODELLM_CHROMIUM || '/usr/bin/chromium';
const OUT = process.env.CODELLM_TEST_OUT || path.join(TOP, 'tests', 'out');
const TAP_BYTES = 24;

// Block 0 prints two fruits and then its stdin; block 1 drops the apples
// and uppercases; block 2 counts. A ```text fence between is skipped.
const CODE = [
  'import sys\nprint("apple")\nprint("banana")\nsys.stdout.write(sys.stdin.read())',
  'grep -v apple | tr a-z A-Z',
  'import sys\ndata = sys.stdin.read()\nprint(f"{len(data.splitlines())} lines, {len(data)} chars")',
];
const BODY = '# a role to debug\n\n' + block('python', CODE[0]) + '\nnot run:\n\n' +
  block('text', 'just words') + '\n' + block('bash', CODE[1]) + '\n' + block('python', CODE[2]);

let s;
let origin;
let context;
let page;
let profile;
const requests = []; // every request the browser made: { url, method, headers }
const problems = []; // page errors and CSP reports from the console

const card = (i) => `#blocks .block[data-index="${i}"]`;
const text = (sel) => page.locator(sel).textContent();
const value = (sel) => page.locator(sel).inputValue();

/** Clicks (or presses) something that POSTs `route`; waits for the answer
 * and for the page to be done with it (no card is "running"). */
async function doing(route, act) {
  const answer = page.waitForResponse((r) => new URL(r.url()).pathname === route);
  await act();
  const r = await answer;
  await page.waitForFunction(() => !document.querySelector('#blocks .running') &&
    document.body.getAttribute('aria-busy') !== 'true');
  return r;
}

before(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: the page test needs Debian's chromium ` +
      '(make deps-check installs it: apt-get install chromium)');
  }
  s = await startServer({ args: ['--debug', '--max-tap-bytes', String(TAP_BYTES)] });
  origin = `http://127.0.0.1:${s.port}`;
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'codellm-chromium-'));
  // a fresh profile each run (playwright wants it as userDataDir, not as
  // --user-data-dir); nothing in the background may call home
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context.on('request', (r) => requests.push({ url: r.url(), method: r.method(), headers: r.headers() }));
  // playwright's waits (30 s by default) only guard against a hang; Chromium
  // beside the handler on a busy machine can take seconds per step
  context.setDefaultTimeout(120000);
  page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push('console: ' + m.text());
  });
});

after(async () => {
  try {
    await context?.close();
  } finally {
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
    await s?.stop();
  }
});

test('GET / serves the page under its CSP; the key is kept for the tab', async () => {
  const r = await page.goto(origin + '/');
  assert.equal(r.status(), 200);
  assert.match(r.headers()['content-type'], /^text\/html/);
  assert.match(r.headers()['content-security-policy'], /default-src 'none'/);
  assert.equal(await page.title(), 'codellm · step debugger');
  for (const id of ['#key', '#body', '#parse', '#blocks', '#stdin', '#input', '#run-all', '#error']) {
    assert.equal(await page.locator(id).count(), 1, id);
  }
  await page.fill('#key', KEY);
  await page.reload();
  assert.equal(await value('#key'), KEY, 'the key survives a reload (sessionStorage)');
});

test('stepping: each block runs alone; its stdout is carried, edited and fed to the next', async (t) => {
  await page.fill('#body', BODY);
  await doing('/debug/blocks', () => page.click('#parse'));
  assert.equal(await page.locator('#blocks .block').count(), 3);
  for (let i = 0; i < 3; i++) {
    assert.equal(await page.locator(card(i)).count(), 1, `block ${i}`);
    assert.equal(await text(`${card(i)} .code`), CODE[i], `the code of block ${i} is shown`);
  }
  assert.match(await text('#parse-status'), /3 blocks.*text at line/);

  // block 0: stdin empty (as #stdin); its output lands in block 1's stdin
  assert.equal(await value(`${card(0)} .stdin`), '');
  await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  assert.equal(await text('#error'), '');
  assert.equal(await text(`${card(0)} .stdout`), 'apple\nbanana\n');
  assert.match(await text(`${card(0)} .status`), /^exit 0 · ok · \d+ ms$/);
  assert.equal(await value(`${card(1)} .stdin`), 'apple\nbanana\n', 'carried after the run');

  // the pipe is edited before block 1 runs: block 1 runs on the edit
  await page.fill(`${card(1)} .stdin`, 'cherry\n');
  await doing('/debug/run-block', () => page.click(`${card(1)} .run`));
  assert.equal(await text(`${card(1)} .stdout`), 'CHERRY\n');
  assert.match(await text(`${card(1)} .status`), /^exit 0 · ok · \d+ ms$/);
  assert.equal(await value(`${card(2)} .stdin`), 'CHERRY\n');

  // .carry copies again over an edit; Ctrl+Enter in a stdin runs its block
  await page.fill(`${card(2)} .stdin`, 'overwritten');
  await page.click(`${card(1)} .carry`);
  assert.equal(await value(`${card(2)} .stdin`), 'CHERRY\n');
  await doing('/debug/run-block', () => page.press(`${card(2)} .stdin`, 'Control+Enter'));
  assert.equal(await text(`${card(2)} .stdout`), '1 lines, 7 chars\n');
  assert.match(await text(`${card(2)} .status`), /^exit 0 · ok · \d+ ms$/);
  assert.equal(await text(`${card(2)} .stderr`), '');

  // the run routes carried the key; parsing needs none
  const runs = requests.filter((r) => r.url === origin + '/debug/run-block');
  assert.equal(runs.length, 3);
  for (const r of runs) assert.equal(r.headers.authorization, 'Bearer ' + KEY);
  assert.deepEqual(runs.map((r) => r.method), ['POST', 'POST', 'POST']);

  fs.mkdirSync(OUT, { recursive: true });
  const shot = path.join(OUT, 'debug-page.png');
  await page.screenshot({ path: shot, fullPage: true, animations: 'disabled' });
  t.diagnostic(`screenshot: ${shot}`);
});

test('run all: per-block results and every tapped edge, bytes and truncation', async (t) => {
  const stdin = 'date\n<i>fig</i>\n'; // markup stays text
  await page.fill('#stdin', stdin);
  assert.equal(await value(`${card(0)} .stdin`), stdin, 'block 0 takes the pipeline stdin');
  await doing('/debug/run-pipeline', () => page.click('#run-all'));
  assert.equal(await text('#error'), '');

  const edge0 = 'apple\nbanana\n' + stdin;
  const edge1 = 'BANANA\nDATE\n<I>FIG</I>\n';
  const last = `3 lines, ${edge1.length} chars\n`;
  const edges = page.locator('#blocks .edge');
  assert.equal(await edges.count(), 2);
  // edge 0 passed --max-tap-bytes: all its bytes counted, the first kept
  assert.match(await edges.nth(0).locator('.edge-meta').textContent(),
    new RegExp(`^edge 0 → 1 · ${edge0.length} bytes · truncated: first ${TAP_BYTES} kept`));
  assert.equal(await edges.nth(0).locator('.edge-text').textContent(), edge0.slice(0, TAP_BYTES));
  assert.equal(await edges.nth(1).locator('.edge-meta').textContent(), `edge 1 → 2 · ${edge1.length} bytes`);
  assert.equal(await edges.nth(1).locator('.edge-text').textContent(), edge1);

  assert.equal(await text(`${card(1)} .stdout`), edge1);
  // each block's stdin buffer now holds what it read (as far as tapped)
  assert.equal(await value(`${card(1)} .stdin`), edge0.slice(0, TAP_BYTES));
  assert.equal(await value(`${card(2)} .stdin`), edge1);
  assert.equal(await text(`${card(2)} .stdout`), last);
  for (let i = 0; i < 3; i++) {
    assert.match(await text(`${card(i)} .status`), /^run all: exit 0 · ok · \d+ ms$/, `block ${i}`);
  }
  assert.match(await text('#pipeline'), /^pipeline: exit 0 · ok · \d+ ms$/);
  assert.equal(await page.locator('#blocks i, #blocks I').count(), 0, 'no markup from the server');
  const runs = requests.filter((r) => r.url === origin + '/debug/run-pipeline');
  assert.equal(runs.length, 1);
  assert.equal(runs[0].headers.authorization, 'Bearer ' + KEY);

  const shot = path.join(OUT, 'debug-page-run-all.png');
  await page.screenshot({ path: shot, fullPage: true, animations: 'disabled' });
  t.diagnostic(`screenshot: ${shot}`);
});

test('a wrong key: the server\'s 401 message is shown in #error', async () => {
  const direct = await fetch(origin + '/debug/run-block', {
    method: 'POST', headers: { Authorization: 'Bearer wrong', 'Content-Type': 'application/json' },
    body: JSON.stringify({ body: BODY, block: 0 }),
  });
  assert.equal(direct.status, 401);
  const { error } = await direct.json();

  await page.fill('#key', 'wrong');
  await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  const shown = await text('#error');
  assert.match(shown, /^HTTP 401/);
  assert.ok(shown.includes(error.message), `#error "${shown}" has "${error.message}"`);
  assert.ok(await page.locator('#error').isVisible());
  // the outputs of the earlier runs stay; the next good run clears #error
  assert.equal(await text(`${card(2)} .stdout`), '3 lines, 23 chars\n');
  await page.fill('#key', KEY);
  await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  assert.equal(await text('#error'), '');
});

// Files in, artifacts out: the block prints the picked file and leaves in
// out/ a 1x1 PNG (written byte by byte: no matplotlib), a CSV, an SVG (a
// document: offered, never rendered) and a symlink (listed as omitted).
const PICKED = 'picked: 3 pears\n';
const CSV = 'fruit,count\npear,3\n';
const FILES_CODE = [
  'import os, struct, zlib',
  'print(open("notes.txt").read(), end="")',
  'def chunk(kind, data):',
  '    return (struct.pack(">I", len(data)) + kind + data +',
  '            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))',
  'png = (b"\\x89PNG\\r\\n\\x1a\\n" +',
  '       chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) +',
  '       chunk(b"IDAT", zlib.compress(b"\\x00\\xc8\\x32\\x32")) + chunk(b"IEND", b""))',
  'os.makedirs("out", exist_ok=True)',
  'open("out/plot.png", "wb").write(png)',
  `open("out/data.csv", "w").write(${JSON.stringify(CSV)})`,
  'open("out/logo.svg", "w").write(\'<svg xmlns="http://www.w3.org/2000/svg"/>\')',
  'os.symlink("data.csv", "out/link.csv")',
].join('\n');
const FILES_BODY = '# files in, artifacts out\n\n' + block('python', FILES_CODE);

/** The artifacts shown in `box`: the image, the CSV's link, the names. */
async function artifactsIn(box) {
  const img = page.locator(`${box} .artifact img`);
  assert.equal(await img.count(), 1, 'one image shown');
  assert.match(await img.getAttribute('src'), /^data:image\/png;base64,/);
  // it is a PNG the browser decoded: 1x1
  await page.waitForFunction((sel) => {
    const i = document.querySelector(sel);
    return i && i.complete && i.naturalWidth === 1 && i.naturalHeight === 1;
  }, `${box} .artifact img`);
  const link = page.locator(`${box} .artifact a[download="data.csv"]`);
  assert.equal(await link.count(), 1, 'a download link for out/data.csv');
  assert.equal(await link.textContent(), 'out/data.csv');
  const href = await link.getAttribute('href');
  assert.match(href, /^data:text\/csv;base64,/);
  assert.equal(Buffer.from(href.slice(href.indexOf(',') + 1), 'base64').toString(), CSV);
  const items = await page.locator(`${box} .artifact`).allTextContents();
  assert.ok(items.some((t) => t.startsWith('out/plot.png · ') && / · image\/png$/.test(t)), items.join(' | '));
  assert.ok(items.some((t) => t === `out/data.csv · ${CSV.length} bytes · text/csv`), items.join(' | '));
  // the SVG: a download link, no image
  const svg = page.locator(`${box} .artifact a[download="logo.svg"]`);
  assert.equal(await svg.count(), 1);
  assert.match(await svg.getAttribute('href'), /^data:image\/svg\+xml;base64,/);
  // the symlink: named, with the server's reason, no link
  const omitted = page.locator(`${box} .artifact.is-omitted`);
  assert.equal(await omitted.count(), 1);
  assert.match(await omitted.textContent(), /^out\/link\.csv · .*not returned: \S/);
  assert.equal(await omitted.locator('a, img').count(), 0);
  return link;
}

test('files: a picked file reaches the block; its out/ comes back as an image and a download', async (t) => {
  await page.fill('#body', FILES_BODY);
  await doing('/debug/blocks', () => page.click('#parse'));
  assert.equal(await page.locator('#blocks .block').count(), 1);
  await page.setInputFiles('#files', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(PICKED) });
  assert.equal(await text('#files-status'), `1 file, ${PICKED.length} bytes: notes.txt`);

  const r = await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  assert.equal(await text('#error'), '');
  const sent = r.request().postDataJSON();
  assert.deepEqual(sent.files, [{ type: 'file', file: {
    filename: 'notes.txt', file_data: 'data:text/plain;base64,' + Buffer.from(PICKED).toString('base64') } }]);
  assert.equal(await text(`${card(0)} .stdout`), PICKED, 'the block read the picked file');
  assert.match(await text(`${card(0)} .status`), /^exit 0 · ok · \d+ ms$/);
  const answer = await r.json();
  assert.deepEqual(answer.files.map((f) => f.name).sort(),
    ['out/data.csv', 'out/link.csv', 'out/logo.svg', 'out/plot.png']);
  const link = await artifactsIn(card(0));
  assert.ok(await page.locator(`${card(0)} .artifacts`).isVisible());

  // the link downloads under the CSP (a data: URL navigates nothing)
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  assert.equal(download.suggestedFilename(), 'data.csv');
  assert.equal(fs.readFileSync(await download.path(), 'utf8'), CSV);

  // run all sends the files too; the run's out/ is shown below the blocks
  const all = await doing('/debug/run-pipeline', () => page.click('#run-all'));
  assert.equal(await text('#error'), '');
  assert.equal(all.request().postDataJSON().files[0].file.filename, 'notes.txt');
  assert.equal(await text(`${card(0)} .stdout`), PICKED);
  await artifactsIn('#run-files');
  assert.equal(await page.locator(`${card(0)} .artifact`).count(), 0, 'the block-alone files are cleared');

  const shot = path.join(OUT, 'debug-page-files.png');
  await page.screenshot({ path: shot, fullPage: true, animations: 'disabled' });
  t.diagnostic(`screenshot: ${shot}`);
});

test('files: a name the server refuses comes back in #error; cleared, runs go on', async () => {
  await page.setInputFiles('#files', { name: '.env', mimeType: 'text/plain', buffer: Buffer.from('x') });
  await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  assert.match(await text('#error'), /^HTTP 400 invalid_file_name: .*"\.env"/);
  assert.match(await text(`${card(0)} .status`), /not run/);

  await page.click('#files-clear');
  assert.equal(await text('#files-status'), 'no file picked');
  await doing('/debug/run-block', () => page.click(`${card(0)} .run`));
  assert.equal(await text('#error'), '');
  // no notes.txt this time: the block fails, the page says so
  assert.match(await text(`${card(0)} .stderr`), /FileNotFoundError: .*notes\.txt/);
  assert.match(await text(`${card(0)} .status`), /^exit 1 · failed/);
  assert.equal(await page.locator(`${card(0)} .artifact`).count(), 0, 'a run without out/ files shows none');
});

test('the page asked nothing of any other origin and ran clean under the CSP', () => {
  assert.ok(requests.length >= 8, `requests seen: ${requests.length}`);
  const elsewhere = requests.filter((r) => new URL(r.url).origin !== origin && !r.url.startsWith('data:'));
  assert.deepEqual(elsewhere.map((r) => r.url), []);
  assert.deepEqual(problems, []);
});
