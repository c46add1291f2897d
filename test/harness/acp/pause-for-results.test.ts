// A host tool without `execute` pauses an ACP turn: the agent's MCP call is held open, the turn
// returns pendingToolCalls, and continueGenerate/continueStream supplies the result to the same
// session/prompt. Driven against the fake ACP agent (its `mcp` command calls a host tool over MCP
// and replies with the tool's output).
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HarnessAgent, type AgentSession } from '../../../src/harness/harness-agent.ts';
import type { HarnessSession } from '../../../src/harness/harness.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { tool } from '../../../src/tools/tool.ts';
import { AcxError } from '../../../src/core/errors.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

// No `execute`: the caller supplies the result.
const ask = tool({
  name: 'ask_user',
  description: 'Asks the user a question; the host answers later.',
  inputSchema: z.object({ question: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
});

function newAgent(): HarnessAgent {
  const harness = createACP(fakeProfile(cache));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness, tools: [ask] });
}

const innerOf = (session: AgentSession) => (session as unknown as { inner: HarnessSession }).inner;
const PROMPT = '[[mcp:ask_user {"question":"Which colour?"}]]';

async function collect(stream: AsyncIterable<HarnessStreamPart>): Promise<HarnessStreamPart[]> {
  const parts: HarnessStreamPart[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}

describe('ACP turns pause for caller-supplied tool results', () => {
  it('pauses on a tool without execute and finishes the same turn with continueGenerate', async () => {
    const agent = newAgent();
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: PROMPT });
    expect(paused.finishReason).toBe('tool-calls');
    expect(paused.pendingToolCalls).toHaveLength(1);
    const call = paused.pendingToolCalls[0]!;
    expect(call).toMatchObject({ toolName: 'ask_user', input: { question: 'Which colour?' } });
    expect(await session.hasUnfinishedTurn()).toBe(true);

    // A new message is refused until the paused turn is continued.
    await expect(agent.generate({ session, prompt: '[[hello]]' })).rejects.toMatchObject({ code: 'turn-suspended' });
    await expect(innerOf(session).run({ prompt: '[[hello]]' })).rejects.toMatchObject({ code: 'acp-turn-paused' });
    // An answer to an approval the turn does not wait for is refused, and nothing is answered.
    await expect(agent.continueGenerate({ session, approvals: [{ approvalId: 'x', approved: true }] })).rejects.toMatchObject({ code: 'acp-unknown-tool-call', message: expect.stringContaining('the id x') });

    const done = await agent.continueGenerate({ session, toolResults: [{ toolCallId: call.toolCallId, output: 'blue' }] });
    expect(done.turnId).toBe(paused.turnId);
    expect(done.finishReason).toBe('stop');
    expect(done.pendingToolCalls).toEqual([]);
    expect(done.text).toBe('tools=ask_user result=blue isError=false');
    expect(done.toolResults).toContainEqual(expect.objectContaining({ toolCallId: call.toolCallId, output: 'blue' }));
    expect(await session.hasUnfinishedTurn()).toBe(false);

    const next = await agent.generate({ session, prompt: '[[hello]]' });
    expect(next.text).toBe('Hello from the fake agent.');
    await session.destroy();
  });

  it('streams the pause and the continuation (continueStream)', async () => {
    const agent = newAgent();
    const session = await agent.createSession();
    const first = agent.stream({ session, prompt: PROMPT });
    const firstParts = await collect(first.harnessStream);
    const paused = await first.result;
    const call = paused.pendingToolCalls[0]!;
    expect(firstParts.find((p) => p.type === 'tool-call' && p.toolCallId === call.toolCallId)).toMatchObject({ toolName: 'ask_user', input: { question: 'Which colour?' } });
    expect(firstParts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' });

    const second = agent.continueStream({ session, toolResults: [{ toolCallId: call.toolCallId, output: 'green' }] });
    const parts = await collect(second.harnessStream);
    expect(parts[0]).toMatchObject({ type: 'start', turnId: paused.turnId, resumed: true });
    expect(parts.find((p) => p.type === 'tool-result' && p.toolCallId === call.toolCallId)).toMatchObject({ output: 'green' });
    expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text).join('')).toBe('tools=ask_user result=green isError=false');
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    expect(await second.text).toBe('tools=ask_user result=green isError=false');
    await session.destroy();
  });

  it('refuses an unknown toolCallId and keeps the turn paused', async () => {
    const agent = newAgent();
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: PROMPT });
    const error = await agent.continueGenerate({ session, toolResults: [{ toolCallId: 'nope', output: 'x' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcxError);
    expect((error as AcxError).code).toBe('acp-unknown-tool-call');
    expect((error as AcxError).message).toContain('nope');
    expect(await session.hasUnfinishedTurn()).toBe(true);
    const done = await agent.continueGenerate({ session, toolResults: [{ toolCallId: paused.pendingToolCalls[0]!.toolCallId, output: 'red' }] });
    expect(done.text).toContain('result=red');
    await session.destroy();
  });

  it('cancels a paused turn through continue\'s abortSignal, then runs a clean next turn', async () => {
    const agent = newAgent();
    const session = await agent.createSession();
    await agent.generate({ session, prompt: PROMPT });
    const controller = new AbortController();
    controller.abort();
    await expect(agent.continueGenerate({ session, abortSignal: controller.signal })).rejects.toMatchObject({ code: 'aborted' });
    expect(await session.hasUnfinishedTurn()).toBe(false);
    const next = await agent.generate({ session, prompt: '[[hello]]' });
    expect(next.text).toBe('Hello from the fake agent.');
    expect(next.finishReason).toBe('stop');
    // The held call was answered with an error, and the agent saw the cancel before the next prompt.
    const again = await agent.generate({ session, prompt: PROMPT });
    expect(again.pendingToolCalls).toHaveLength(1);
    await session.destroy();
  });

  it('destroying a session while paused ends the held call without hanging', async () => {
    const agent = newAgent();
    const session = await agent.createSession();
    await agent.generate({ session, prompt: PROMPT });
    await session.destroy();
    expect(await session.hasUnfinishedTurn()).toBe(false);
  });
});
