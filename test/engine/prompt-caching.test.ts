// Item 7, prompt caching: stable content first, the volatile brief last and never persisted;
// Anthropic (explicit) requests carry exactly one cache breakpoint, on the last stable message,
// never on the brief; OpenAI (automatic) requests carry none.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelServer, RecordedRequest } from '../support/model-server.ts';
import { anthropicModel, BRIEF, echoTool, openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

interface Block {
  type: string;
  text?: string;
  cache_control?: unknown;
}

/** Every content block of an Anthropic request in wire order, with where it sits. */
function anthropicBlocks(request: RecordedRequest): Array<Block & { where: string }> {
  const body = request.body as {
    system?: Block[] | string;
    messages: Array<{ role: string; content: Block[] | string; cache_control?: unknown }>;
    tools?: Block[];
  };
  const blocks: Array<Block & { where: string }> = [];
  for (const [i, block] of (Array.isArray(body.system) ? body.system : []).entries()) blocks.push({ ...block, where: `system[${i}]` });
  for (const [m, message] of body.messages.entries()) {
    if (message.cache_control) blocks.push({ type: 'message', cache_control: message.cache_control, where: `messages[${m}]` });
    const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    for (const [b, block] of content.entries()) blocks.push({ ...block, where: `messages[${m}].content[${b}]` });
  }
  for (const [i, t] of (body.tools ?? []).entries()) if (t.cache_control) blocks.push({ ...t, where: `tools[${i}]` });
  return blocks;
}

function countCacheControl(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countCacheControl(v), 0);
  if (value && typeof value === 'object') {
    return Object.entries(value).reduce((n, [k, v]) => n + (k === 'cache_control' ? 1 : 0) + countCacheControl(v), 0);
  }
  return 0;
}

async function threeRequests(model: Awaited<ReturnType<typeof openaiModel>>) {
  server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, 'first turn done', 'second turn done');
  const r = rig(model, { agent: { instructions: 'You are a careful assistant. '.repeat(20), tools: [echoTool()] } });
  const session = await r.agent.createSession({ sessionId: 'cache' });
  await r.agent.generate({ session, prompt: 'first question' });
  await r.agent.generate({ session, prompt: 'second question' });
  expect(server.requests).toHaveLength(3);
  return r;
}

describe('explicit caching (Anthropic)', () => {
  it('every request carries exactly one breakpoint, on the block right before the brief, never on the brief', async () => {
    await threeRequests(await anthropicModel(server));
    for (const [n, request] of server.requests.entries()) {
      const label = `request ${n + 1}`;
      expect(countCacheControl(request.body), `${label}: exactly one cache_control`).toBe(1);
      const blocks = anthropicBlocks(request);
      const briefIndex = blocks.findIndex((b) => b.type === 'text' && b.text?.startsWith(BRIEF));
      expect(briefIndex, `${label}: the brief is present`).toBeGreaterThan(-1);
      expect(briefIndex, `${label}: the brief is the last block`).toBe(blocks.length - 1);
      expect(blocks[briefIndex]!.cache_control, `${label}: never a breakpoint on the brief`).toBeUndefined();
      const marked = blocks.findIndex((b) => b.cache_control !== undefined);
      expect(blocks[marked]!.where.startsWith('messages'), `${label}: the breakpoint is on the transcript`).toBe(true);
      expect(marked, `${label}: the breakpoint is the last stable block, just ahead of the brief`).toBe(briefIndex - 1);
    }
  });
});

describe('automatic caching (OpenAI)', () => {
  for (const surface of ['responses', 'chat'] as const) {
    it(`puts nothing cache-related on the ${surface} wire`, async () => {
      await threeRequests(await openaiModel(server, surface));
      for (const request of server.requests) expect(JSON.stringify(request.body)).not.toMatch(/cache_control|cacheControl/);
    });
  }

  it('the stable prefix is byte-identical between steps of a turn and across turns (the brief is the only tail that changes)', async () => {
    await threeRequests(await openaiModel(server));
    const [a, b, c] = server.requests.map((r) => r.body.input as unknown[]);
    const stable = (input: unknown[]) => JSON.stringify(input.slice(0, -1));
    // request 2 extends request 1's stable prefix; request 3 extends request 2's.
    expect(stable(b!).startsWith(stable(a!).slice(0, -1)), 'step 2 keeps step 1 as its prefix').toBe(true);
    expect(JSON.stringify(c!.slice(0, 1)), 'turn 2 starts with the same first message').toBe(JSON.stringify(a!.slice(0, 1)));
  });
});

describe('the brief', () => {
  it('is never persisted in the journal; only its step note is, as a ledger the model is not shown again', async () => {
    const r = await threeRequests(await anthropicModel(server));
    const stored = r.readJournal((j) => j.messages('cache'));
    expect(stored.length).toBeGreaterThan(0);
    expect(JSON.stringify(stored)).not.toContain(BRIEF);
    expect(JSON.stringify(stored.map((entry) => entry.message.content))).not.toContain('Current Time');
    // The step ledger: each step's note rides its assistant message, under acx's own key.
    const ledger = stored.filter((entry) => entry.message.role === 'assistant').map((entry) => (entry.message.providerOptions as { acx?: { step?: string } } | undefined)?.acx?.step);
    expect(ledger).toEqual([
      expect.stringMatching(/^Current Time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\+00:00, \w+day\) \/ Step 1 of \d+$/),
      expect.stringMatching(/ \/ Step 2 of \d+$/),
      expect.stringMatching(/ \/ Step 1 of \d+$/),
    ]);
    // The second turn's call shows its own step only, never the first turn's ledger.
    expect(JSON.stringify(server.requests[2]!.body)).not.toContain('Step 2 of');
  });
});
