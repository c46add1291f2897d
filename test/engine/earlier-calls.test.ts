// ToolContext.earlierCalls: what the turn called before this call, in the journal's order, so a
// tool can derive stable keys (the n-th create of a kind) that survive a resumed turn.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

describe('ToolContext.earlierCalls', () => {
  it('lists the calls before this one: earlier steps, then earlier places in the same step', async () => {
    const seen: Record<string, string[]> = {};
    const note = tool({
      name: 'note',
      description: 'Take a note',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: async ({ text }: { text: string }, context) => {
        seen[text] = ((await context.earlierCalls?.()) ?? []).map((call) => `${call.toolName}:${(call.input as { text: string }).text}`);
        return 'ok';
      },
    });
    server.enqueue(
      { toolCalls: [{ name: 'note', input: { text: 'a' } }, { name: 'note', input: { text: 'b' } }] },
      { toolCalls: [{ name: 'note', input: { text: 'c' } }] },
      'done',
    );
    const { agent } = rig(await openaiModel(server), { agent: { tools: [note] } });
    expect((await agent.generate({ prompt: 'go' })).text).toBe('done');
    expect(seen).toEqual({ a: [], b: ['note:a'], c: ['note:a', 'note:b'] });
    // A second turn starts from nothing.
    server.enqueue({ toolCalls: [{ name: 'note', input: { text: 'd' } }] }, 'done');
    await agent.generate({ prompt: 'again' });
    expect(seen.d).toEqual([]);
  });
});
