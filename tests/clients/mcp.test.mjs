// codellm as an MCP server (POST /mcp, codellm.7 "MCP") through the
// official TypeScript SDK client over streamable HTTP: connect
// (initialize, notifications/initialized, never a session), listTools,
// callTool run_code and run_markdown, a failing run as isError, an image
// artifact as an image part, an unknown tool as an McpError, and no
// key as a refused connection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startServer, block, KEY } from './harness.mjs';

let s;
let client;
let transport;

function connectTo(key) {
  const c = new Client({ name: 'codellm-test', version: '1.0.0' });
  const tr = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${s.port}/mcp`), {
    requestInit: { headers: key ? { Authorization: `Bearer ${key}` } : {} },
  });
  return { c, tr };
}

before(async () => {
  s = await startServer();
  ({ c: client, tr: transport } = connectTo(KEY));
  await client.connect(transport);
});
after(async () => {
  await client?.close().catch(() => {});
  await s?.stop().catch(() => {});
});

test('connect negotiates a version, names codellm, and mints no session', () => {
  assert.equal(transport.protocolVersion, '2025-11-25');
  assert.equal(client.getServerVersion()?.name, 'codellm');
  assert.deepEqual(client.getServerCapabilities(), { tools: {} });
  assert.equal(transport.sessionId, undefined);
});

test('listTools lists run_code and run_markdown with their schemas', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ['run_code', 'run_markdown']);
  assert.deepEqual(tools[0].inputSchema.required, ['language', 'code']);
  assert.deepEqual(tools[0].inputSchema.properties.language.enum, ['python', 'bash', 'node']);
  assert.deepEqual(tools[1].inputSchema.required, ['markdown']);
});

test('callTool run_code returns stdout and the codellm object', async () => {
  const r = await client.callTool({
    name: 'run_code', arguments: { language: 'python', code: 'print(input()[::-1])', stdin: 'olleh\n' },
  });
  assert.deepEqual(r.content, [{ type: 'text', text: 'hello\n' }]);
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.exit_code, 0);
  assert.equal(r.structuredContent.block_results[0].lang, 'python');
});

test('callTool run_markdown runs the fences as a pipeline with the input bag', async () => {
  const markdown = 'First:\n' + block('python', [
    'import json, os',
    'print(json.load(open(os.environ["FLEET_INPUT"]))["word"])',
  ].join('\n')) + 'then:\n' + block('bash', 'tr a-z A-Z');
  const r = await client.callTool({
    name: 'run_markdown', arguments: { markdown, input: { word: 'pipeline' } },
  });
  assert.deepEqual(r.content, [{ type: 'text', text: 'PIPELINE\n' }]);
  assert.equal(r.structuredContent.blocks, 2);
});

test('a failing run is a result with isError, and an image artifact an image part', async () => {
  const bad = await client.callTool({ name: 'run_code', arguments: { language: 'bash', code: 'exit 3' } });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.exit_code, 3);
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('chart')]);
  const r = await client.callTool({
    name: 'run_code',
    arguments: {
      language: 'node',
      code: `const fs = require("fs"); fs.mkdirSync("out", { recursive: true }); `
        + `fs.writeFileSync("out/chart.png", Buffer.from("${png.toString('base64')}", "base64"))`,
    },
  });
  const img = r.content.find((p) => p.type === 'image');
  assert.equal(img?.mimeType, 'image/png');
  assert.deepEqual(Buffer.from(img.data, 'base64'), png);
});

test('an unknown tool is an McpError -32602', async () => {
  await assert.rejects(client.callTool({ name: 'nope', arguments: {} }),
    (e) => e instanceof McpError && e.code === -32602);
});

test('without the key the client cannot connect', async () => {
  const { c, tr } = connectTo(null);
  await assert.rejects(c.connect(tr), (e) => e.code === 401 && /API key/.test(e.message));
  await c.close().catch(() => {});
});
