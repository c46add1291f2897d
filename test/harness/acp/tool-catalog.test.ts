// A changed host-tool catalog: agents that handle notifications/tools/list_changed see the new
// tools on the next turn; an agent that keeps its old list and calls a removed tool gets a clear
// error naming the current catalog, and the turn fails with HarnessCapabilityUnsupportedError.
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createACP } from '../../../src/harness/acp/create.ts';
import type { ACPHarnessSession } from '../../../src/harness/acp/session.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { type AgentSession, HarnessAgent } from '../../../src/harness/harness-agent.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { tool } from '../../../src/tools/tool.ts';
import { HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
});

const echo = tool({
  name: 'echo',
  description: 'Echoes its input',
  inputSchema: z.object({ text: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ text }: { text: string }) => `echo:${text}`,
});
const shout = tool({
  name: 'shout',
  description: 'Upper-cases its input',
  inputSchema: z.object({ text: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ text }: { text: string }) => text.toUpperCase(),
});

function harnessFor(overrides: Partial<ACPSettings> = {}) {
  const harness = createACP(fakeProfile(cache, { toolRefreshGraceMs: 5000, ...overrides }));
  closers.push(() => harness.close!());
  return harness;
}

async function open(agent: HarnessAgent): Promise<{ session: AgentSession; acp: ACPHarnessSession }> {
  const session = await agent.createSession();
  closers.push(() => session.destroy());
  return { session, acp: (session as unknown as { inner: ACPHarnessSession }).inner };
}

async function collect(stream: AsyncIterable<HarnessStreamPart>): Promise<HarnessStreamPart[]> {
  const parts: HarnessStreamPart[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}

describe('a changed host-tool catalog', () => {
  it.each(['stdio', 'http'] as const)('an agent that handles list_changed refetches and uses the new tools (%s MCP transport)', async (transport) => {
    const agent = new HarnessAgent({ harness: harnessFor({ hostToolMcpTransport: transport }), tools: [echo], permissionMode: 'allow-reads' });
    const { session, acp } = await open(agent);
    expect((await agent.generate({ session, prompt: '[[persist:refresh echo {"text":"a"}]]' })).text).toBe('known=echo listed=1 result=echo:a isError=false');

    acp.setTools([echo, shout]);
    expect(acp.toolNames()).toEqual(['echo', 'shout']);
    const added = await agent.generate({ session, prompt: '[[persist:refresh shout {"text":"b"}]]' });
    expect(added.text).toBe('known=echo,shout listed=2 result=B isError=false');
    expect(added.finishReason).toBe('stop');

    // The agent refreshed, but its model still asks for a removed tool: a clear error result
    // naming the current catalog; not a stale catalog, so the turn itself finishes.
    acp.setTools([shout]);
    const removed = await agent.generate({ session, prompt: '[[persist:refresh echo {"text":"c"}]]' });
    expect(removed.text).toContain('known=shout listed=3');
    expect(removed.text).toContain('result=Tool "echo" is no longer provided by the acx host');
    expect(removed.text).toContain('Current tools: shout.');
    expect(removed.text).toContain('isError=true');
  });

  it('an agent that keeps its old tool list and calls a removed tool fails the turn explicitly', async () => {
    const agent = new HarnessAgent({ harness: harnessFor({ toolRefreshGraceMs: 200 }), tools: [echo, shout], permissionMode: 'allow-reads' });
    const { session, acp } = await open(agent);
    expect((await agent.generate({ session, prompt: '[[persist:stale echo {"text":"a"}]]' })).text).toBe('known=echo,shout listed=1 result=echo:a isError=false');

    acp.setTools([shout]);
    const stream = agent.stream({ session, prompt: '[[persist:stale echo {"text":"b"}]]' });
    const parts: HarnessStreamPart[] = [];
    await (async () => {
      for await (const p of stream.harnessStream) parts.push(p);
    })().catch(() => {});
    const failure = await stream.result.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(HarnessCapabilityUnsupportedError);
    expect((failure as Error).message).toMatch(/kept stale host tools: it called echo, which acx no longer provides/);
    expect((failure as Error).message).toContain('Current tools: shout.');
    // What the agent itself was told about the call.
    const said = parts.map((p) => (p.type === 'text-delta' ? p.text : '')).join('');
    expect(said).toContain('Tool "echo" is no longer provided by the acx host');
    // Calls of tools that still exist keep working on the same session.
    expect((await agent.generate({ session, prompt: '[[persist:stale shout {"text":"ok"}]]' })).text).toBe('known=echo,shout listed=1 result=OK isError=false');
  });

  it('sessions of agents with different tool sets each see their own catalog', async () => {
    const harness = harnessFor();
    const a = new HarnessAgent({ harness, tools: [echo], permissionMode: 'allow-reads' });
    const b = new HarnessAgent({ harness, tools: [shout], permissionMode: 'allow-reads' });
    const { session: sa } = await open(a);
    const { session: sb } = await open(b);
    expect((await a.generate({ session: sa, prompt: '[[mcp:echo {"text":"x"}]]' })).text).toBe('tools=echo result=echo:x isError=false');
    expect((await b.generate({ session: sb, prompt: '[[mcp:shout {"text":"x"}]]' })).text).toBe('tools=shout result=X isError=false');
    // A tool of another agent's session is not callable here, and the error names this catalog.
    expect((await b.generate({ session: sb, prompt: '[[mcp:echo {"text":"x"}]]' })).text).toBe('tools=shout result=Tool "echo" is not provided by the acx host. Current tools: shout. isError=true');
  });

  it('refuses to change the tools of a session opened without host tools', async () => {
    const agent = new HarnessAgent({ harness: harnessFor() });
    const { acp } = await open(agent);
    expect(() => acp.setTools([echo])).toThrow(HarnessCapabilityUnsupportedError);
  });
});
