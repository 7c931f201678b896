// A TypeScript agent on the `openai` npm package, pointed at the OpenClaw-RL server.
//
//   npm install && OPENAI_BASE_URL=http://127.0.0.1:30000/v1 OPENAI_API_KEY=K node chat.ts
//
// Node 24 runs the file as it is (type stripping; Node 22.18+ too). It sends no capture
// headers: the server attributes the three requests to one session by itself. One conversation:
//   1. the model must call `get_weather` (`tool_choice` names it); the agent runs the tool and
//      sends its result back;
//   2. the answer to the tool result, streamed;
//   3. the user asks for the weather as JSON (`response_format` json_schema, no tools: the server
//      enforces the schema, so the reply parses).
// The last line printed is a JSON summary (the client suite in tests/test_node_client.py reads it).
//
// Environment: OPENAI_BASE_URL and OPENAI_API_KEY (read by the SDK), MODEL (any name: the server
// serves one model), SYSTEM_PROMPT, MAX_TOKENS (per reply), SEED (fixed sampling).
import OpenAI from "openai";
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:30000/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "sk-local",
  maxRetries: 0,
});
const model = process.env.MODEL ?? "default";
const maxTokens = Number(process.env.MAX_TOKENS ?? 256);
const seed = process.env.SEED === undefined ? undefined : Number(process.env.SEED);

const CITIES = ["Paris", "Oslo"];
const tools: ChatCompletionTool[] = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", enum: CITIES } },
      required: ["city"],
    },
  },
}];

function getWeather(args: { city: string }): string {
  return args.city === "Oslo" ? "rain, 9 C" : "sunny, 21 C";
}

const messages: ChatCompletionMessageParam[] = [
  { role: "system", content: process.env.SYSTEM_PROMPT ?? "You check the weather." },
  { role: "user", content: "What is the weather in Paris?" },
];
const ids: string[] = [];

// 1. a forced tool call, run here, its result sent back
const called = await client.chat.completions.create({
  model, messages, tools, max_tokens: maxTokens, seed,
  tool_choice: { type: "function", function: { name: "get_weather" } },
});
ids.push(called.id);
const call = called.choices[0].message.tool_calls?.[0];
if (call === undefined || call.type !== "function") {
  throw new Error(`no tool call: ${JSON.stringify(called.choices[0])}`);
}
const args = JSON.parse(call.function.arguments) as { city: string };
messages.push(called.choices[0].message);
messages.push({ role: "tool", tool_call_id: call.id, content: getWeather(args) });

// 2. the answer, streamed
const stream = await client.chat.completions.create({
  model, messages, tools, max_tokens: maxTokens, seed: seed === undefined ? undefined : seed + 1,
  stream: true,
});
let answer = "";
let streamedId = "";
for await (const chunk of stream) {
  streamedId = chunk.id;
  answer += chunk.choices[0]?.delta?.content ?? "";
  process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
}
process.stdout.write("\n");
ids.push(streamedId);
messages.push({ role: "assistant", content: answer });
messages.push({ role: "user", content: "Now as JSON, please." });

// 3. structured output: the reply follows the schema (no tools offered, so it cannot be a call)
const structured = await client.chat.completions.create({
  model, messages, max_tokens: maxTokens, seed: seed === undefined ? undefined : seed + 2,
  response_format: {
    type: "json_schema",
    json_schema: {
      name: "weather",
      strict: true,
      schema: {
        type: "object",
        properties: { city: { type: "string", enum: CITIES }, sunny: { type: "boolean" } },
        required: ["city", "sunny"],
        additionalProperties: false,
      },
    },
  },
});
ids.push(structured.id);
const weather = JSON.parse(structured.choices[0].message.content ?? "") as { city: string; sunny: boolean };

console.log(JSON.stringify({ ids, call: { id: call.id, name: call.function.name, args }, answer, weather }));
