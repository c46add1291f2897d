// Issue 33 §1 on the native engine: hooks (beforeToolCall, afterToolCall, beforeModelCall,
// afterTurn) and guardrails (input, output, tool) on HarnessAgent and createSession, driven by the
// scripted model and checked from what the model was sent, what the tools did and what the
// journal (a real SQLite file) keeps.
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AcxError, GuardrailTrippedError } from '../../src/core/errors.ts';
import type { HarnessStreamPart } from '../../src/engine/events.ts';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent, type HarnessAgentSettings } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { Journal } from '../../src/store/journal.ts';
import { tool } from '../../src/tools/tool.ts';
import { echoTool, pairing, tmpHome } from '../engine/helpers.ts';
import { deployTool } from '../support/deploy-tool.ts';
import { lastUserText, type ScriptedReply, scriptedModel, toolResultCount } from '../support/scripted-model.ts';

/** An agent on the engine over the scripted model, with a real journal under a temp home. */
function setup(script: ScriptedReply[] | ((options: LanguageModelV4CallOptions, call: number) => ScriptedReply), settings: Partial<HarnessAgentSettings> = {}) {
  const home = tmpHome();
  const model = scriptedModel(script);
  const harness = createEngineHarness({ model: fromLanguageModel(model), home, retryBaseMs: 1 });
  const agent = new HarnessAgent({ harness, ...settings });
  const journal = <T>(fn: (j: Journal) => T): T => {
    const j = new Journal(join(home, 'journal.db'));
    try {
      return fn(j);
    } finally {
      j.close();
    }
  };
  return { model, agent, journal };
}

/** The tool results a model call was sent, as `callId: output` with the output's text. */
function resultsSent(options: LanguageModelV4CallOptions): Record<string, string> {
  const out: Record<string, string> = {};
  for (const message of options.prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const output = part.output as { type: string; value?: unknown; reason?: string };
      out[part.toolCallId] = output.type === 'execution-denied' ? `denied: ${output.reason}` : String(output.value);
    }
  }
  return out;
}

const toolNamesOffered = (options: LanguageModelV4CallOptions) => (options.tools ?? []).map((t) => t.name).sort();

/** A tool that records the input it ran with. */
function recorder(name: string, kind: 'read' | 'execute' = 'read') {
  const seen: unknown[] = [];
  return Object.assign(
    tool({
      name,
      description: name,
      inputSchema: z.object({ text: z.string() }),
      capabilityScopes: [],
      kind,
      effect: kind === 'read' ? 'read-only' : 'unsafe',
      execute: (input) => {
        seen.push(input);
        return `${name} ran with ${input.text}`;
      },
    }),
    { seen },
  );
}

describe('beforeToolCall on the engine', () => {
  it('deny: the tool does not run, the model reads the reason, and the decision is journaled', async () => {
    const send = recorder('send');
    const { agent, model, journal } = setup([{ toolCalls: [{ id: 'c1', name: 'send', input: { text: 'secret' } }] }, { text: 'understood' }], {
      tools: [send],
      hooks: { beforeToolCall: (call) => (call.toolName === 'send' ? { decision: 'deny', reason: 'sending is off today' } : undefined) },
    });
    const parts: HarnessStreamPart[] = [];
    const stream = agent.stream({ prompt: 'send it' });
    for await (const part of stream.harnessStream) parts.push(part);
    expect((await stream.result).text).toBe('understood');
    expect(send.seen).toEqual([]);
    expect(resultsSent(model.calls[1]!)).toEqual({ c1: 'denied: sending is off today' });
    expect(parts.find((p) => p.type === 'tool-output-denied')).toMatchObject({ toolCallId: 'c1', reason: 'sending is off today' });
    const turn = journal((j) => j.turns(j.listSessions()[0]!.id)[0]!);
    expect(journal((j) => j.calls(turn.id)[0]!.decision)).toEqual({ decision: 'deny', reason: 'sending is off today' });
  });

  it('rewrite: the tool runs with the new input; the transcript keeps the call as the model made it', async () => {
    const send = recorder('send');
    const { agent, model, journal } = setup([{ toolCalls: [{ id: 'c1', name: 'send', input: { text: 'to everyone' } }] }, { text: 'sent' }], {
      tools: [send],
      hooks: { beforeToolCall: (call) => ({ decision: 'rewrite', input: { text: `${(call.input as { text: string }).text} (reviewed)` } }) },
    });
    const result = await agent.generate({ prompt: 'send it' });
    expect(send.seen).toEqual([{ text: 'to everyone (reviewed)' }]);
    expect(result.toolResults).toEqual([expect.objectContaining({ toolCallId: 'c1', input: { text: 'to everyone (reviewed)' } })]);
    expect(resultsSent(model.calls[1]!)).toEqual({ c1: 'send ran with to everyone (reviewed)' });
    const session = journal((j) => j.listSessions()[0]!.id);
    const call = journal((j) => j.messages(session).find((m) => m.kind === 'assistant')!.message.content as Array<{ input: unknown }>)[0]!;
    expect(call.input, "the model's own call").toEqual({ text: 'to everyone' });
  });

  it('allow answers for the host (no approval is asked); nothing leaves the permission mode to ask, and a rewrite is asked about as rewritten', async () => {
    const marker = join(tmpHome(), 'deploys');
    const asked: unknown[] = [];
    const script = [{ toolCalls: [{ id: 'c1', name: 'deploy', input: { service: 'api' } }] }, { text: 'done' }];
    // allow: the deploy (kind execute) runs under allow-edits without onApprovalRequest being asked.
    const allowed = setup(script, {
      tools: [deployTool(marker)],
      onApprovalRequest: async (request) => (asked.push(request.input), { approved: false }),
      hooks: { beforeToolCall: () => ({ decision: 'allow' }) },
    });
    expect((await allowed.agent.generate({ prompt: 'deploy' })).text).toBe('done');
    expect(asked).toEqual([]);
    // rewrite: the approval is asked about the input that would run (and its denial holds).
    const rewritten = setup(script, {
      tools: [deployTool(marker)],
      onApprovalRequest: async (request) => (asked.push(request.input), { approved: false, reason: 'not now' }),
      hooks: { beforeToolCall: () => ({ decision: 'rewrite', input: { service: 'api-canary' } }) },
    });
    await rewritten.agent.generate({ prompt: 'deploy' });
    expect(asked).toEqual([{ service: 'api-canary' }]);
    expect(resultsSent(rewritten.model.calls[1]!)).toEqual({ c1: 'denied: not now' });
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(marker, 'utf8').trim().split(' ')[1]).toBe('api');
  });

  it('a turn paused for approval and continued never asks the hook again about the decided call', async () => {
    const marker = join(tmpHome(), 'deploys');
    let asked = 0;
    const { agent } = setup([{ toolCalls: [{ id: 'c1', name: 'deploy', input: { service: 'api' } }] }, { text: 'deployed' }], {
      tools: [deployTool(marker)],
      hooks: {
        beforeToolCall: () => {
          asked += 1;
          return { decision: 'rewrite', input: { service: 'api-blue' } };
        },
      },
    });
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: 'deploy' });
    expect(paused.pendingApprovals).toEqual([expect.objectContaining({ toolCallId: 'c1', input: { service: 'api-blue' } })]);
    const state = await session.detach();
    const again = await agent.createSession({ continueFrom: state });
    const done = await agent.continueGenerate({ session: again, approvals: [{ approvalId: 'c1', approved: true }] });
    expect(done.text).toBe('deployed');
    expect(asked).toBe(1);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(marker, 'utf8').trim().split(' ')[1]).toBe('api-blue');
  });
});

describe('afterToolCall, beforeModelCall and afterTurn on the engine', () => {
  it('afterToolCall redacts a result before it is journaled and before the model reads it', async () => {
    const lookup = tool({
      name: 'lookup',
      description: 'lookup',
      inputSchema: z.object({}),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: () => 'the password is hunter2',
    });
    const { agent, model, journal } = setup([{ toolCalls: [{ id: 'c1', name: 'lookup', input: {} }] }, { text: 'ok' }], {
      tools: [lookup],
      hooks: { afterToolCall: (outcome) => ({ output: String(outcome.output).replace('hunter2', '[redacted]') }) },
    });
    const result = await agent.generate({ prompt: 'look' });
    expect(resultsSent(model.calls[1]!)).toEqual({ c1: 'the password is [redacted]' });
    expect(result.toolResults[0]!.output).toBe('the password is [redacted]');
    const session = journal((j) => j.listSessions()[0]!.id);
    expect(JSON.stringify(journal((j) => j.messages(session)))).not.toContain('hunter2');
  });

  it('beforeModelCall sees the transcript and narrows the tools one call offers', async () => {
    const seen: Array<{ step: number; tools: readonly string[]; last: unknown }> = [];
    const { agent, model } = setup([{ toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'a' } }] }, { text: 'fine' }], {
      tools: [echoTool(), recorder('send', 'execute')],
      hooks: {
        beforeModelCall: (request) => {
          seen.push({ step: request.step, tools: request.tools, last: request.messages.at(-1)?.role });
          return request.step === 1 ? { activeTools: ['echo'] } : undefined;
        },
      },
    });
    await agent.generate({ prompt: 'go' });
    expect(seen).toEqual([
      { step: 1, tools: ['echo', 'send'], last: 'user' },
      { step: 2, tools: ['echo', 'send'], last: 'tool' },
    ]);
    expect(toolNamesOffered(model.calls[0]!)).toEqual(['echo']);
    expect(toolNamesOffered(model.calls[1]!)).toEqual(['echo', 'send']);
  });

  it("afterTurn observes each call's result and failure, the agent's then the session's", async () => {
    const events: string[] = [];
    const { agent } = setup((options) => (lastUserText(options) === 'boom' ? { error: new Error('provider down') } : { text: `re: ${lastUserText(options)}` }), {
      hooks: { afterTurn: (event) => void events.push(`agent ${event.result ? event.result.text : `error ${(event.error as Error).message}`}`) },
    });
    const session = await agent.createSession({ hooks: { afterTurn: (event) => void events.push(`session ${event.result?.text ?? 'error'}`) } });
    await agent.generate({ session, prompt: 'hi' });
    await expect(agent.generate({ session, prompt: 'boom' })).rejects.toThrow();
    expect(events[0]).toBe('agent re: hi');
    expect(events[1]).toBe('session re: hi');
    expect(events[2]).toMatch(/^agent error /);
    expect(events[3]).toBe('session error');
  });
});

describe('guardrails on the engine', () => {
  it('input: a tripped guardrail ends the call before the model is called, and nothing of the message is journaled', async () => {
    const { agent, model, journal } = setup([{ text: 'never' }], {
      guardrails: { input: [{ name: 'no-card-numbers', check: ({ text }) => ({ tripped: /\d{16}/.test(text), reason: 'a card number' }) }] },
    });
    const session = await agent.createSession({ sessionId: 's' });
    const error = await agent.generate({ session, prompt: 'my card is 4111111111111111' }).catch((e: unknown) => e);
    expect(GuardrailTrippedError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'guardrail-tripped', guardrail: 'no-card-numbers', kind: 'input', reason: 'a card number' });
    expect(model.calls).toHaveLength(0);
    expect(journal((j) => [j.turns('s'), j.messages('s')])).toEqual([[], []]);
  });

  it('tool: a tripped guardrail ends the turn before any call of the step runs; the session answers the next message', async () => {
    const send = recorder('send');
    const echo = echoTool();
    const { agent, model, journal } = setup(
      (options, call) =>
        call === 0
          ? {
              toolCalls: [
                { id: 'c1', name: 'echo', input: { text: 'harmless' } },
                { id: 'c2', name: 'send', input: { text: 'rm -rf /' } },
              ],
            }
          : { text: `next: ${toolResultCount(options)} results` },
      {
        tools: [echo, send],
        guardrails: { tool: [{ name: 'no-rm', check: (call) => ({ tripped: JSON.stringify(call.input).includes('rm -rf'), reason: 'a destructive command' }) }] },
      },
    );
    const session = await agent.createSession({ sessionId: 's' });
    const error = await agent.generate({ session, prompt: 'clean up' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'GuardrailTrippedError', guardrail: 'no-rm', kind: 'tool', reason: 'a destructive command' });
    expect(send.seen).toEqual([]);
    expect(echo.seen, 'the sibling call did not run either').toEqual([]);
    expect(journal((j) => j.turns('s').map((t) => [t.status, t.error]))).toEqual([['failed', '[turn failed: The tool guardrail "no-rm" tripped: a destructive command]']]);
    expect(journal((j) => pairing(j.messages('s')))).toEqual({ called: ['c1', 'c2'], answered: ['c1', 'c2'] });
    const next = await agent.generate({ session, prompt: 'something else' });
    expect(next.text).toBe('next: 2 results');
    expect(resultsSent(model.calls[1]!).c2).toContain('Not run: the turn failed (The tool guardrail "no-rm" tripped');
  });

  it('output: a tripped guardrail withholds the reply — not returned, replaced in the journal — and the next model reads the note', async () => {
    const { agent, model, journal } = setup((options) => ({ text: lastUserText(options) === 'leak' ? 'the key is sk-123' : 'fine' }), {
      guardrails: { output: [{ name: 'no-keys', check: ({ text }) => ({ tripped: text.includes('sk-'), reason: 'an API key' }) }] },
    });
    const session = await agent.createSession({ sessionId: 's' });
    await expect(agent.generate({ session, prompt: 'leak' })).rejects.toMatchObject({ guardrail: 'no-keys', kind: 'output' });
    expect(journal((j) => j.turns('s')[0]!.status)).toBe('failed');
    expect(JSON.stringify(journal((j) => j.messages('s')))).not.toContain('sk-123');
    expect((await agent.generate({ session, prompt: 'again' })).text).toBe('fine');
    const assistantSent = model.calls[1]!.prompt.filter((m) => m.role === 'assistant').map((m) => JSON.stringify(m.content));
    expect(assistantSent).toEqual([expect.stringContaining('[withheld: the output guardrail \\"no-keys\\" tripped: an API key]')]);
  });

  it('output, streamed: the reply is held until the guardrails pass — a tripped one never reaches the reader or a step callback', async () => {
    const echo = echoTool();
    const { agent } = setup(
      (options, call) =>
        call === 0
          ? { text: 'looking it up', toolCalls: [{ id: 'c1', name: 'echo', input: { text: 'key' } }] }
          : { text: lastUserText(options) === 'again' ? 'fine' : 'the key is sk-123' },
      { tools: [echo], guardrails: { output: [{ name: 'no-keys', check: ({ text }) => ({ tripped: text.includes('sk-'), reason: 'an API key' }) }] } },
    );
    const session = await agent.createSession({ sessionId: 's' });
    const parts: HarnessStreamPart[] = [];
    for await (const part of agent.stream({ session, prompt: 'leak' }).harnessStream) parts.push(part);
    const seen = parts.map((part) => (part.type === 'text-delta' ? `text ${part.text}` : part.type));
    // The narration before the tool call is not the reply: it is released when the call comes.
    expect(seen.filter((entry) => entry.startsWith('text '))).toEqual(['text looking it up']);
    expect(seen.slice(-1)).toEqual(['error']);
    expect(GuardrailTrippedError.isInstance((parts.at(-1) as { error: unknown }).error)).toBe(true);
    expect(seen.filter((entry) => entry === 'finish-step'), 'the held step is still reported, without its text').toHaveLength(2);
    const stepTexts: string[] = [];
    await expect(agent.generate({ session, prompt: 'leak', onStepFinish: (step) => void stepTexts.push(step.text) })).rejects.toMatchObject({ guardrail: 'no-keys' });
    expect(stepTexts, 'answered at once this time: its one step is reported without the text').toEqual(['']);
    const passed: string[] = [];
    for await (const part of agent.stream({ session, prompt: 'again' }).harnessStream) passed.push(part.type === 'text-delta' ? `text ${part.text}` : part.type);
    expect(passed.filter((entry) => entry.startsWith('text ') || entry === 'finish')).toEqual(['text fine', 'finish']);
  });

  it("a session's guardrails add to the agent's (both run); two of one kind with the same name are refused", async () => {
    const ran: string[] = [];
    const { agent } = setup([{ text: 'ok' }], {
      guardrails: { input: [{ name: 'agent-check', check: () => void ran.push('agent') }] },
    });
    const session = await agent.createSession({ guardrails: { input: [{ name: 'session-check', check: () => (ran.push('session'), { tripped: true, reason: 'no' }) }] } });
    await expect(agent.generate({ session, prompt: 'x' })).rejects.toMatchObject({ guardrail: 'session-check' });
    expect(ran.sort()).toEqual(['agent', 'session']);
    await expect(agent.createSession({ guardrails: { input: [{ name: 'agent-check', check: () => undefined }] } })).rejects.toSatisfy(
      (e: unknown) => AcxError.hasCode(e, 'config') && /Two input guardrails are named "agent-check"/.test((e as Error).message),
    );
  });

  it('a hook that throws fails the turn with hook-failed, and the call it was asked about does not run', async () => {
    const send = recorder('send');
    const { agent, journal } = setup([{ toolCalls: [{ id: 'c1', name: 'send', input: { text: 'x' } }] }], {
      tools: [send],
      hooks: {
        beforeToolCall: () => {
          throw new Error('policy service unreachable');
        },
      },
    });
    const session = await agent.createSession({ sessionId: 's' });
    await expect(agent.generate({ session, prompt: 'go' })).rejects.toMatchObject({ code: 'hook-failed', message: 'beforeToolCall failed: policy service unreachable' });
    expect(send.seen).toEqual([]);
    expect(journal((j) => j.turns('s')[0]!.status)).toBe('failed');
  });
});
