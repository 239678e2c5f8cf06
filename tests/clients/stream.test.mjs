// `"stream": true` through the official `openai` npm package: the plain
// stream iterator and the `.stream()` helper's final completion, in run
// mode and in agent mode; refusals still plain HTTP errors; failures after
// the stream began seen by the client; no retry running code twice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  startServer, block, changesBlock, expectedCalls, TOOLS, KEY, rejection, gate, WAIT,
} from './harness.mjs';

let s;
let client;
before(async () => {
  // pings every second, so the streams below carry `: ping` comments
  s = await startServer({ args: ['--keepalive-interval', '1'] });
  client = s.client(); // the SDK's defaults: maxRetries 2
});
after(() => s?.stop().catch(() => {}));

// prints, waits at its gate (quiet: pings go out) until the test has seen
// "first", prints again; no flush needed
const SLOW = block('python', 'print("first")\n' + gate('python') + 'print("second")');
const slowRequest = { model: 'codellm', messages: [{ role: 'user', content: SLOW }] };

/**
 * Opens SLOW's gate when the test calls open() (on seeing "first"), or
 * after WAIT ms without that, so a run whose "first" never came early
 * still ends: `by` then says 'deadline' and the test fails.
 */
function keeper() {
  const k = { by: null, at: null, t0: Date.now() };
  const go = (by) => {
    if (k.by) return Promise.resolve();
    k.by = by;
    k.at = Date.now();
    clearTimeout(timer);
    return s.openGate();
  };
  const timer = setTimeout(() => go('deadline').catch(() => {}), WAIT);
  k.open = () => go('first');
  k.done = () => clearTimeout(timer);
  return k;
}

const CHANGES = [
  { path: 'notes/a.md', content: '# A\n' + 'x'.repeat(5000) + '\n"quoted" \\ ünïcødé 🎉\n' },
  { path: 'index.md', find: 'count: 0', replace: 'count: 1' },
  { path: 'notes/b.md', content: 'b' },
];
const agentRequest = {
  model: 'codellm',
  messages: [
    { role: 'system', content: 'You are a scoped micro-agent.\n' + changesBlock(CHANGES, 'done') },
    { role: 'user', content: 'Begin.' },
  ],
  tools: TOOLS,
};

/** Exactly one HTTP request reached the handler (and every connection did). */
function ranOnce(n) {
  assert.equal(n.requests, 1, `exactly one HTTP request reached the handler (${JSON.stringify(n)})`);
  assert.equal(n.spawned, n.connections, `each connection reached a handler (${JSON.stringify(n)})`);
}

/** The time (ms) between the delta that brought "first" and the one that brought "second". */
function gap(events, k) {
  const i = events.findIndex((e) => e.text.includes('first'));
  const j = events.findIndex((e) => e.text.includes('second'));
  assert.ok(i >= 0 && j >= 0, `both lines arrived: ${JSON.stringify(events)}`);
  assert.notEqual(i, j, 'the two lines came in different deltas');
  // an ordering fact: "first" was there while the block waited at its gate,
  // before it printed "second"; a buffered run would send both at its end
  assert.equal(k.by, 'first', `"first" arrived while the block waited at its gate (gate opened by ${k.by})`);
  assert.ok(events[i].t <= k.at && events[j].t >= k.at, 'first, then the gate, then second');
  return events[j].t - events[i].t;
}

test('run mode, stream iterator: role chunk first, stdout as deltas as produced, final chunk with codellm', async (t) => {
  const k = keeper();
  const { data: stream, response } = await client.chat.completions.create({ ...slowRequest, stream: true })
    .withResponse();
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  const chunks = [];
  const deltas = [];
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      const c = chunk.choices[0]?.delta?.content;
      if (c) deltas.push({ text: c, t: Date.now() });
      if (c?.includes('first')) await k.open();
    }
  } finally {
    k.done();
  }
  assert.ok(chunks.length >= 4, `chunks: ${chunks.length}`);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
  assert.equal(chunks[0].id, response.headers.get('x-request-id'));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'the role chunk comes first');
  assert.equal(chunks[0].choices[0].index, 0);
  assert.equal(deltas.map((d) => d.text).join(''), 'first\nsecond\n', 'the deltas are the stdout');
  const g = gap(deltas, k);
  t.diagnostic(`"first" ${k.at - k.t0} ms after the request, "second" ${g} ms after "first"`);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices[0].delta, {});
  assert.equal(last.choices[0].finish_reason, 'stop');
  assert.equal(last.codellm.exit_code, 0);
  assert.equal(last.codellm.blocks, 1);
  assert.ok(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null && !c.codellm),
    'only the final chunk has a finish_reason and the codellm object');
  assert.ok(chunks.every((c) => c.choices.length === 1), 'no usage chunk unless asked for');
});

test('run mode, .stream() helper: content events as produced, finalChatCompletion() is the whole answer', async (t) => {
  const k = keeper();
  const stream = client.chat.completions.stream(slowRequest);
  const events = [];
  let opening = null;
  stream.on('content', (delta) => {
    events.push({ text: delta, t: Date.now() });
    if (delta.includes('first')) opening = k.open();
  });
  const final = await stream.finalChatCompletion().finally(() => k.done());
  await opening;
  assert.equal(final.object, 'chat.completion');
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].message.content, 'first\nsecond\n');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.codellm.exit_code, 0, 'the codellm object survives into the final completion');
  assert.equal(await stream.finalContent(), 'first\nsecond\n');
  const g = gap(events, k);
  t.diagnostic(`"first" ${k.at - k.t0} ms after the request, "second" ${g} ms after "first"`);
});

test('the wire: `: ping` comments while quiet, `data: [DONE]` last (what the SDK iterators skip)', async (t) => {
  const res = await fetch(s.baseURL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ ...slowRequest, stream: true }),
  });
  assert.equal(res.status, 200);
  // the gate opens once a ping has come after "first", while the block
  // is quiet (or after WAIT ms without one: then the test fails)
  const k = keeper();
  const pinged = (x) => x.includes('first') && /\n: ping\n\n/.test(x.slice(x.indexOf('first')));
  let text = '';
  const dec = new TextDecoder();
  try {
    for await (const part of res.body) {
      text += dec.decode(part, { stream: true });
      if (pinged(text)) await k.open();
    }
  } finally {
    k.done();
  }
  text += dec.decode();
  const first = text.indexOf('first');
  const ping = text.indexOf('\n: ping\n\n', first);
  assert.ok(first >= 0 && ping > first && ping < text.indexOf('second') && k.by === 'first',
    `a ping comment while the block was quiet, between "first" and "second" (gate opened by ${k.by})`);
  t.diagnostic(`the ping came ${k.at - k.t0} ms after the answer began`);
  assert.match(text, /(^|\n): ping\n\n/, 'a ping comment on its own');
  assert.ok(text.endsWith('data: [DONE]\n\n'), 'data: [DONE] last');
});

test('stream_options.include_usage: a usage chunk with choices: [] before the end', async () => {
  const stream = await client.chat.completions.create({
    model: 'bash', messages: [{ role: 'user', content: 'echo hi' }],
    stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'hi\n');
  const final = await client.chat.completions
    .stream({ model: 'bash', messages: [{ role: 'user', content: 'echo hi' }], stream_options: { include_usage: true } })
    .finalChatCompletion();
  assert.deepEqual(final.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  assert.equal(final.choices[0].message.content, 'hi\n');
});

test('agent mode, stream iterator (after pings): tool_calls deltas (index/id/type/name first) add up to the non-stream calls', async () => {
  const plain = await client.chat.completions.create(agentRequest);
  const want = plain.choices[0].message.tool_calls;
  assert.deepEqual(want.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) })),
    expectedCalls(CHANGES, 'done'));

  // the same changes after 1.5 s of silence, so `: ping` comments come first
  const slow = structuredClone(agentRequest);
  slow.messages[0].content = 'You are a scoped micro-agent.\n' + changesBlock(CHANGES, 'done', 1.5);
  const stream = await client.chat.completions.create({ ...slow, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'the role chunk comes first');
  const got = [];
  for (const chunk of chunks) {
    for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (!got[d.index]) {
        assert.equal(typeof d.id, 'string', `call ${d.index}'s first delta has its id`);
        assert.equal(d.type, 'function', `call ${d.index}'s first delta has its type`);
        assert.equal(typeof d.function?.name, 'string', `call ${d.index}'s first delta has its name`);
        assert.equal(d.function.arguments, '', `call ${d.index}'s first delta has arguments ""`);
        got[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
      } else {
        got[d.index].function.arguments += d.function?.arguments ?? '';
      }
    }
  }
  // ids are unique per call: the same calls as the non-stream ones, each
  // id made from its own response's id
  const rid = chunks[0].id.split('-').slice(1).join('-');
  assert.deepEqual(got.map((c) => c.id), got.map((_, i) => `call_${rid}_${i}`), 'ids call_<stream id>_<i>');
  const noId = (cs) => cs.map(({ id, ...rest }) => rest);
  assert.deepEqual(noId(got), noId(want), 'the streamed tool calls are the non-stream ones (ids aside)');
  assert.equal(new Set([...got, ...want].map((c) => c.id)).size, got.length + want.length,
    'no id of the stream is one of the other response\'s');
  const last = chunks.at(-1);
  assert.equal(last.choices[0].finish_reason, 'tool_calls');
  assert.equal(last.codellm.changes, 3);
  assert.equal(last.codellm.exit_code, 0);
});

test('agent mode, .stream() helper: the final completion\'s tool_calls equal the non-stream ones', async () => {
  const plain = await client.chat.completions.create(agentRequest);
  const stream = client.chat.completions.stream(agentRequest);
  const done = [];
  stream.on('tool_calls.function.arguments.done', (e) => done.push({ name: e.name, args: JSON.parse(e.arguments) }));
  const final = await stream.finalChatCompletion();
  const m = final.choices[0].message;
  const noId = (cs) => cs.map(({ id, ...rest }) => rest);
  assert.deepEqual(noId(m.tool_calls), noId(plain.choices[0].message.tool_calls));
  const rid = final.id.split('-').slice(1).join('-');
  assert.deepEqual(m.tool_calls.map((c) => c.id), m.tool_calls.map((_, i) => `call_${rid}_${i}`));
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.role, 'assistant');
  assert.ok(!m.content, 'no content beside the tool calls');
  assert.equal(final.codellm.changes, 3);
  assert.deepEqual(done, expectedCalls(CHANGES, 'done'), 'each call\'s "done" event has its parsed arguments');
});

test('with stream: true, refusals are still plain HTTP errors with the SDK\'s exception classes', async () => {
  const bad = s.client({ apiKey: 'not-' + KEY });
  const e1 = await rejection(() => bad.chat.completions.create({ ...slowRequest, stream: true }));
  assert.ok(e1 instanceof OpenAI.AuthenticationError, `AuthenticationError, got ${e1}`);
  const e2 = await rejection(() => client.chat.completions.create({
    model: 'codellm', stream: true, messages: [{ role: 'user', content: block('ruby', 'puts 1') }],
  }));
  assert.ok(e2 instanceof OpenAI.PermissionDeniedError, `PermissionDeniedError, got ${e2}`);
  const e3 = await rejection(() => client.chat.completions.stream({
    model: 'codellm', messages: [{ role: 'user', content: 'no code' }],
  }).finalChatCompletion());
  assert.ok(e3 instanceof OpenAI.BadRequestError, `BadRequestError, got ${e3}`);
  assert.equal(e3.code, 'no_runnable_block');
});

test('agent mode stream, the block is killed: an execution_error event (no tool call) and it ran once', async () => {
  const killed = block('python',
    'import os, signal\nprint(\'{"changes": [\', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)');
  const req = { model: 'codellm', messages: [{ role: 'user', content: killed }], tools: TOOLS, stream: true };
  const c = await s.counting();
  const chunks = [];
  const e = await rejection(async () => {
    for await (const chunk of await c.client.chat.completions.create(req)) chunks.push(chunk);
  });
  assert.ok(e instanceof OpenAI.APIError, `APIError, got ${e}`);
  assert.equal(e.type, 'execution_error');
  assert.equal(e.code, 'block_failed');
  assert.ok(!chunks.some((c) => c.choices[0]?.delta?.tool_calls), 'no tool call before the error');
  ranOnce(await c.counts());
  c.close();
  const h = await s.counting();
  const { stream: _, ...plain } = req;
  const e2 = await rejection(() => h.client.chat.completions.stream(plain).finalChatCompletion());
  assert.ok(e2 instanceof OpenAI.APIError && e2.code === 'block_failed', `the helper rejects too, got ${e2}`);
  ranOnce(await h.counts());
  h.close();
});

test('run mode stream, the handler gets SIGTERM mid-run: the client sees an end or an error, and it ran once', async (t) => {
  const c = await s.counting();
  // the block sleeps 600 s: only the signal (or the handler's own --timeout,
  // 240 s) ends the run, far beyond the 60 s allowed below
  const stream = await c.client.chat.completions.create({
    model: 'codellm', stream: true,
    messages: [{ role: 'user', content: block('bash', 'echo started; sleep 600; echo never') }],
  });
  const chunks = [];
  let error = null;
  let tSig = null;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.choices[0]?.delta?.content === 'started\n') {
        for (const pid of s.handlerPids()) process.kill(pid, 'SIGTERM');
        tSig = Date.now();
      }
    }
  } catch (e) {
    error = e;
  }
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, 'started\n');
  const ended = Date.now() - tSig;
  t.diagnostic(`the run ended ${ended} ms after the signal`);
  assert.ok(tSig !== null && ended < 60000, `the run ended at the signal (${ended} ms after it)`);
  if (error) {
    t.diagnostic(`ended with an error: ${error}`);
    assert.ok(error instanceof OpenAI.APIError, `an APIError, got ${error}`);
  } else {
    const last = chunks.at(-1);
    t.diagnostic(`ended with finish_reason ${last.choices[0]?.finish_reason}`);
    assert.ok(last.choices[0]?.finish_reason, 'not a silent close: a final chunk with a finish_reason');
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.equal(last.codellm.terminated_by_signal, 15);
  }
  ranOnce(await c.counts());
  c.close();
});

test('run mode stream: multi-byte UTF-8 over many reads arrives whole (no U+FFFD at delta borders)', async () => {
  const code = 'import sys\nfor i in range(300):\n    sys.stdout.write("é🎉ü" * 37 + "\\n")\n    sys.stdout.flush()';
  const want = ('é🎉ü'.repeat(37) + '\n').repeat(300);
  const stream = await client.chat.completions.create({
    model: 'codellm', stream: true, messages: [{ role: 'user', content: block('python', code) }],
  });
  let text = '';
  let n = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0]?.delta?.content;
    if (c) { text += c; n++; }
  }
  assert.ok(!text.includes('\uFFFD'), 'no replacement character');
  assert.equal(text, want);
  assert.ok(n > 1, `several deltas (${n})`);
});

test('run mode stream with codellm.timeout_s: the final chunk says length and timed_out', async () => {
  // 3 s: room for the block to print "before" first on a busy machine
  const stream = await client.chat.completions.create({
    model: 'codellm', stream: true, codellm: { timeout_s: 3 },
    messages: [{ role: 'user', content: block('bash', 'echo before; sleep 60; echo after') }],
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'before\n');
  assert.equal(last.choices[0].finish_reason, 'length');
  assert.equal(last.codellm.timed_out, true);
  assert.equal(last.codellm.exit_code, 124);
});

test('agent mode stream, a follow-up turn after finish (re-execution guard): its answer as text, nothing runs again', async () => {
  const final = await client.chat.completions.stream({
    ...agentRequest,
    messages: [
      ...agentRequest.messages,
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'finish', arguments: '{"answer":"done"}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: 'done' },
    ],
  }).finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.choices[0].message.content, 'done');
  assert.ok(!final.choices[0].message.tool_calls?.length, 'no tool call');
  assert.equal(final.codellm.rerun_guard, true);
  assert.equal(final.codellm.blocks, 0);
});

test('agent mode stream, a follow-up turn without finish: finish alone, nothing runs again', async () => {
  const final = await client.chat.completions.stream({
    ...agentRequest,
    messages: [...agentRequest.messages, { role: 'assistant', content: 'I ran it' }],
  }).finalChatCompletion();
  const calls = final.choices[0].message.tool_calls;
  assert.deepEqual(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [['finish', { answer: '' }]]);
  assert.equal(final.codellm.rerun_guard, true);
  assert.equal(final.codellm.blocks, 0);
});

test('a client that breaks out of the stream iterator ends the run: its block is killed', async (t) => {
  // the block sleeps 600 s (the handler's --timeout ends it at 240 s):
  // gone within the 60 s waited is gone because the client went
  const stream = await client.chat.completions.create({
    model: 'codellm', stream: true,
    messages: [{ role: 'user', content: block('bash', 'echo started; sleep 600') }],
  });
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) break; // the SDK aborts the request
  }
  const t0 = Date.now();
  await s.waitFor(() => s.blockPids().length === 0, WAIT, 'the block to be killed');
  t.diagnostic(`the block was gone ${Date.now() - t0} ms after the client left`);
  assert.deepEqual(await s.leftovers(), []);
});

test('the handlers left no run directory behind, and the server stops cleanly', async () => {
  assert.deepEqual(await s.leftovers(), []);
  await s.stop();
});
