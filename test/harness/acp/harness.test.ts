import { readdirSync } from 'node:fs';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { tool } from '../../../src/tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { collect, echo, fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

function agentFor(overrides: Partial<ACPSettings> = {}, agentSettings: Partial<ConstructorParameters<typeof HarnessAgent>[0]> = {}) {
  const harness = createACP(fakeProfile(cache, overrides));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness, ...agentSettings });
}

describe('ACP harness against a fake ACP agent', () => {
  it('streams a text turn (reasoning, text, usage) despite stdout noise, and runs a second turn', async () => {
    const agent = agentFor({}, { instructions: 'Be terse.' });
    const session = await agent.createSession();
    const stream = agent.stream({ session, prompt: '[[hello]]' });
    const parts = await collect(stream.harnessStream);
    const result = await stream.result;
    expect(result.text).toBe('Hello from the fake agent.');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.totalTokens).toBe(18);
    expect(parts.map((p) => p.type)).toEqual(['start', 'start-step', 'reasoning-delta', 'text-delta', 'text-delta', 'finish-step', 'finish']);

    const second = await agent.generate({ session, prompt: '[[state]]' });
    const state = JSON.parse(second.text);
    // Instructions without a mapping are prepended to the first prompt only.
    expect(state.prompts[0][0].text).toContain('Be terse.');
    expect(state.prompts[1]).toHaveLength(1);
    expect(readdirSync(state.cwd)).toEqual([]);
    await session.destroy();
  });

  it('translates tool calls, failures, plans and session updates', async () => {
    const agent = agentFor({ builtinTools: { read_file: { nativeName: 'Read' } } });
    const session = await agent.createSession();
    const stream = agent.stream({ session, prompt: '[[tools]]' });
    const parts = await collect(stream.harnessStream);
    const result = await stream.result;
    expect(result.finishReason).toBe('length');
    const call = parts.find((p) => p.type === 'tool-call' && p.toolCallId === 't1') as Record<string, unknown>;
    expect(call).toMatchObject({ toolName: 'read_file', kind: 'read', input: { path: 'notes.md' }, locations: [{ path: '/w/notes.md', line: 3 }], providerExecuted: true });
    expect(parts.find((p) => p.type === 'tool-result')).toMatchObject({ toolCallId: 't1', output: { content: 'file body' } });
    expect(parts.find((p) => p.type === 'tool-error')).toMatchObject({ toolCallId: 't2', toolName: 'Run false', error: 'exit 1' });
    expect(parts.find((p) => p.type === 'plan')).toMatchObject({ entries: [{ content: 'Read the file', status: 'in_progress', priority: 'high' }] });
    const data = parts.filter((p) => p.type === 'data').map((p) => (p as { name: string }).name);
    expect(data).toEqual(expect.arrayContaining(['acp-mode', 'acp-usage', 'acp-session-info']));
    expect(result.stepCount).toBe(3); // each finished tool opens a new inferred step before the next content
    expect(result.toolResults.map((r) => r.toolCallId)).toEqual(['t1', 't2']);
    await session.destroy();
  });

  it('answers permission requests by kind: allowed kinds automatically, others through acx approvals', async () => {
    const asked: string[] = [];
    const agent = agentFor({}, {
      permissionMode: 'allow-reads',
      onApprovalRequest: async (req) => {
        asked.push(req.toolCallId);
        return { approved: (req.input as { what: string }).what === 'execute' };
      },
    });
    const session = await agent.createSession();
    expect((await agent.generate({ session, prompt: '[[permission:read]]' })).text).toBe('permission=allow_once');
    expect(asked).toEqual([]);
    expect((await agent.generate({ session, prompt: '[[permission:execute]]' })).text).toBe('permission=allow_once');
    expect(asked).toEqual(['p1']);
    const denied = agent.stream({ session, prompt: '[[permission:edit]]' });
    const parts = await collect(denied.harnessStream);
    expect((await denied.result).text).toBe('permission=reject_once');
    expect(parts.some((p) => p.type === 'tool-approval-request')).toBe(true);
    expect(parts.some((p) => p.type === 'tool-output-denied')).toBe(true);
    await session.destroy();
  });

  it('without an approval handler, pauses the turn for the approval (the request held open) and answers it with continueGenerate', async () => {
    const agent = agentFor({}, { permissionMode: 'allow-edits' });
    const session = await agent.createSession();
    const paused = await agent.generate({ session, prompt: '[[permission:execute]]' });
    expect(paused.rawFinishReason).toBe('tool-approval');
    expect(paused.suspendedBy).toBe('approval');
    expect(paused.pendingApprovals).toEqual([{ approvalId: 'p1', toolCallId: 'p1', toolName: 'A execute action', input: { what: 'execute' } }]);
    expect(await session.hasUnfinishedTurn()).toBe(true);
    const done = await agent.continueGenerate({ session, approvals: [{ approvalId: 'p1', approved: true }] });
    expect(done.turnId).toBe(paused.turnId);
    expect(done.text).toBe('permission=allow_once');
    expect(await session.hasUnfinishedTurn()).toBe(false);
    await session.destroy();
  });

  it('applies model, permission-mode and instruction mappings', async () => {
    const agent = agentFor(
      {
        model: 'fake-large',
        instructionMapping: { type: 'session-meta', path: ['systemPrompt', 'append'] },
        permissionModeMapping: {
          'allow-reads': { type: 'session-mode', modeId: 'default' },
          'allow-edits': { type: 'session-mode', modeId: 'acceptEdits' },
          'allow-all': null,
        },
        session: { meta: { custom: 1 } },
      },
      { instructions: 'Follow the house style.', permissionMode: 'allow-edits' },
    );
    const session = await agent.createSession();
    const state = JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text);
    expect(state.model).toBe('fake-large');
    expect(state.mode).toBe('acceptEdits');
    expect(state.meta).toEqual({ custom: 1, systemPrompt: { append: 'Follow the house style.' } });
    expect(JSON.stringify(state.prompts)).not.toContain('house style');
    await session.destroy();

    const all = agentFor({ permissionModeMapping: { 'allow-reads': null, 'allow-edits': null, 'allow-all': { type: 'session-mode', modeId: 'bypassPermissions' } } }, { permissionMode: 'allow-edits' });
    await expect(all.createSession()).rejects.toBeInstanceOf(HarnessCapabilityUnsupportedError);
    const unknownMode = agentFor({ permissionModeMapping: { 'allow-reads': null, 'allow-edits': { type: 'session-mode', modeId: 'nope' }, 'allow-all': null } });
    await expect(unknownMode.createSession()).rejects.toThrow(/does not advertise the session mode 'nope'/);
    const badModel = agentFor({ model: 'gpt-imaginary' });
    await expect(badModel.createSession()).rejects.toThrow(/fake-small, fake-large/);
  });

  it('asks for the model through session/set_model, with the mapping prefix put on once', async () => {
    const modelOf = async (model: string) => {
      const agent = agentFor({ model, modelMapping: { type: 'session-model', path: 'modelId', prefix: 'house/' } });
      const session = await agent.createSession();
      try {
        return JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text).model as string;
      } finally {
        await session.destroy();
      }
    };
    expect(await modelOf('big-model')).toBe('house/big-model');
    expect(await modelOf('house/big-model')).toBe('house/big-model');
  });

  it('cancels a running turn, drops its late updates, and runs the next turn cleanly', async () => {
    const agent = agentFor();
    const session = await agent.createSession();
    const controller = new AbortController();
    const stream = agent.stream({ session, prompt: '[[hang]]', abortSignal: controller.signal });
    const parts: HarnessStreamPart[] = [];
    for await (const p of stream.harnessStream) {
      parts.push(p);
      if (p.type === 'text-delta') controller.abort();
    }
    await expect(stream.result).rejects.toMatchObject({ code: 'aborted' });
    expect(parts.some((p) => p.type === 'abort')).toBe(true);
    expect(parts.some((p) => p.type === 'text-delta' && p.text.includes('late chunk'))).toBe(false);
    const next = await agent.generate({ session, prompt: '[[hello]]' });
    expect(next.text).toBe('Hello from the fake agent.');
    await session.destroy();
  });

  it('answers a pending permission request with cancelled when the turn is cancelled', async () => {
    const controller = new AbortController();
    const agent = agentFor({}, {
      permissionMode: 'allow-reads',
      onApprovalRequest: () => {
        controller.abort();
        return new Promise(() => {}); // the user never answers
      },
    });
    const session = await agent.createSession();
    await expect(agent.generate({ session, prompt: '[[permission:execute]]', abortSignal: controller.signal })).rejects.toMatchObject({ code: 'aborted' });
    expect((await agent.generate({ session, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
    await session.destroy();
  });

  it('stops an agent that ignores session/cancel instead of hanging', async () => {
    const agent = agentFor({ cancelGraceMs: 200 });
    const session = await agent.createSession();
    const controller = new AbortController();
    const stream = agent.stream({ session, prompt: '[[ignore-cancel]]', abortSignal: controller.signal });
    // Cancelled once the agent has the prompt (it says it is not listening), however long that took.
    for await (const part of stream.harnessStream) if (part.type === 'text-delta') controller.abort();
    await expect(stream.result).rejects.toMatchObject({ code: 'aborted' });
    await expect(agent.generate({ session, prompt: '[[hello]]' })).rejects.toMatchObject({ code: 'acp-agent-exited' });
    await session.destroy();
  });

  it('turns a crashed agent into a clear error', async () => {
    const agent = agentFor();
    const session = await agent.createSession();
    const error = await agent.generate({ session, prompt: '[[crash]]' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcxError);
    expect((error as AcxError).code).toBe('acp-agent-exited');
    expect((error as AcxError).message).toContain('exited with code 3');
    expect((error as AcxError).message).toContain('simulated fatal error');
    await session.destroy();
  });

  for (const transport of ['stdio', 'http'] as const) {
    it(`serves host tools to the agent over MCP (${transport})`, async () => {
      const agent = agentFor({ hostToolMcpTransport: transport }, { tools: [echo] });
      const session = await agent.createSession();
      const stream = agent.stream({ session, prompt: '[[mcp:echo {"text":"hi"}]]' });
      const parts = await collect(stream.harnessStream);
      const result = await stream.result;
      expect(result.text).toBe('tools=echo result=echo:hi isError=false');
      expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ toolName: 'echo', providerExecuted: false });
      const state = JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text);
      const server = state.mcpServers[0];
      expect(server.name).toBe('acx');
      if (transport === 'http') expect(server.headers[0].value).toMatch(/^Bearer .{16,}/);
      else expect(server.env.map((e: { name: string }) => e.name)).toEqual(['ACX_MCP_URL', 'ACX_MCP_TOKEN']);
      await session.destroy();
    });
  }

  it('asks acx approval before a host tool whose kind the permission mode does not allow', async () => {
    const run = tool({ ...echo, name: 'run', kind: 'execute', effect: 'unsafe' });
    const asked: string[] = [];
    const agent = agentFor({}, { tools: [run], permissionMode: 'allow-reads', onApprovalRequest: async (r) => (asked.push(r.toolName), { approved: false }) });
    const session = await agent.createSession();
    const result = await agent.generate({ session, prompt: '[[mcp:run {"text":"x"}]]' });
    expect(asked).toEqual(['run']);
    expect(result.text).toContain('isError=true');
    await session.destroy();
  });

  it('activeTools filters the host tools the agent is given; naming a built-in of the agent is refused', async () => {
    const other = tool({ ...echo, name: 'other' });
    const agent = agentFor({ builtinTools: { read_file: { nativeName: 'Read' } } }, { tools: [echo, other], activeTools: ['echo'] });
    const session = await agent.createSession();
    expect((await agent.generate({ session, prompt: '[[mcp:echo {"text":"x"}]]' })).text).toContain('tools=echo result=echo:x');
    await session.destroy();
    expect(() => agentFor({ builtinTools: { read_file: { nativeName: 'Read' } } }, { tools: [echo], inactiveTools: ['read_file'] })).toThrow(
      HarnessCapabilityUnsupportedError,
    );
    expect(() => agentFor({}, { tools: [echo], activeTools: ['nope'] })).toThrow(/activeTools\/inactiveTools name "nope", which is not one of the agent's tools/);
  });

  it('refuses what it cannot do, before starting anything', async () => {
    await expect(agentFor({}, { output: { type: 'object', properties: {} } }).createSession()).rejects.toBeInstanceOf(HarnessCapabilityUnsupportedError);
    await expect(agentFor({ sandbox: createLocalSandbox({ ports: [] }) }, { tools: [echo] }).createSession()).rejects.toThrow(/exposed port/);
    await expect(agentFor({ hostToolMcpTransport: 'http', env: { FAKE_NO_HTTP_MCP: '1' } }, { tools: [echo] }).createSession()).rejects.toThrow(/mcpCapabilities.http/);
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    const error = await agentFor({ sandbox: createLocalSandbox({ ports: [port] }) }, { tools: [echo] }).createSession().catch((e: unknown) => e);
    busy.close();
    expect(error).toMatchObject({ code: 'acp-port-unavailable' });
    // A bridge token too short to guard the host tools is a configuration error, named as one.
    await expect(agentFor({ mintBridgeToken: () => 'short' }, { tools: [echo] }).createSession()).rejects.toMatchObject({
      code: 'config',
      message: expect.stringMatching(/mintBridgeToken must return a string of at least 16 characters; it returned 5 characters/),
    });
  });
});
