import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatchTool, DISPATCH_SUMMARY_CHARS } from '../../src/app/dispatch.ts';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { scriptedModel, toolResultCount } from '../support/scripted-model.ts';

const lookup: Tool<{ q: string }> = {
  name: 'lookup',
  description: 'Look something up',
  inputSchema: z.object({ q: z.string() }),
  capabilityScopes: ['search'],
  kind: 'read',
  effect: 'read-only',
  execute: ({ q }) => `found ${q}`,
};

function systemOf(options: { prompt: Array<{ role: string; content: unknown }> }): string {
  const system = options.prompt.find((m) => m.role === 'system');
  return typeof system?.content === 'string' ? system.content : '';
}

describe('dispatch: a sub-agent for one unit of work', () => {
  it('runs the task in its own session with its own budget and tools, and returns a bounded summary', async () => {
    const seenBySub: string[][] = [];
    const model = scriptedModel((options) => {
      if (systemOf(options).includes('sub-agent')) {
        seenBySub.push((options.tools ?? []).map((tool) => tool.name));
        if (toolResultCount(options) === 0) return { toolCalls: [{ name: 'lookup', input: { q: 'release date' } }] };
        return { text: `Report: the release date is 12 December. ${'detail '.repeat(1500)}` };
      }
      if (toolResultCount(options) === 0) return { toolCalls: [{ name: 'dispatch', input: { task: 'Find the release date.', tools: ['lookup'] } }] };
      return { text: 'The sub-agent found it.' };
    });
    const home = mkdtempSync(join(tmpdir(), 'acx-dispatch-'));
    const subHarness = createEngineHarness({ model: fromLanguageModel(model), home, maxSteps: 3 });
    const dispatch = createDispatchTool({ harness: subHarness, tools: () => [lookup, dispatch], instructions: () => 'Be exact.', agentId: 'parent' });
    const harness = createEngineHarness({ model: fromLanguageModel(model), home });
    const agent = new HarnessAgent({ harness, tools: [lookup, dispatch], permissionMode: 'allow-all' });

    const result = await agent.generate({ prompt: 'When is the release?' });
    expect(result.text).toBe('The sub-agent found it.');
    const summary = String(result.toolResults.find((r) => r.toolName === 'dispatch')!.output);
    expect(summary).toMatch(/^Sub-agent report \(2 steps\):\nReport: the release date is 12 December\./);
    expect(summary.length).toBeLessThan(DISPATCH_SUMMARY_CHARS + 200);
    expect(summary).toMatch(/chars elided of/);
    // The sub-agent saw only the tools it was given, never dispatch itself.
    expect(seenBySub[0]).toEqual(['lookup']);
    // Its session is journaled under the parent's call.
    const sessions = (await subHarness.journal.listSessions()).map((s) => s.id);
    expect(sessions.some((id) => id.startsWith('dispatch/'))).toBe(true);
  });

  it('refuses unknown tool names without starting a sub-agent', async () => {
    const model = scriptedModel([]);
    const home = mkdtempSync(join(tmpdir(), 'acx-dispatch-'));
    const dispatch = createDispatchTool({
      harness: createEngineHarness({ model: fromLanguageModel(model), home }),
      tools: () => [lookup],
      instructions: () => '',
      agentId: 'parent',
    });
    const output = await dispatch.execute!(
      { task: 'x', tools: ['nope'] },
      { toolCallId: 'c', sessionId: 's', idempotencyKey: 'k', abortSignal: new AbortController().signal, logger: (await import('../../src/util/logger.ts')).silentLogger },
    );
    expect(output).toMatch(/unknown tool\(s\) nope/);
    expect(model.calls).toHaveLength(0);
  });
});
