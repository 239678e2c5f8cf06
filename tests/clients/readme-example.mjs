import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.CODELLM_BASE_URL ?? "http://127.0.0.1:8089/v1",
  apiKey: process.env.KEY,
});
const r = await client.chat.completions.create({
  model: "python",
  messages: [{ role: "user", content: "print(6 * 7)" }],
});
console.log(r.choices[0].message.content); // "42\n"
console.log(r.codellm.exit_code);          // 0

// The same, streamed: stdout arrives as it is printed.
const stream = await client.chat.completions.create({
  model: "python",
  messages: [{ role: "user", content: "print(6 * 7)" }],
  stream: true,
});
for await (const chunk of stream) {
  process.stdout.write(chunk.choices[0]?.delta?.content ?? ""); // "42\n"
}
