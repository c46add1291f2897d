// Item 11, HarnessAgent over the native engine, through the real OpenAI Responses wire: stream
// parts in AI SDK order, cancellation that leaves a consistent journal, structured output,
// approvals that pause and continue a turn, sessions resumed by id after a restart.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import type { HarnessStreamPart } from '../../src/engine/events.ts';
import { tool } from '../../src/tools/tool.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import type { ModelServer } from '../support/model-server.ts';
import { echoTool, hasToolOutput, openaiModel, pairing, rig, startModelServer, tmpHome, toolResultsIn, until } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

describe('stream()', () => {
  it('streams AI SDK-shaped parts in order: start, start-step, text-delta, tool-call, tool-result, finish-step, …, finish with usage', async () => {
    server.enqueue(
      {
        reasoning: 'The user wants a check.',
        text: 'Let me check.',
        toolCalls: [{ name: 'echo', input: { text: 'ping' } }],
        usage: { inputTokens: 100, outputTokens: 10 },
      },
      { text: 'All good: ping.', usage: { inputTokens: 150, outputTokens: 7 } },
    );
    const { agent } = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    const stream = agent.stream({ prompt: 'check' });
    const parts: HarnessStreamPart[] = [];
    for await (const part of stream.harnessStream) parts.push(part);
    const result = await stream.result;

    const types = parts.map((p) => p.type).filter((t, i, all) => !t.endsWith('-delta') || all[i - 1] !== t);
    expect(types, "AI SDK order: a step's tool results come before its finish-step").toEqual([
      'start',
      'start-step',
      'reasoning-delta',
      'text-delta',
      'tool-call',
      'tool-result',
      'finish-step',
      'start-step',
      'text-delta',
      'finish-step',
      'finish',
    ]);
    const text = parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text).join('');
    expect(text).toBe('Let me check.All good: ping.');
    expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ toolName: 'echo', input: { text: 'ping' } });
    expect(parts.find((p) => p.type === 'tool-result')).toMatchObject({ toolName: 'echo', output: 'echo: ping' });
    expect(parts.find((p) => p.type === 'finish-step')).toMatchObject({ step: 1, finishReason: 'tool-calls' });
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'stop',
      totalUsage: {
        inputTokens: 250,
        inputTokenDetails: { noCacheTokens: 250, cacheReadTokens: 0, cacheWriteTokens: undefined },
        outputTokens: 17,
        outputTokenDetails: { textTokens: 11, reasoningTokens: 6 },
        totalTokens: 267,
      },
    });
    expect(await stream.text).toBe('All good: ping.');
    expect(result.text).toBe('All good: ping.');
  });

  it('textStream yields the reply as it streams', async () => {
    server.enqueue('Hello there.');
    const { agent } = rig(await openaiModel(server));
    const chunks: string[] = [];
    for await (const chunk of agent.stream({ prompt: 'hi' }).textStream) chunks.push(chunk);
    expect(chunks.join('')).toBe('Hello there.');
  });
});

describe('abortSignal', () => {
  it('cancelling mid model call leaves a consistent journal (turn cancelled, no dangling calls) and the next turn works', async () => {
    let unpause!: () => void;
    const paused = new Promise<void>((resolve) => {
      unpause = resolve;
    });
    server.enqueue(
      { toolCalls: [{ name: 'echo', input: { text: 'first' } }] },
      { text: 'I will never finish this sentence', pauseUntil: paused },
      'Fresh start works.',
    );
    const r = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    const controller = new AbortController();
    const pending = r.agent.generate({ session, prompt: 'do a long thing', abortSignal: controller.signal });
    await until(() => server.requests.length === 2);
    controller.abort();
    const error = await pending.then(
      () => undefined,
      (e: Error) => e,
    );
    unpause();
    expect(error?.name).toBe('AbortError');

    const turns = r.readJournal((j) => j.turns('s'));
    expect(turns.map((t) => t.status)).toEqual(['cancelled']);
    const { called, answered } = r.readJournal((j) => pairing(j.messages('s')));
    expect(called).toHaveLength(1);
    expect(answered, 'every tool call in the journal has its result').toEqual(called);
    expect(await session.hasUnfinishedTurn()).toBe(false);

    const next = await r.agent.generate({ session, prompt: 'try something else' });
    expect(next.text).toBe('Fresh start works.');
    const last = server.requests.at(-1)!;
    const lastPairs = last.view.messages.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
    expect(toolResultsIn(last).map((t) => t.callId).sort(), 'the next request is well-formed').toEqual(lastPairs.sort());
  });

  it('cancelling during the reserve call (budget spent) also leaves the turn cancelled, not running', async () => {
    let unpause!: () => void;
    const paused = new Promise<void>((resolve) => {
      unpause = resolve;
    });
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'only step' } }] }, { text: 'Progress report…', pauseUntil: paused }, 'next turn');
    const r = rig(await openaiModel(server), { harness: { maxSteps: 1 }, agent: { tools: [echoTool()] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    const controller = new AbortController();
    const pending = r.agent.generate({ session, prompt: 'loop', abortSignal: controller.signal });
    await until(() => server.requests.length === 2);
    expect(server.requests[1]!.body.tool_choice).toBe('none');
    controller.abort();
    const error = await pending.then(
      () => undefined,
      (e: Error) => e,
    );
    unpause();
    expect(error?.name).toBe('AbortError');
    expect(r.readJournal((j) => j.turns('s')).map((t) => t.status), 'a cancelled reserve call must mark the turn cancelled').toEqual([
      'cancelled',
    ]);
    expect(await session.hasUnfinishedTurn(), 'no unfinished turn left behind to be re-driven by the next message').toBe(false);
  });

  it('cancelling while a tool runs: the tool sees the signal, the journal stays paired, the turn is cancelled', async () => {
    let started = false;
    const waiter = tool({
      name: 'wait',
      description: 'Waits until cancelled',
      inputSchema: z.object({}),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: (_input, { abortSignal }) =>
        new Promise((_resolve, reject) => {
          started = true;
          abortSignal.addEventListener('abort', () => reject(new Error('stopped by the signal')));
        }),
    });
    server.enqueue({ toolCalls: [{ name: 'wait', input: {} }] }, 'after');
    const r = rig(await openaiModel(server), { agent: { tools: [waiter] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    const controller = new AbortController();
    const pending = r.agent.generate({ session, prompt: 'wait', abortSignal: controller.signal });
    await until(() => started);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(r.readJournal((j) => j.turns('s')).map((t) => t.status)).toEqual(['cancelled']);
    const { called, answered } = r.readJournal((j) => pairing(j.messages('s')));
    expect(called).toHaveLength(1);
    expect(answered).toEqual(called);
    expect((await r.agent.generate({ session, prompt: 'next' })).text).toBe('after');
  });

  it('a signal already aborted before the turn starts cancels it without a model call', async () => {
    server.setFallback('never');
    const { agent } = rig(await openaiModel(server));
    const controller = new AbortController();
    controller.abort();
    await expect(agent.generate({ prompt: 'hi', abortSignal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.requests).toHaveLength(0);
  });
});

describe('activeTools / inactiveTools', () => {
  it('only the active tools are offered to the model; inactive ones are left out', async () => {
    server.enqueue('one', 'two');
    const tools = [echoTool('echo'), echoTool('shout'), echoTool('whisper')];
    const only = rig(await openaiModel(server), { agent: { tools, activeTools: ['echo', 'shout'] } });
    await only.agent.generate({ prompt: 'hi' });
    const without = rig(await openaiModel(server), { agent: { tools, inactiveTools: ['shout'] } });
    await without.agent.generate({ prompt: 'hi' });
    expect(server.requests[0]!.view.tools).toEqual(['echo', 'shout']);
    expect(server.requests[1]!.view.tools).toEqual(['echo', 'whisper']);
  });
});

describe('structured output', () => {
  const output = z.object({ city: z.string(), celsius: z.number() });

  it('a valid JSON answer is validated and returned as output', async () => {
    server.enqueue('{"city": "Paris", "celsius": 21}');
    const { agent } = rig(await openaiModel(server), { agent: { output } });
    const result = await agent.generate({ prompt: 'weather in Paris as JSON' });
    expect(result.output).toEqual({ city: 'Paris', celsius: 21 });
  });

  it('an invalid answer gets one repair request, and the repaired answer is accepted', async () => {
    server.enqueue('It is 21 degrees in Paris.', '{"city": "Paris", "celsius": 21}');
    const { agent } = rig(await openaiModel(server), { agent: { output } });
    const result = await agent.generate({ prompt: 'weather' });
    expect(result.output).toEqual({ city: 'Paris', celsius: 21 });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.view.messages.some((m) => /not valid for the required output schema/.test(m.text))).toBe(true);
  });

  it('invalid twice: an error after exactly one repair', async () => {
    server.enqueue('{"city": "Paris"}', '{"city": "Paris", "celsius": "warm"}');
    server.setFallback('{"city": "Paris", "celsius": 21}');
    const { agent } = rig(await openaiModel(server), { agent: { output } });
    await expect(agent.generate({ prompt: 'weather' })).rejects.toThrow(/does not match the output schema/);
    expect(server.requests).toHaveLength(2);
  });
});

describe('approvals', () => {
  function deployTool(ran: string[]) {
    return tool({
      name: 'deploy',
      description: 'Deploy the service',
      inputSchema: z.object({ env: z.string() }),
      capabilityScopes: ['exec'],
      kind: 'execute',
      effect: 'unsafe',
      execute: ({ env }) => {
        ran.push(env);
        return `deployed to ${env}`;
      },
    });
  }

  it("an 'execute' tool under allow-edits pauses the turn; approving runs it in the same turn", async () => {
    const ran: string[] = [];
    server.enqueue({ toolCalls: [{ name: 'deploy', input: { env: 'prod' } }] }, 'Deployed to prod.');
    const { agent } = rig(await openaiModel(server), { agent: { tools: [deployTool(ran)], permissionMode: 'allow-edits' } });
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: 'deploy to prod' });
    expect(paused.finishReason, "the AI SDK's reason for a step that stopped at tool calls").toBe('tool-calls');
    expect(paused.rawFinishReason).toBe('tool-approval');
    expect(paused.pendingApprovals).toEqual([
      { approvalId: expect.any(String), toolCallId: expect.any(String), toolName: 'deploy', input: { env: 'prod' } },
    ]);
    expect(ran, 'nothing runs before the approval').toEqual([]);
    expect(await session.hasUnfinishedTurn()).toBe(true);

    const done = await agent.continueGenerate({ session, approvals: [{ approvalId: paused.pendingApprovals[0]!.approvalId, approved: true }] });
    expect(ran).toEqual(['prod']);
    expect(done.turnId, 'the same turn continues').toBe(paused.turnId);
    expect(done.text).toBe('Deployed to prod.');
    expect(toolResultsIn(server.requests[1]!).map((t) => t.output)).toEqual(['deployed to prod']);
  });

  it('stream() carries the approval request and finishes with tool-approval', async () => {
    server.enqueue({ toolCalls: [{ name: 'deploy', input: { env: 'prod' } }] });
    const { agent } = rig(await openaiModel(server), { agent: { tools: [deployTool([])] } });
    const stream = agent.stream({ prompt: 'deploy to prod' });
    const parts: HarnessStreamPart[] = [];
    for await (const part of stream.harnessStream) parts.push(part);
    expect(parts.find((p) => p.type === 'tool-approval-request')).toMatchObject({ toolName: 'deploy', input: { env: 'prod' } });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-approval' });
  });

  it('denying tells the model, and the tool never runs', async () => {
    const ran: string[] = [];
    server.enqueue({ toolCalls: [{ name: 'deploy', input: { env: 'prod' } }] }, 'Understood, not deploying.');
    const { agent } = rig(await openaiModel(server), { agent: { tools: [deployTool(ran)] } });
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: 'deploy to prod' });
    const done = await agent.continueGenerate({
      session,
      approvals: [{ approvalId: paused.pendingApprovals[0]!.approvalId, approved: false, reason: 'freeze in effect' }],
    });
    expect(ran).toEqual([]);
    expect(done.text).toBe('Understood, not deploying.');
    const told = toolResultsIn(server.requests[1]!);
    expect(told).toHaveLength(1);
    expect(told[0]!.output, 'the model reads that the call was denied, and why').toMatch(/denied|freeze in effect/i);
  });

  it('a pending approval survives a restart: reopen the harness and continue', async () => {
    const ran: string[] = [];
    const home = tmpHome();
    server.enqueue({ toolCalls: [{ name: 'deploy', input: { env: 'staging' } }] }, 'Staging is live.');
    const first = rig(await openaiModel(server), { home, agent: { tools: [deployTool(ran)] } });
    const paused = await first.agent.generate({ session: await first.agent.createSession({ sessionId: 'ops' }), prompt: 'deploy staging' });
    await first.harness.close?.();

    const second = rig(await openaiModel(server), { home, agent: { tools: [deployTool(ran)] } });
    const session = await second.agent.createSession({ sessionId: 'ops' });
    expect(await session.hasUnfinishedTurn()).toBe(true);
    const done = await second.agent.continueGenerate({ session, approvals: [{ approvalId: paused.pendingApprovals[0]!.approvalId, approved: true }] });
    expect(ran).toEqual(['staging']);
    expect(done.text).toBe('Staging is live.');
  });
});

describe('sessions', () => {
  it('are resumed by id after closing and reopening the harness', async () => {
    const home = tmpHome();
    server.enqueue('Nice to meet you, Ada.', 'Your name is Ada.');
    const model = await openaiModel(server);
    const harness1 = createEngineHarness({ model, home, logger: createMemoryLogger() });
    const agent1 = new HarnessAgent({ harness: harness1, instructions: 'Be kind.' });
    await agent1.generate({ session: await agent1.createSession({ sessionId: 'user-42' }), prompt: 'My name is Ada.' });
    await harness1.close?.();

    const harness2 = createEngineHarness({ model, home, logger: createMemoryLogger() });
    const agent2 = new HarnessAgent({ harness: harness2, instructions: 'Be kind.' });
    const result = await agent2.generate({ session: await agent2.createSession({ sessionId: 'user-42' }), prompt: 'What is my name?' });
    expect(result.text).toBe('Your name is Ada.');
    const texts = server.requests[1]!.view.messages.map((m) => m.text);
    expect(texts[0]).toBe('My name is Ada.');
    expect(texts[1]).toBe('Nice to meet you, Ada.');
    expect(texts[2]).toBe('What is my name?');
    expect(hasToolOutput(server.requests[1]!)).toBe(false);
    await harness2.close?.();
  });

  it('different session ids keep separate conversations', async () => {
    server.setFallback('ok');
    const { agent } = rig(await openaiModel(server));
    await agent.generate({ session: await agent.createSession({ sessionId: 'a' }), prompt: 'in session a' });
    await agent.generate({ session: await agent.createSession({ sessionId: 'b' }), prompt: 'in session b' });
    expect(server.requests[1]!.view.messages.map((m) => m.text).join('\n')).not.toContain('in session a');
  });
});
