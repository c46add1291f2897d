// Item 9, the memory hooks: `context` at turn start lands in the brief, `observe` after each
// engaged turn, and a provider that throws never breaks a turn (WARNING logged).
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EngineMemory } from '../../src/engine/engine.ts';
import { createSqliteMemoryProvider, type MemoryExchange, type MemoryProvider } from '../../src/memory/provider.ts';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { briefIn, echoTool, linesOf, openaiModel, rig, startModelServer, tmpHome } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

function recordingMemory(context: string | undefined): EngineMemory & { observed: MemoryExchange[]; scopes: unknown[] } {
  const observed: MemoryExchange[] = [];
  const scopes: unknown[] = [];
  return {
    name: 'recording',
    observed,
    scopes,
    async observe(exchange) {
      observed.push(exchange);
    },
    async context(scope) {
      scopes.push(scope);
      return context;
    },
    async remember() {},
  };
}

describe('memory hooks', () => {
  it('context() at turn start is injected into the brief of every step', async () => {
    const memory = recordingMemory('Relevant memories: the project codename is BLUEBIRD.');
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, 'It is BLUEBIRD.');
    const { agent } = rig(await openaiModel(server), { harness: { memory }, agent: { id: 'agent-7', tools: [echoTool()] } });
    const session = await agent.createSession({ sessionId: 's1' });
    await agent.generate({ session, prompt: 'What is the codename?' });
    expect(memory.scopes).toEqual([{ agentId: 'agent-7', sessionId: 's1', query: 'What is the codename?' }]);
    for (const request of server.requests) expect(briefIn(request)).toContain('the project codename is BLUEBIRD');
  });

  it('observe() is called once after an engaged turn, with the prompt, the reply and the tool calls', async () => {
    const memory = recordingMemory(undefined);
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, 'Echoed.');
    const { agent } = rig(await openaiModel(server), { harness: { memory }, agent: { id: 'agent-7', tools: [echoTool()] } });
    const session = await agent.createSession({ sessionId: 's1' });
    await agent.generate({ session, prompt: 'echo hi' });
    expect(memory.observed).toEqual([
      { agentId: 'agent-7', sessionId: 's1', prompt: 'echo hi', text: 'Echoed.', unspoken: false, toolCalls: [{ name: 'echo', input: { text: 'hi' } }] },
    ]);
  });

  it('observes silent turns too: unspoken narration in tool speech mode is handed to memory', async () => {
    const memory = recordingMemory(undefined);
    const say = tool({
      name: 'say',
      description: 'Speak',
      inputSchema: z.object({ text: z.string() }),
      capabilityScopes: [],
      kind: 'edit',
      effect: 'unsafe',
      visible: true,
      execute: () => 'posted',
    });
    server.enqueue('My birthday fact noted; nothing to say.');
    const { agent } = rig(await openaiModel(server), { harness: { memory }, agent: { tools: [say], speech: { mode: 'tool', tool: 'say' } } });
    await agent.generate({ prompt: 'fyi my birthday is Feb. 16, 1977' });
    expect(memory.observed).toHaveLength(1);
    expect(memory.observed[0]).toMatchObject({ text: 'My birthday fact noted; nothing to say.', unspoken: true });
  });

  it('a fact observed in one session is recalled into the brief of another (SQLite provider)', async () => {
    const home = tmpHome();
    const memory = createSqliteMemoryProvider({ path: join(home, 'memory.db') });
    server.setFallback('Noted.');
    const { agent } = rig(await openaiModel(server), { home, harness: { memory } });
    await agent.generate({ session: await agent.createSession({ sessionId: 'timeline-a' }), prompt: 'My birthday is Feb. 16, 1977.' });
    await agent.generate({ session: await agent.createSession({ sessionId: 'timeline-b' }), prompt: 'When is my birthday?' });
    expect(briefIn(server.requests[1]!)).toContain('Feb. 16, 1977');
    memory.close();
  });

  it('a provider that throws never breaks a turn: the turn succeeds and each failure is a WARNING', async () => {
    const broken: MemoryProvider = {
      name: 'broken',
      tools: () => [],
      observe: async () => {
        throw new Error('disk on fire');
      },
      context: async () => {
        throw new Error('index corrupt');
      },
      remember: async () => {
        throw new Error('read-only');
      },
      close: () => {},
    };
    server.enqueue('Still here.');
    const { agent, logger } = rig(await openaiModel(server), { harness: { memory: broken } });
    const result = await agent.generate({ prompt: 'hello' });
    expect(result.text).toBe('Still here.');
    const context = linesOf(logger.lines, 'WARNING', 'memory.context_failed');
    const observe = linesOf(logger.lines, 'WARNING', 'memory.observe_failed');
    expect(context).toHaveLength(1);
    expect(context[0]).toMatch(/provider=broken .*index corrupt/);
    expect(observe).toHaveLength(1);
    expect(observe[0]).toMatch(/disk on fire/);
  });
});
