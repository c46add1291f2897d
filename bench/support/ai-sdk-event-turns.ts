import { appendFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, tool } from 'ai';
import { z } from 'zod';

/**
 * The anchor of wake-throughput.ts's CPU per event: the AI SDK alone answering the same events as
 * the workers, against the same local model server — `generateText` with the OpenAI provider's
 * Responses model (what acx builds for `openai:…`), the same ledger tool appending a line per
 * event, two steps per event (the call, then the reply). No journal, no queue, no store: what a
 * turn costs when nothing is durable. Run as its own process, so its CPU is only its own:
 *
 *   node bench/support/ai-sdk-event-turns.ts BASE_URL API_KEY LEDGER_FILE TURNS
 *
 * prints one JSON line: { cpuMsPerTurn, turns } over TURNS turns after a warm-up.
 */
const [baseURL, apiKey, ledger, turnsArg] = process.argv.slice(2);
const turns = Number(turnsArg ?? 200);
const WARM_UP = 10;

const model = createOpenAI({ baseURL, apiKey }).responses('fleet-model');
const tools = {
  ledger_append: tool({
    description: 'Appends one line to the ledger.',
    inputSchema: z.object({ line: z.string() }),
    execute: async ({ line }) => {
      appendFileSync(ledger!, `${line}\n`);
      return `appended ${line}`;
    },
  }),
};

async function answer(event: string): Promise<void> {
  const result = await generateText({ model, tools, stopWhen: isStepCount(4), prompt: `Please log ${event}.` });
  if (result.steps.length !== 2 || !result.text.includes(event)) throw new Error(`the model server answered ${event} in ${result.steps.length} steps: ${result.text}`);
}

for (let i = 0; i < WARM_UP; i++) await answer(`evt-s97-e${i}`);
const before = process.cpuUsage();
for (let i = 0; i < turns; i++) await answer(`evt-s96-e${i}`);
const used = process.cpuUsage(before);
console.log(JSON.stringify({ cpuMsPerTurn: (used.user + used.system) / 1000 / turns, turns }));
