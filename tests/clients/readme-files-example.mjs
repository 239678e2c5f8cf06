import fs from "node:fs";
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.CODELLM_BASE_URL ?? "http://127.0.0.1:8089/v1",
  apiKey: process.env.KEY,
});
const csv = "month,sales\nJan,120\nFeb,135\nMar,160\nApr,150\n";
const code = `\`\`\`python
import csv, matplotlib, os
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open("sales.csv")))
plt.figure(figsize=(4, 3), dpi=100)
plt.bar([r["month"] for r in rows], [int(r["sales"]) for r in rows])
os.makedirs("out", exist_ok=True)
plt.savefig("out/chart.png")
print(len(rows), "months")
\`\`\``;
const r = await client.chat.completions.create({
  model: "data",
  messages: [{
    role: "user",
    content: [
      { type: "text", text: code },
      { type: "file", file: { filename: "sales.csv",
          file_data: "data:text/csv;base64," + Buffer.from(csv).toString("base64") } },
    ],
  }],
});
console.log(r.choices[0].message.content); // "4 months\n"
for (const f of r.codellm.files ?? []) {    // [{ name: "out/chart.png", … }]
  fs.writeFileSync(f.name.slice("out/".length), Buffer.from(f.data_b64, "base64"));
  console.log(f.name, f.mime);              // "out/chart.png image/png"
}
