// codellm as the chat-completions model of an `@openai/agents` Agent: the
// code is in the agent's instructions, and the agent's own function tools
// (write_note, patch_note, finish, with zod parameters) are invoked with
// exactly the arguments the block produced — through the plain request and
// through a stream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Agent, run, tool, setTracingDisabled, OpenAIChatCompletionsModel,
} from '@openai/agents';
import { z } from 'zod';
import { startServer, changesBlock, expectedCalls } from './harness.mjs';

setTracingDisabled(true);

let s;
before(async () => {
  s = await startServer({ args: ['--keepalive-interval', '1'] });
});
after(() => s?.stop().catch(() => {}));

const CHANGES = [
  { path: 'notes/a.md', content: '# A\n\n"quoted" \\ back, ünïcødé 🎉\n\ttabbed\n' },
  { path: 'index.md', find: 'count: 0', replace: 'count: 1' },
  { path: 'notes/b.md', content: '' },
];
const ANSWER = 'two notes written, one patched';

/** An agent whose tools record each invocation's arguments in `calls`. */
function makeAgent(calls, delay = 0) {
  const record = (name) => async (args) => {
    calls.push({ name, args });
    return name === 'finish' ? args.answer : 'ok';
  };
  return new Agent({
    name: 'scoped-micro-agent',
    instructions: 'You are a scoped micro-agent. Your code:\n' + changesBlock(CHANGES, ANSWER, delay),
    model: new OpenAIChatCompletionsModel(s.client(), 'codellm'),
    tools: [
      tool({
        name: 'write_note', description: 'Create or replace a note.',
        parameters: z.object({ path: z.string(), content: z.string() }),
        execute: record('write_note'),
      }),
      tool({
        name: 'patch_note', description: 'Replace text in a note.',
        parameters: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
        execute: record('patch_note'),
      }),
      tool({
        name: 'finish', description: 'End the run with an answer.',
        parameters: z.object({ answer: z.string() }),
        execute: record('finish'),
      }),
    ],
    toolUseBehavior: { stopAtToolNames: ['finish'] },
  });
}

test('an Agent with codellm as its chat-completions model calls its tools with the block\'s changes', async () => {
  const calls = [];
  const base = s.spawned();
  const result = await run(makeAgent(calls), 'Begin.');
  assert.deepEqual(calls, expectedCalls(CHANGES, ANSWER));
  assert.equal(result.finalOutput, ANSWER);
  assert.equal(await s.spawnedSince(base, 1), 1, 'one model call: the agent stopped at finish');
});

test('the same Agent run streamed ({stream: true}) calls its tools with the same arguments', async () => {
  const calls = [];
  const base = s.spawned();
  // the block is quiet for 1.5 s first: the stream carries `: ping` comments
  const result = await run(makeAgent(calls, 1.5), 'Begin.', { stream: true });
  const kinds = new Set();
  for await (const ev of result) kinds.add(ev.type);
  await result.completed;
  assert.equal(result.error ?? null, null);
  assert.deepEqual(calls, expectedCalls(CHANGES, ANSWER));
  assert.equal(result.finalOutput, ANSWER);
  assert.ok(kinds.has('raw_model_stream_event'), `the model streamed (events: ${[...kinds]})`);
  assert.equal(await s.spawnedSince(base, 1), 1, 'one model call: the agent stopped at finish');
});

test('the server stops cleanly and no run directory is left', async () => {
  assert.deepEqual(await s.leftovers(), []);
  await s.stop();
});
