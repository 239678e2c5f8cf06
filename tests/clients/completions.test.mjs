// codellm through the official `openai` npm package, without streams:
// completions, models, the exception class of each refusal, tool calls,
// and the SDK's default retries never running code twice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  startServer, block, changesBlock, expectedCalls, TOOLS, KEY, rejection, gate, WAIT,
} from './harness.mjs';

let s;
let client;
before(async () => {
  s = await startServer();
  client = s.client(); // the SDK's defaults: maxRetries 2
});
after(() => s?.stop().catch(() => {}));

const CHANGES = [
  { path: 'notes/a.md', content: '# A\nfirst line\n"quoted" \\ ünïcødé 🎉\ttab\n' },
  { path: 'index.md', find: 'count: 0', replace: 'count: 1' },
];

test('chat.completions.create returns stdout as content and keeps the codellm object', async () => {
  const r = await client.chat.completions.create({
    model: 'codellm',
    messages: [{
      role: 'user',
      content: block('python', 'import sys\nprint("hello")\nprint("oops", file=sys.stderr)')
        + block('bash', 'tr a-z A-Z; exit 3'),
    }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.content, 'HELLO\n');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.model, 'codellm');
  assert.match(r.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(r.codellm.exit_code, 3);
  assert.equal(r.codellm.timed_out, false);
  assert.equal(r.codellm.blocks, 2);
  assert.deepEqual(r.codellm.block_results.map((b) => [b.lang, b.exit_code]), [['python', 0], ['bash', 3]]);
  assert.equal(r.codellm.block_results[0].stderr, 'oops\n');
  assert.deepEqual(r.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
});

test('.withResponse() shows the one-shot headers: x-request-id is the id, x-should-retry false', async () => {
  const { data, response } = await client.chat.completions.create({
    model: 'python', messages: [{ role: 'user', content: 'print(6 * 7)' }],
  }).withResponse();
  assert.equal(data.choices[0].message.content, '42\n');
  assert.equal(response.headers.get('x-request-id'), data.id);
  assert.equal(response.headers.get('x-should-retry'), 'false');
  assert.equal(response.headers.get('connection'), 'close');
});

test('models.list() lists codellm and the allowed interpreters; models.retrieve() finds one', async () => {
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => m.id), ['codellm', 'python', 'bash', 'node']);
  assert.ok(page.data.every((m) => m.object === 'model' && m.owned_by === 'codellm'));
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['codellm', 'python', 'bash', 'node']);
  const m = await client.models.retrieve('python');
  assert.equal(m.id, 'python');
  const e = await rejection(() => client.models.retrieve('ruby'));
  assert.ok(e instanceof OpenAI.NotFoundError, `NotFoundError, got ${e}`);
});

test('a wrong key raises AuthenticationError (401 invalid_api_key)', async () => {
  const bad = s.client({ apiKey: 'not-' + KEY });
  const e = await rejection(() => bad.chat.completions.create({
    model: 'python', messages: [{ role: 'user', content: 'print(1)' }],
  }));
  assert.ok(e instanceof OpenAI.AuthenticationError, `AuthenticationError, got ${e}`);
  assert.equal(e.status, 401);
  assert.equal(e.code, 'invalid_api_key');
  const e2 = await rejection(() => bad.models.list());
  assert.ok(e2 instanceof OpenAI.AuthenticationError);
});

test('a block in a language the server does not allow raises PermissionDeniedError (403)', async () => {
  const e = await rejection(() => client.chat.completions.create({
    model: 'codellm', messages: [{ role: 'user', content: block('ruby', 'puts 1') }],
  }));
  assert.ok(e instanceof OpenAI.PermissionDeniedError, `PermissionDeniedError, got ${e}`);
  assert.equal(e.status, 403);
  assert.equal(e.code, 'program_not_allowed');
  assert.equal(e.type, 'permission_error');
  assert.match(e.message, /ruby/);
});

test('a request without a runnable block raises BadRequestError (400 no_runnable_block)', async () => {
  const e = await rejection(() => client.chat.completions.create({
    model: 'codellm',
    messages: [{ role: 'user', content: 'No code here.\n```json\n{"a": 1}\n```\n' }],
  }));
  assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e}`);
  assert.equal(e.status, 400);
  assert.equal(e.code, 'no_runnable_block');
  assert.equal(e.type, 'invalid_request_error');
});

test('agent mode: tool calls parse; arguments JSON.parse to exactly the changes the block printed', async () => {
  const r = await client.chat.completions.create({
    model: 'codellm',
    messages: [
      { role: 'system', content: 'You are a scoped micro-agent.\n' + changesBlock(CHANGES, 'done ✓') },
      { role: 'user', content: 'Begin.' },
    ],
    tools: TOOLS,
  });
  const ch = r.choices[0];
  assert.equal(ch.finish_reason, 'tool_calls');
  assert.equal(ch.message.content, '');
  const calls = ch.message.tool_calls;
  const rid = r.id.split('-').slice(1).join('-');
  assert.deepEqual(calls.map((c) => [c.id, c.type]),
    [[`call_${rid}_0`, 'function'], [`call_${rid}_1`, 'function'], [`call_${rid}_2`, 'function']]);
  assert.deepEqual(calls.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) })),
    expectedCalls(CHANGES, 'done ✓'));
  assert.equal(r.codellm.changes, 2);
  assert.equal(r.codellm.exit_code, 0);
});

/** Exactly one HTTP request reached the handler (and every connection did). */
function ranOnce(n) {
  assert.equal(n.requests, 1, `exactly one HTTP request reached the handler (${JSON.stringify(n)})`);
  assert.equal(n.spawned, n.connections, `each connection reached a handler (${JSON.stringify(n)})`);
}

test('agent mode, a block that exits 1: UnprocessableEntityError, and the default retries ran it once', async () => {
  const c = await s.counting();
  const e = await rejection(() => c.client.chat.completions.create({
    model: 'codellm',
    messages: [{ role: 'user', content: block('python', 'import sys\nprint("failing", file=sys.stderr)\nsys.exit(1)') }],
    tools: TOOLS,
  }));
  assert.ok(e instanceof OpenAI.UnprocessableEntityError, `UnprocessableEntityError, got ${e}`);
  assert.equal(e.status, 422);
  assert.equal(e.type, 'execution_error');
  assert.equal(e.code, 'block_failed');
  assert.match(e.message, /failing/);
  assert.equal(e.headers.get('x-should-retry'), 'false');
  // the SDK makes its retries before its promise rejects: the counts are final
  const n = await c.counts();
  c.close();
  ranOnce(n);
  assert.equal(n.spawned, 1);
});

test('run mode, handler killed after the early 200 headers: the SDK reports an error and never retries', async () => {
  const c = await s.counting();
  const call = c.client.chat.completions.create({
    model: 'codellm',
    // runs until killed (the handler's --timeout, 240 s, is far off)
    messages: [{ role: 'user', content: block('bash', 'echo started; sleep 600; echo never') }],
  });
  call.catch(() => {}); // examined below
  const pids = await s.waitFor(() => s.blockPids().length && s.handlerPids(), WAIT, 'the block to start');
  // the early headers are out once the block started: killed once the
  // relay has passed them on to the client (then the SDK has its 200)
  await s.waitFor(() => c.answers() >= 1, WAIT, 'the early 200 headers to reach the client');
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  const e = await rejection(() => call);
  assert.ok(e instanceof Error, `an error, got ${e}`);
  const n = await c.counts();
  c.close();
  ranOnce(n);
});

test('with --max-concurrent 1, a second run while one runs raises RateLimitError (429, Retry-After 1)', async () => {
  const s2 = await startServer({ args: ['--max-concurrent', '1'] });
  try {
    // the slot holder waits at its gate until the test is done with the
    // 429s, however long the SDK's retries (1 s apart) take
    const slow = s2.client().chat.completions.create({
      model: 'codellm', messages: [{ role: 'user', content: block('bash', gate('bash') + 'echo slow') }],
    });
    slow.catch(() => {});
    await s2.waitFor(() => s2.blockPids().length, WAIT, 'the slow run to start');
    // the control: the SDK's default retries do retry a 429 (Retry-After: 1),
    // and each attempt is one more connection counted (nothing runs for them)
    const c = await s2.counting();
    const e0 = await rejection(() => c.client.chat.completions.create({
      model: 'codellm', messages: [{ role: 'user', content: block('bash', 'echo second') }],
    }));
    assert.ok(e0 instanceof OpenAI.RateLimitError, `RateLimitError, got ${e0}`);
    assert.deepEqual(await c.counts(), { requests: 3, connections: 3, spawned: 3 },
      'the default client tried three times, and the counts see each try');
    c.close();
    const busy = s2.client({ maxRetries: 0 });
    const base = s2.spawned();
    const e = await rejection(() => busy.chat.completions.create({
      model: 'codellm', messages: [{ role: 'user', content: block('bash', 'echo second') }],
    }));
    assert.ok(e instanceof OpenAI.RateLimitError, `RateLimitError, got ${e}`);
    assert.equal(e.status, 429);
    assert.equal(e.type, 'rate_limit_error');
    assert.equal(e.headers.get('retry-after'), '1');
    assert.equal(await s2.spawnedSince(base, 1), 1, 'maxRetries: 0 sent it once');
    await s2.openGate();
    const r = await slow;
    assert.equal(r.choices[0].message.content, 'slow\n');
    // with the slot free again, the same request runs
    const r2 = await busy.chat.completions.create({
      model: 'codellm', messages: [{ role: 'user', content: block('bash', 'echo second') }],
    });
    assert.equal(r2.choices[0].message.content, 'second\n');
  } finally {
    await s2.stop();
  }
});

test('the handlers left no run directory behind, and the server stops cleanly', async () => {
  assert.deepEqual(await s.leftovers(), []);
  await s.stop();
});
