import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { briefOf, scriptedModel, toolResultCount } from '../support/scripted-model.ts';

const home = () => mkdtempSync(join(tmpdir(), 'acx-engine-'));

const echo = tool({
  name: 'echo',
  description: 'Echo text back',
  inputSchema: z.object({ text: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ text }: { text: string }) => `echo: ${text}`,
});

describe('the think → act loop', () => {
  it('runs tools the model calls, in parallel within a step, then returns the final text', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'echo', input: { text: 'b' } }] },
      { text: 'done: a and b' },
    ]);
    const logger = createMemoryLogger('info');
    const agent = new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(model), home: home(), logger }), tools: [echo] });
    const result = await agent.generate({ prompt: 'echo a and b' });
    expect(result.text).toBe('done: a and b');
    expect(result.stepCount).toBe(2);
    expect(result.toolResults.map((r) => r.output)).toEqual(['echo: a', 'echo: b']);
    expect(toolResultCount(model.calls[1]!)).toBe(2);
    expect(briefOf(model.calls[0]!)).toMatch(/Current Time: .* UTC .* \/ Step 1 of 24/);
    expect(logger.lines.some((l) => l.startsWith('INFO llm provider=scripted'))).toBe(true);
  });

  it('spends the step budget, then makes one reserve call with tools withheld', async () => {
    const model = scriptedModel((options) =>
      options.toolChoice?.type === 'none' ? { text: 'Progress: echoed 3 times; next, stop.' } : { toolCalls: [{ name: 'echo', input: { text: 'x' } }] },
    );
    const agent = new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(model), home: home(), maxSteps: 3 }), tools: [echo] });
    const result = await agent.generate({ prompt: 'loop' });
    expect(model.calls).toHaveLength(4);
    expect(model.calls[3]!.toolChoice).toEqual({ type: 'none' });
    expect(result.text).toBe('Progress: echoed 3 times; next, stop.');
    expect(result.finishReason).toBe('length');
    expect(briefOf(model.calls[2]!)).toMatch(/Only 0 step\(s\) remain/);
  });

  it('keeps at most stepResultBudget characters of a step\'s results in the journal', async () => {
    const big = tool({ ...echo, name: 'big', execute: () => 'x'.repeat(5000) });
    const model = scriptedModel([{ toolCalls: [{ name: 'big', input: { text: 'a' } }] }, { text: 'ok' }]);
    const harness = createEngineHarness({ model: fromLanguageModel(model), home: home(), stepResultBudget: 1500 });
    const agent = new HarnessAgent({ harness, tools: [big] });
    const session = await agent.createSession({ sessionId: 's' });
    await agent.generate({ session, prompt: 'go' });
    const stored = (await harness.journal.messages('s')).find((m) => m.kind === 'tool')!;
    const kept = JSON.stringify(stored.message);
    expect(kept).toMatch(/chars elided of 5,000/);
    expect(kept.length).toBeLessThan(2000);
  });

  it('refuses a non-positive step budget with a clear error', async () => {
    for (const maxSteps of [0, -3, 1.5]) {
      const agent = new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(scriptedModel([])), home: home(), maxSteps }) });
      await expect(agent.createSession()).rejects.toThrow(/step budget must be a positive whole number/);
    }
  });
});
