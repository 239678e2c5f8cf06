import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

// Only the base URL changes: the Agent keeps its default model, which
// speaks the Responses API (POST /v1/responses).
setDefaultOpenAIClient(new OpenAI({
  baseURL: process.env.CODELLM_BASE_URL ?? "http://127.0.0.1:8089/v1",
  apiKey: process.env.KEY,
}));
setTracingDisabled(true);

// Run mode: the final output is the block's stdout.
const calc = new Agent({ name: "calc", instructions: "```python\nprint(6 * 7)\n```" });
console.log((await run(calc, "Go.")).finalOutput); // "42\n"

// Agent mode (the tools declare finish): the block's {"changes", "answer"}
// become tool calls; the Agent runs them, asks again, and the second
// answer (nothing runs twice) is finish's answer as text.
const notes = {};
const writer = new Agent({
  name: "writer",
  instructions: `\`\`\`python
import json
print(json.dumps({"changes": [{"path": "hello.md", "content": "# Hello\\n"}],
                  "answer": "wrote hello.md"}))
\`\`\``,
  tools: [
    tool({
      name: "write_note", description: "Create or replace a note.",
      parameters: z.object({ path: z.string(), content: z.string() }),
      execute: async ({ path, content }) => { notes[path] = content; return "ok"; },
    }),
    tool({
      name: "finish", description: "End the run with an answer.",
      parameters: z.object({ answer: z.string() }),
      execute: async ({ answer }) => answer,
    }),
  ],
});
console.log((await run(writer, "Begin.")).finalOutput); // "wrote hello.md"
console.log(JSON.stringify(notes));                     // {"hello.md":"# Hello\n"}
