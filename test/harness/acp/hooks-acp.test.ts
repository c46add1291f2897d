// Issue 33 §1 on an ACP harness, against the fake ACP agent (a real child process speaking ACP,
// calling acx's host tools over real MCP): hooks on host tools (acx runs them) and on the agent's
// permission requests for its own tools, the three guardrails, and beforeModelCall refused with
// HarnessCapabilityUnsupportedError since the agent calls its model itself.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GuardrailTrippedError, HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import type { ToolCallInfo } from '../../../src/core/hooks.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { HarnessAgent, type HarnessAgentSettings } from '../../../src/harness/harness-agent.ts';
import { openJournalStore } from '../../../src/store/open-journal.ts';
import { tool, type Tool } from '../../../src/tools/tool.ts';
import { createLogger } from '../../../src/util/logger.ts';
import { echo as baseEcho, fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
});

/** The fake profile's echo host tool, recording every input it ran with. */
function echoing() {
  const seen: unknown[] = [];
  const echo: Tool = { ...baseEcho, execute: (input, context) => (seen.push(input), baseEcho.execute!(input, context)) };
  return { echo, seen };
}

function newAgent(settings: Partial<HarnessAgentSettings>, profile: Parameters<typeof fakeProfile>[1] = {}): HarnessAgent {
  const harness = createACP(fakeProfile(cache, profile));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness, ...settings });
}

async function generate(agent: HarnessAgent, prompt: string) {
  const session = await agent.createSession();
  closers.push(() => session.destroy());
  return { session, result: agent.generate({ session, prompt }) };
}

const ECHO = '[[mcp:echo {"text":"hi"}]]';

describe('hooks on ACP host tools', () => {
  it('deny: the host tool does not run and the agent reads the reason as the tool error', async () => {
    const { echo, seen } = echoing();
    const calls: ToolCallInfo[] = [];
    const agent = newAgent({ tools: [echo], hooks: { beforeToolCall: (call) => (calls.push(call), { decision: 'deny', reason: 'echo is off today' }) } });
    const { result } = await generate(agent, ECHO);
    expect((await result).text).toBe('tools=echo result=echo is off today isError=true');
    expect(seen).toEqual([]);
    expect(calls).toEqual([expect.objectContaining({ toolName: 'echo', input: { text: 'hi' }, runBy: 'acx' })]);
  });

  it('rewrite: the host tool runs with the new input, validated against its schema', async () => {
    const { echo, seen } = echoing();
    const agent = newAgent({ tools: [echo], hooks: { beforeToolCall: () => ({ decision: 'rewrite', input: { text: 'rewritten' } }) } });
    expect((await (await generate(agent, ECHO)).result).text).toBe('tools=echo result=echo:rewritten isError=false');
    expect(seen).toEqual([{ text: 'rewritten' }]);
    const invalid = newAgent({ tools: [echoing().echo], hooks: { beforeToolCall: () => ({ decision: 'rewrite', input: { text: 42 } }) } });
    expect((await (await generate(invalid, ECHO)).result).text).toMatch(/result=The host rewrote the arguments for echo into invalid ones: .* isError=true$/);
  });

  it('afterToolCall replaces the result before the agent gets it', async () => {
    const agent = newAgent({ tools: [echoing().echo], hooks: { afterToolCall: (outcome) => ({ output: `${String(outcome.output)} [checked]` }) } });
    expect((await (await generate(agent, ECHO)).result).text).toBe('tools=echo result=echo:hi [checked] isError=false');
  });

  it('a held host call (no execute) is decided once: the continued turn never asks the hook again', async () => {
    let asked = 0;
    const ask = tool({ name: 'ask_user', description: 'asks', inputSchema: z.object({ question: z.string() }), capabilityScopes: [], kind: 'read', effect: 'read-only' });
    const agent = newAgent({
      tools: [ask],
      hooks: { beforeToolCall: () => (asked++, { decision: 'rewrite', input: { question: 'Which colour, exactly?' } }) },
    });
    const { session, result } = await generate(agent, '[[mcp:ask_user {"question":"Which colour?"}]]');
    const paused = await result;
    expect(paused.pendingToolCalls).toEqual([expect.objectContaining({ toolName: 'ask_user', input: { question: 'Which colour, exactly?' } })]);
    const done = await agent.continueGenerate({ session, toolResults: [{ toolCallId: paused.pendingToolCalls[0]!.toolCallId, output: 'blue' }] });
    expect(done.text).toBe('tools=ask_user result=blue isError=false');
    expect(asked).toBe(1);
  });
});

describe("hooks on the ACP agent's permission requests", () => {
  it('allow answers the request for the host (no approval handler asked); deny refuses it; the hook sees the agent’s tool', async () => {
    const calls: ToolCallInfo[] = [];
    const allowing = newAgent({ hooks: { beforeToolCall: (call) => (calls.push(call), { decision: 'allow' }) } });
    // allow-edits does not allow an execute, and there is no onApprovalRequest: without the hook the turn would wait for an approval.
    expect((await (await generate(allowing, '[[permission:execute]]')).result).text).toBe('permission=allow_once');
    expect(calls).toEqual([expect.objectContaining({ toolCallId: 'p1', runBy: 'agent' })]);
    const denying = newAgent({ hooks: { beforeToolCall: () => ({ decision: 'deny', reason: 'no shell' }) }, onApprovalRequest: async () => ({ approved: true }) });
    expect((await (await generate(denying, '[[permission:read]]')).result).text).toBe('permission=reject_once');
    const neutral = newAgent({ hooks: { beforeToolCall: () => undefined } });
    const waiting = await (await generate(neutral, '[[permission:execute]]')).result;
    expect(waiting.pendingApprovals, 'no opinion: the mode decides (no handler: the turn waits for an approval)').toEqual([expect.objectContaining({ toolCallId: 'p1', approvalId: 'p1' })]);
  });

  it("a rewrite of the agent's own tool cannot apply: the request is refused and the turn fails with HarnessCapabilityUnsupportedError", async () => {
    const agent = newAgent({ hooks: { beforeToolCall: () => ({ decision: 'rewrite', input: { what: 'else' } }) } });
    const error = await (await generate(agent, '[[permission:execute]]')).result.catch((e: unknown) => e);
    expect(HarnessCapabilityUnsupportedError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/rewrote the input of .*one of the ACP agent's own tools/);
  });
});

describe('guardrails on ACP', () => {
  it('tool: a tripped guardrail refuses the host call and ends the turn with GuardrailTrippedError', async () => {
    const { echo, seen } = echoing();
    const agent = newAgent({ tools: [echo], guardrails: { tool: [{ name: 'no-hi', check: (call) => ({ tripped: JSON.stringify(call.input).includes('hi'), reason: 'says hi' }) }] } });
    const error = await (await generate(agent, ECHO)).result.catch((e: unknown) => e);
    expect(GuardrailTrippedError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ guardrail: 'no-hi', kind: 'tool', reason: 'says hi' });
    expect(seen).toEqual([]);
  });

  it('input: a tripped guardrail ends the call before the agent is sent the message; the session goes on', async () => {
    const agent = newAgent({ guardrails: { input: [{ name: 'no-secrets', check: ({ text }) => ({ tripped: text.includes('SECRET'), reason: 'a secret' }) }] } });
    const { session, result } = await generate(agent, 'the SECRET is 42 [[hello]]');
    await expect(result).rejects.toMatchObject({ name: 'GuardrailTrippedError', guardrail: 'no-secrets', kind: 'input' });
    const state = JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text) as { prompts: Array<Array<{ text?: string }>> };
    expect(JSON.stringify(state.prompts)).not.toContain('SECRET');
    expect(state.prompts).toHaveLength(1);
  });

  it('output: a tripped guardrail turns the reply into GuardrailTrippedError', async () => {
    const agent = newAgent({ guardrails: { output: [{ name: 'no-greetings', check: ({ text }) => ({ tripped: text.startsWith('Hello'), reason: 'a greeting' }) }] } });
    await expect((await generate(agent, '[[hello]]')).result).rejects.toMatchObject({ guardrail: 'no-greetings', kind: 'output', reason: 'a greeting' });
  });

  it('output, streamed: the reply is held until the guardrails pass; a tripped one never reaches the reader', async () => {
    const agent = newAgent({ guardrails: { output: [{ name: 'no-greetings', check: ({ text }) => ({ tripped: text.startsWith('Hello'), reason: 'a greeting' }) }] } });
    const session = await agent.createSession();
    closers.push(() => session.destroy());
    const streamed = async (prompt: string) => {
      const seen: string[] = [];
      for await (const part of agent.stream({ session, prompt }).harnessStream) seen.push(part.type === 'text-delta' ? `text ${part.text}` : part.type);
      return seen;
    };
    const tripped = await streamed('[[hello]]');
    expect(tripped.filter((entry) => entry.startsWith('text '))).toEqual([]);
    expect(tripped.at(-1)).toBe('error');
    const passed = await streamed('[[state]]');
    expect(passed.some((entry) => entry.startsWith('text {'))).toBe(true);
    expect(passed.at(-1)).toBe('finish');
  });

  it('beforeModelCall cannot run on ACP: set on the agent or the session, createSession refuses before any process starts', async () => {
    const agent = newAgent({ hooks: { beforeModelCall: () => undefined } });
    await expect(agent.createSession()).rejects.toSatisfy((e: unknown) => HarnessCapabilityUnsupportedError.isInstance(e) && /beforeModelCall/.test((e as Error).message));
    const plain = newAgent({});
    await expect(plain.createSession({ hooks: { beforeModelCall: () => undefined } })).rejects.toBeInstanceOf(HarnessCapabilityUnsupportedError);
  });
});

describe('hooks on a journaled ACP turn', () => {
  /** A journaled session whose paused turn is let go at once (released: it waits in the journal), `letGo` resolving when it is. */
  function journaled(home: string) {
    let released!: () => void;
    const letGo = new Promise<void>((resolve) => (released = resolve));
    const logger = createLogger({ level: 'info', sink: { write: (line) => void (line.includes('acp paused turn released') && released()) } });
    const profile = { sandbox: createLocalSandbox({ sessionsRoot: join(home, 'sessions') }), journal: join(home, 'journal.db'), env: { FAKE_RESUME: '1' }, pausedTurnHoldMs: 0, logger };
    return { profile, letGo };
  }

  it('a turn taken up from the journal reads each call\'s decision there: the hooks are not asked again, the rewrite still applies, nothing runs twice', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-hooks-'));
    const { profile, letGo } = journaled(home);
    const ran: unknown[] = [];
    const keyed = z.object({ key: z.string() });
    const note = tool({ name: 'note', description: 'notes', inputSchema: keyed, capabilityScopes: [], kind: 'read', effect: 'unsafe', execute: ({ key }) => (ran.push(key), `noted ${key}`) });
    const ask = tool({ name: 'ask', description: 'asks the user', inputSchema: keyed, capabilityScopes: [], kind: 'read', effect: 'read-only' });
    const asked: string[] = [];
    const agent = newAgent(
      {
        tools: [note, ask],
        permissionMode: 'allow-all',
        hooks: { beforeToolCall: (call) => (asked.push(`${call.toolName} ${JSON.stringify(call.input)}`), call.toolName === 'note' ? { decision: 'rewrite', input: { key: 'A' } } : undefined) },
      },
      profile,
    );
    const session = await agent.createSession({ sessionId: 'hooks-taken-up' });
    closers.push(() => session.destroy());
    const paused = await agent.generate({ session, prompt: '[[work:note a,ask q]]' });
    expect(paused.pendingToolCalls).toEqual([expect.objectContaining({ toolName: 'ask', input: { key: 'q' } })]);
    await letGo;
    // Answered after the turn was let go: the agent's session is reopened and it makes both calls again.
    const done = await agent.continueGenerate({ session, toolResults: [{ toolCallId: paused.pendingToolCalls[0]!.toolCallId, output: 'blue' }] });
    expect(done.text).toBe('all done\nnote a: noted A\nask q: blue');
    expect(asked).toEqual(['note {"key":"a"}', 'ask {"key":"q"}']);
    expect(ran).toEqual(['A']);
  });

  it('an output guardrail that trips: the turn is journaled as failed, with no reply recorded', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-hooks-'));
    const { profile } = journaled(home);
    const agent = newAgent({ guardrails: { output: [{ name: 'no-greetings', check: ({ text }) => ({ tripped: text.startsWith('Hello'), reason: 'a greeting' }) }] } }, profile);
    const session = await agent.createSession({ sessionId: 'hooks-output' });
    closers.push(() => session.destroy());
    await expect(agent.generate({ session, prompt: '[[hello]]' })).rejects.toMatchObject({ guardrail: 'no-greetings', kind: 'output' });
    const store = openJournalStore({ journalPath: profile.journal });
    try {
      expect((await store.turns('hooks-output')).map((t) => ({ status: t.status, finalText: t.finalText }))).toEqual([{ status: 'failed', finalText: null }]);
      expect((await store.messages('hooks-output')).map((m) => m.kind)).toEqual(['user']);
    } finally {
      await store.close();
    }
  });
});
