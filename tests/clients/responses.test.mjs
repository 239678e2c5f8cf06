// codellm's Responses API face (POST /v1/responses) through the official
// `openai` SDK (responses.create, responses.stream) and through
// `@openai/agents` with its default model — the Responses model — pointed
// at codellm by base URL only: run mode (finalOutput is stdout) and agent
// mode, whose default tool loop ends by itself in two model turns (the
// second is the re-execution guard's text answer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  Agent, run, tool, setTracingDisabled, setDefaultOpenAIClient,
} from '@openai/agents';
import { z } from 'zod';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  startServer, block, changesBlock, expectedCalls, KEY, HERE, TOP,
} from './harness.mjs';

setTracingDisabled(true);

let s;
const paths = [];	// what the Agents SDK asked for: /v1/responses only
before(async () => {
  s = await startServer({ args: ['--keepalive-interval', '1'] });
  setDefaultOpenAIClient(new OpenAI({
    baseURL: s.baseURL, apiKey: KEY, timeout: 120000, // a hang guard only
    fetch: (url, init) => { paths.push(new URL(url).pathname); return fetch(url, init); },
  }));
});
after(() => s?.stop().catch(() => {}));

const CHANGES = [
  { path: 'notes/a.md', content: '# A\n\n"quoted" \\ back, ünïcødé 🎉\n\ttabbed\n' },
  { path: 'index.md', find: 'count: 0', replace: 'count: 1' },
];
const ANSWER = 'one note written, one patched';
const TOOLS = ['write_note', 'patch_note', 'finish'].map((name) => ({
  type: 'function', name, parameters: { type: 'object', properties: {} }, strict: false,
}));

test('responses.create, run mode: output_text is stdout', async () => {
  const r = await s.client().responses.create({
    model: 'codellm',
    instructions: 'the code is in the input',
    input: block('python', 'print("hello from", "responses")'),
    metadata: { run: 'one' },
  });
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, 'hello from responses\n');
  assert.deepEqual(r.metadata, { run: 'one' });
  assert.equal(r.usage.total_tokens, 0);
  assert.equal(r.codellm.exit_code, 0);
});

test('responses.create, agent mode: function_call items with the block\'s changes', async () => {
  const r = await s.client().responses.create({
    model: 'codellm', input: [{ role: 'user', content: changesBlock(CHANGES, ANSWER) }], tools: TOOLS,
  });
  const calls = r.output.map((o) => ({ name: o.name, args: JSON.parse(o.arguments) }));
  assert.deepEqual(calls, expectedCalls(CHANGES, ANSWER));
  assert.ok(r.output.every((o) => o.type === 'function_call' && o.call_id.startsWith('call_')));
});

test('responses.stream: the typed events, and finalResponse', async () => {
  const stream = s.client().responses.stream({
    model: 'codellm',
    input: block('python', 'import time\nprint("a", flush=True)\ntime.sleep(0.3)\nprint("b")'),
  });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(text, 'a\nb\n');
  assert.equal(final.output_text, 'a\nb\n');
  assert.equal(final.status, 'completed');
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(types.includes('response.output_text.done'), types.join(' '));
});

test('responses.stream, agent mode: function calls accumulated', async () => {
  const stream = s.client().responses.stream({
    model: 'codellm', input: [{ role: 'user', content: changesBlock(CHANGES, ANSWER) }], tools: TOOLS,
  });
  for await (const ev of stream) void ev;
  const final = await stream.finalResponse();
  assert.deepEqual(final.output.map((o) => ({ name: o.name, args: JSON.parse(o.arguments) })),
    expectedCalls(CHANGES, ANSWER));
});

test('the stateless refusals reach the SDK as BadRequestError', async () => {
  await assert.rejects(s.client().responses.retrieve('resp_abc'),
    (e) => e.status === 400 && e.code === 'stateless_server');
  await assert.rejects(s.client().responses.create({
    model: 'codellm', input: 'x', previous_response_id: 'resp_abc',
  }), (e) => e.status === 400 && e.code === 'stateless_server');
});

test('an Agent with the default (Responses) model: finalOutput is stdout', async () => {
  const agent = new Agent({
    name: 'runner', instructions: 'Your code:\n' + block('python', 'print(6 * 7)'),
  });
  const base = s.spawned();
  const result = await run(agent, 'Begin.');
  assert.equal(result.finalOutput, '42\n');
  assert.equal(await s.spawnedSince(base, 1), 1, 'one model call');
});

function recordingTools(calls) {
  const record = (name) => async (args) => {
    calls.push({ name, args });
    return name === 'finish' ? args.answer : 'ok';
  };
  return [
    tool({
      name: 'write_note', description: 'Create or replace a note.',
      parameters: z.object({ path: z.string(), content: z.string() }), execute: record('write_note'),
    }),
    tool({
      name: 'patch_note', description: 'Replace text in a note.',
      parameters: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
      execute: record('patch_note'),
    }),
    tool({
      name: 'finish', description: 'End the run with an answer.',
      parameters: z.object({ answer: z.string() }), execute: record('finish'),
    }),
  ];
}

for (const stream of [false, true]) {
  test(`an Agent with the default model, agent mode${stream ? ', streamed' : ''}: its tool loop ends in two turns`, async () => {
    const calls = [];
    const agent = new Agent({
      name: 'scoped-micro-agent',
      instructions: 'You are a scoped micro-agent. Your code:\n' + changesBlock(CHANGES, ANSWER),
      tools: recordingTools(calls),
    });
    const base = s.spawned();
    let result;
    if (stream) {
      result = await run(agent, 'Begin.', { stream: true });
      for await (const ev of result) void ev;
      await result.completed;
      assert.equal(result.error ?? null, null);
    } else {
      result = await run(agent, 'Begin.', { maxTurns: 3 });
    }
    assert.deepEqual(calls, expectedCalls(CHANGES, ANSWER));
    assert.equal(result.finalOutput, ANSWER);
    assert.equal(await s.spawnedSince(base, 2), 2, 'two model calls: the calls, then the guard\'s text');
  });
}

test('the Agents SDK\'s default model spoke the Responses API only', () => {
  assert.equal(paths.length, 5, paths.join(' '));	// 1 + 2 + 2 model calls
  assert.deepEqual([...new Set(paths)], ['/v1/responses']);
});

const EXAMPLE = path.join(HERE, 'readme-agents-example.mjs');

test('README.md\'s Responses example is tests/clients/readme-agents-example.mjs, byte for byte', () => {
  const readme = fs.readFileSync(path.join(TOP, 'README.md'), 'utf8');
  const at = readme.indexOf('### The Responses API and the Agents SDK');
  assert.ok(at >= 0, 'README.md has the section');
  const start = readme.indexOf('```js\n', at) + 6;
  assert.equal(readme.slice(start, readme.indexOf('\n```\n', start) + 1),
    fs.readFileSync(EXAMPLE, 'utf8'));
});

test('the README example runs: stdout, then the tool loop\'s answer and the note', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [EXAMPLE], {
    timeout: 180000, env: { ...process.env, CODELLM_BASE_URL: s.baseURL, KEY },
  });
  assert.equal(stdout, '42\n\nwrote hello.md\n{"hello.md":"# Hello\\n"}\n');
});

test('the server stops cleanly and no run directory is left', async () => {
  assert.deepEqual(await s.leftovers(), []);
  await s.stop();
});
