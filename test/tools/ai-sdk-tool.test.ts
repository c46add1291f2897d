// A tool made with the AI SDK's own tool() is accepted as it is, and gets the safe default: kind
// `other`, so it asks for approval unless the permission mode is allow-all.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool as sdkTool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import type { PermissionMode } from '../../src/tools/permission.ts';
import { scriptedModel } from '../support/scripted-model.ts';

function weatherAgent(permissionMode: PermissionMode, seen: string[]) {
  const weather = sdkTool({
    description: 'Weather for a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => (seen.push(city), { city, sky: 'sunny' }),
  });
  const model = scriptedModel([{ toolCalls: [{ name: 'weather', input: { city: 'Paris' } }] }, { text: 'Sunny in Paris.' }]);
  const harness = createEngineHarness({ model: fromLanguageModel(model), home: mkdtempSync(join(tmpdir(), 'acx-sdk-tool-')) });
  return { agent: new HarnessAgent({ harness, tools: { weather }, permissionMode }), model };
}

describe("a tool made with the AI SDK's tool()", () => {
  it('is offered to the model under its record key, with its schema and description', async () => {
    const { agent, model } = weatherAgent('allow-all', []);
    await agent.generate({ prompt: 'weather?' });
    expect(model.calls[0]!.tools?.map((t) => ({ name: t.name, description: (t as { description?: string }).description }))).toEqual([
      { name: 'weather', description: 'Weather for a city' },
    ]);
  });

  it('runs without asking under allow-all', async () => {
    const seen: string[] = [];
    const { agent } = weatherAgent('allow-all', seen);
    const result = await agent.generate({ prompt: 'weather in Paris?' });
    expect(seen).toEqual(['Paris']);
    expect(result.toolResults.map((r) => r.output)).toEqual([{ city: 'Paris', sky: 'sunny' }]);
    expect(result.text).toBe('Sunny in Paris.');
  });

  for (const mode of ['allow-edits', 'allow-reads'] as const) {
    it(`asks for approval under ${mode} (kind other), and does not run until approved`, async () => {
      const seen: string[] = [];
      const { agent } = weatherAgent(mode, seen);
      const session = await agent.createSession();
      const paused = await agent.generate({ session, prompt: 'weather in Paris?' });
      expect(paused.pendingApprovals.map((a) => [a.toolName, a.input])).toEqual([['weather', { city: 'Paris' }]]);
      expect(seen).toEqual([]);
      const done = await agent.continueGenerate({ session, approvals: [{ approvalId: paused.pendingApprovals[0]!.approvalId, approved: true }] });
      expect(seen).toEqual(['Paris']);
      expect(done.text).toBe('Sunny in Paris.');
    });
  }

  it('a provider tool (run inside the provider API) is refused with what to do instead', () => {
    const harness = createEngineHarness({ model: fromLanguageModel(scriptedModel([])), home: mkdtempSync(join(tmpdir(), 'acx-sdk-tool-')) });
    const search = { type: 'provider', id: 'openai.web_search', args: {}, inputSchema: z.object({}) } as const;
    expect(() => new HarnessAgent({ harness, tools: { search: search as never } })).toThrow(/provider tool \(openai\.web_search\)/);
  });
});
