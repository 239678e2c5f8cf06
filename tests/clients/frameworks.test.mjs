// Agent frameworks nobody here wrote, each with its own default tool loop
// (issue 15): the OpenAI Agents SDK (`@openai/agents` on its
// chat-completions model, no stop-at-tool setting), the Vercel AI SDK
// (`ai` with `@ai-sdk/openai-compatible`, generateText/streamText with a
// step limit) and LangChain.js (`@langchain/openai` ChatOpenAI with
// bindTools, the loop its documentation shows). For each: a run-mode call,
// a streamed call, and an agent-mode call whose loop ends by itself within
// two model turns, each write applied exactly once (the tools append to a
// marker file; the second turn is the re-execution guard's text answer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Agent, run, tool as agentTool, setTracingDisabled, OpenAIChatCompletionsModel,
} from '@openai/agents';
import { generateText, streamText, tool as aiTool, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { z } from 'zod';
import { startServer, block, changesBlock, TOOLS, KEY } from './harness.mjs';

setTracingDisabled(true);

const CHANGES = [
  { path: 'notes/a.md', content: '# A\n\nünïcødé 🎉\n' },
  { path: 'index.md', find: 'count: 0', replace: 'count: 1' },
];
const ANSWER = 'one note written, one patched';
const CODE = 'You are a scoped micro-agent. Your code:\n' + changesBlock(CHANGES, ANSWER);
const RUN_CODE = 'Run this:\n' + block('python', 'print("hello from " + "codellm")');
const RUN_OUT = 'hello from codellm\n';

let s;
let relay;
let dir;
before(async () => {
  s = await startServer();
  relay = await s.relay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codellm-frameworks-'));
});
after(async () => {
  relay?.close();
  await s?.stop().catch(() => {});
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Tool implementations that append one line per invocation to a marker
 * file: the writes a framework applied, in order. */
function marker(name) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, '');
  const impl = {
    write_note: ({ path: p, content }) => { fs.appendFileSync(file, `write ${p} ${JSON.stringify(content)}\n`); return 'ok'; },
    patch_note: ({ path: p, find, replace }) => { fs.appendFileSync(file, `patch ${p} ${find}->${replace}\n`); return 'ok'; },
    finish: ({ answer }) => { fs.appendFileSync(file, `finish ${JSON.stringify(answer)}\n`); return answer; },
  };
  return { impl, lines: () => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) };
}

const APPLIED = [
  'write notes/a.md ' + JSON.stringify(CHANGES[0].content),
  'patch index.md count: 0->count: 1',
  'finish ' + JSON.stringify(ANSWER),
];

/** The model turns (HTTP requests) `fn` sends through the relay. */
async function turns(fn) {
  const before0 = relay.requests();
  const result = await fn();
  return { result, turns: relay.requests() - before0 };
}

// ---- the OpenAI Agents SDK -------------------------------------------------

function agentsModel() {
  return new OpenAIChatCompletionsModel(s.client({ baseURL: relay.baseURL }), 'codellm');
}

function agentsTools(impl) {
  return [
    agentTool({
      name: 'write_note', description: 'Create or replace a note.',
      parameters: z.object({ path: z.string(), content: z.string() }), execute: impl.write_note,
    }),
    agentTool({
      name: 'patch_note', description: 'Replace text in a note.',
      parameters: z.object({ path: z.string(), find: z.string(), replace: z.string() }), execute: impl.patch_note,
    }),
    agentTool({
      name: 'finish', description: 'End the run with an answer.',
      parameters: z.object({ answer: z.string() }), execute: impl.finish,
    }),
  ];
}

test('@openai/agents, run mode: finalOutput is the block\'s stdout', async () => {
  const agent = new Agent({ name: 'runner', instructions: RUN_CODE, model: agentsModel() });
  const { result, turns: n } = await turns(() => run(agent, 'Begin.'));
  assert.equal(result.finalOutput, RUN_OUT);
  assert.equal(n, 1);
});

test('@openai/agents, run mode streamed: the same output', async () => {
  const agent = new Agent({ name: 'runner', instructions: RUN_CODE, model: agentsModel() });
  const result = await run(agent, 'Begin.', { stream: true });
  let text = '';
  for await (const ev of result) {
    if (ev.type === 'raw_model_stream_event' && ev.data.type === 'output_text_delta') text += ev.data.delta;
  }
  await result.completed;
  assert.equal(result.error ?? null, null);
  assert.equal(text, RUN_OUT);
  assert.equal(result.finalOutput, RUN_OUT);
});

for (const stream of [false, true]) {
  test(`@openai/agents, agent mode${stream ? ' streamed' : ''}: the default tool loop ends by itself in two turns, each write applied once`, async () => {
    const m = marker(`agents-${stream}`);
    const agent = new Agent({
      name: 'scoped-micro-agent', instructions: CODE, model: agentsModel(), tools: agentsTools(m.impl),
    });
    const { result, turns: n } = await turns(async () => {
      const r = await run(agent, 'Begin.', stream ? { stream: true } : undefined);
      if (stream) {
        for await (const ev of r) void ev;
        await r.completed;
        assert.equal(r.error ?? null, null);
      }
      return r;
    });
    assert.deepEqual(m.lines(), APPLIED);
    assert.equal(result.finalOutput, ANSWER, 'the second turn answers finish\'s answer in text');
    assert.equal(n, 2, 'two model turns: the tool calls, then the text answer');
  });
}

// ---- the Vercel AI SDK -----------------------------------------------------

function aiModel() {
  return createOpenAICompatible({ name: 'codellm', baseURL: relay.baseURL, apiKey: KEY })('codellm');
}

function aiTools(impl) {
  return {
    write_note: aiTool({
      description: 'Create or replace a note.',
      inputSchema: z.object({ path: z.string(), content: z.string() }), execute: impl.write_note,
    }),
    patch_note: aiTool({
      description: 'Replace text in a note.',
      inputSchema: z.object({ path: z.string(), find: z.string(), replace: z.string() }), execute: impl.patch_note,
    }),
    finish: aiTool({
      description: 'End the run with an answer.',
      inputSchema: z.object({ answer: z.string() }), execute: impl.finish,
    }),
  };
}

test('ai (Vercel AI SDK), run mode: generateText is the block\'s stdout', async () => {
  const { result, turns: n } = await turns(() => generateText({ model: aiModel(), system: RUN_CODE, prompt: 'Begin.' }));
  assert.equal(result.text, RUN_OUT);
  assert.equal(result.finishReason, 'stop');
  assert.equal(n, 1);
});

test('ai (Vercel AI SDK), run mode streamed: streamText gives the same text', async () => {
  const r = streamText({ model: aiModel(), system: RUN_CODE, prompt: 'Begin.' });
  let text = '';
  for await (const part of r.textStream) text += part;
  assert.equal(text, RUN_OUT);
  assert.equal(await r.finishReason, 'stop');
});

for (const stream of [false, true]) {
  test(`ai (Vercel AI SDK), agent mode${stream ? ' (streamText)' : ' (generateText)'}: stopWhen stepCountIs(5) is not needed, the loop ends at step 2`, async () => {
    const m = marker(`ai-${stream}`);
    const opts = {
      model: aiModel(), system: CODE, prompt: 'Begin.', tools: aiTools(m.impl), stopWhen: stepCountIs(5),
    };
    const { result, turns: n } = await turns(async () => {
      if (!stream) return generateText(opts);
      const r = streamText(opts);
      let text = '';
      for await (const part of r.textStream) text += part;
      return { text, steps: await r.steps, finishReason: await r.finishReason };
    });
    assert.deepEqual(m.lines(), APPLIED);
    assert.equal(result.steps.length, 2, 'two steps: the tool calls, then the text answer');
    assert.equal(result.text, ANSWER);
    assert.equal(result.finishReason, 'stop');
    assert.equal(n, 2);
    const ids = result.steps[0].toolCalls.map((c) => c.toolCallId);
    assert.equal(new Set(ids).size, 3, `three distinct call ids (${ids})`);
  });
}

// ---- LangChain.js ------------------------------------------------------------

function chat() {
  return new ChatOpenAI({
    model: 'codellm', apiKey: KEY, maxRetries: 0, configuration: { baseURL: relay.baseURL },
  });
}

/** LangChain's tool loop as its documentation writes it: invoke, run
 * each tool call and answer it with a ToolMessage, until a reply has no
 * tool call (at most `limit` model turns). */
async function langchainLoop(model, messages, impl, limit = 5, stream = false) {
  for (let i = 0; i < limit; i++) {
    let reply;
    if (stream) {
      for await (const chunk of await model.stream(messages)) reply = reply ? reply.concat(chunk) : chunk;
    } else {
      reply = await model.invoke(messages);
    }
    messages.push(reply);
    if (!reply.tool_calls?.length) return { reply, turns: i + 1 };
    for (const c of reply.tool_calls) {
      messages.push(new ToolMessage({ tool_call_id: c.id, content: String(impl[c.name](c.args)) }));
    }
  }
  throw new Error(`no text answer within ${limit} model turns`);
}

test('@langchain/openai, run mode: invoke\'s content is the block\'s stdout', async () => {
  const { result, turns: n } = await turns(() => chat().invoke([new SystemMessage(RUN_CODE), new HumanMessage('Begin.')]));
  assert.equal(result.content, RUN_OUT);
  assert.equal(n, 1);
});

test('@langchain/openai, run mode streamed: the chunks add up to the stdout', async () => {
  let text = '';
  for await (const chunk of await chat().stream([new SystemMessage(RUN_CODE), new HumanMessage('Begin.')])) {
    text += chunk.content;
  }
  assert.equal(text, RUN_OUT);
});

for (const stream of [false, true]) {
  test(`@langchain/openai, agent mode${stream ? ' streamed' : ''}: bindTools and the documented loop end at the second turn`, async () => {
    const m = marker(`langchain-${stream}`);
    const model = chat().bindTools(TOOLS);
    const { result, turns: n } = await turns(() => langchainLoop(
      model, [new SystemMessage(CODE), new HumanMessage('Begin.')], m.impl, 5, stream));
    assert.deepEqual(m.lines(), APPLIED);
    assert.equal(result.turns, 2);
    assert.equal(result.reply.content, ANSWER);
    assert.equal(n, 2);
  });
}
