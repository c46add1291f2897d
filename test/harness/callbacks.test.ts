// onStepFinish / onFinish (and their AI SDK v7 names onStepEnd / onEnd) on generate and stream:
// one StepResult per model step, then the end event with every step and the total usage.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import type { SdkEndEvent, SdkStep } from '../../src/harness/sdk-turn.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { echoTool } from '../engine/helpers.ts';

function echoAgent() {
  const model = scriptedModel([
    { text: 'Let me echo.', toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'kiwi' } }], inputTokens: 100, outputTokens: 10 },
    { text: 'The echo said kiwi.', inputTokens: 130, outputTokens: 6 },
  ]);
  const harness = createEngineHarness({ model: fromLanguageModel(model), home: mkdtempSync(join(tmpdir(), 'acx-callbacks-')) });
  return new HarnessAgent({ harness, tools: [echoTool()] });
}

/** What a user checks in a step: its number, reason, text, calls, results and tokens. */
const summary = (step: SdkStep) => ({
  stepNumber: step.stepNumber,
  finishReason: step.finishReason,
  text: step.text,
  toolCalls: step.toolCalls.map((c) => [c.toolName, c.input]),
  toolResults: step.toolResults.map((r) => r.output),
  tokens: [step.usage.inputTokens, step.usage.outputTokens],
});

const expectedSteps = [
  { stepNumber: 0, finishReason: 'tool-calls', text: 'Let me echo.', toolCalls: [['echo', { text: 'kiwi' }]], toolResults: ['echo: kiwi'], tokens: [100, 10] },
  { stepNumber: 1, finishReason: 'stop', text: 'The echo said kiwi.', toolCalls: [], toolResults: [], tokens: [130, 6] },
];

for (const mode of ['generate', 'stream'] as const) {
  describe(`${mode}() callbacks`, () => {
    it('onStepFinish gets each step as the AI SDK shapes it; onFinish gets every step and the total', async () => {
      const steps: SdkStep[] = [];
      const ends: SdkEndEvent[] = [];
      const options = { prompt: 'echo kiwi', onStepFinish: (s: SdkStep) => void steps.push(s), onFinish: (e: SdkEndEvent) => void ends.push(e) };
      const agent = echoAgent();
      const result = mode === 'generate' ? await agent.generate(options) : await agent.stream(options).result;
      expect(steps.map(summary)).toEqual(expectedSteps);
      expect(ends).toHaveLength(1);
      expect(ends[0]!.steps.map(summary)).toEqual(expectedSteps);
      expect(ends[0]!.text).toBe('The echo said kiwi.');
      expect([ends[0]!.totalUsage.inputTokens, ends[0]!.totalUsage.outputTokens]).toEqual([230, 16]);
      // The result carries the same steps, and the response messages the AI SDK would record.
      expect(result.steps.map(summary)).toEqual(expectedSteps);
      expect(result.responseMessages.map((m) => [m.role, (m.content as Array<{ type: string }>).map((p) => p.type)])).toEqual([
        ['assistant', ['text', 'tool-call']],
        ['tool', ['tool-result']],
        ['assistant', ['text']],
      ]);
    });

    it('the v7 names onStepEnd / onEnd are called too, and async callbacks finish before the call resolves', async () => {
      const seen: string[] = [];
      const later = () => new Promise<void>((resolve) => setImmediate(resolve));
      const options = {
        prompt: 'echo kiwi',
        onStepEnd: async (s: SdkStep) => (await later(), void seen.push(`step ${s.stepNumber}`)),
        onEnd: async () => (await later(), void seen.push('end')),
      };
      const agent = echoAgent();
      if (mode === 'generate') await agent.generate(options);
      else await agent.stream(options).result;
      expect(seen).toEqual(['step 0', 'step 1', 'end']);
    });
  });
}
