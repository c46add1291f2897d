// `acx acp` end to end: a real child process serving examples/notes-keeper over stdio, driven by
// the ACP SDK's client, with the model answered by the local model server over real HTTP.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AcxAcp, optionOfKind, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

// One agent process serves every test here (as one editor would): sessions keep them apart.
let model: ModelServer;
let home: string;
let acx: AcxAcp;
let init: acp.InitializeResponse;

beforeAll(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-server-'));
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
  init = await acx.initialize();
});

afterAll(async () => {
  expect(await acx.close()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

beforeEach(() => {
  acx.permissions.length = 0;
  acx.onPermission = async (params) => optionOfKind(params, 'reject_once');
  expect(model.queued()).toBe(0);
});

function newSession(mcpServers: acp.McpServer[] = []): Promise<acp.NewSessionResponse> {
  return acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers });
}

function prompt(sessionId: string, text: string): Promise<acp.PromptResponse> {
  return acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
}

const toolCalls = (updates: acp.SessionUpdate[]) =>
  updates.filter((u): u is Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call' }> => u.sessionUpdate === 'tool_call');
const toolUpdates = (updates: acp.SessionUpdate[], id: string) =>
  updates.filter(
    (u): u is Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call_update' }> => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id,
  );

describe('acx acp: initialize and session/new', () => {
  it('answers initialize with honest capabilities and opens a session with the three permission modes', async () => {
    expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION);
    expect(init.authMethods).toEqual([]);
    expect(init.agentInfo?.name).toBe('acx');
    expect(init.agentInfo?.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(init.agentCapabilities?.loadSession).toBe(true);
    expect(init.agentCapabilities?.promptCapabilities).toMatchObject({ audio: false, embeddedContext: true });
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true });

    const session = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
    expect(session.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.modes?.currentModeId).toBe('allow-edits'); // notes-keeper's agent.json
    expect(session.modes?.availableModes.map((m) => m.id)).toEqual(['allow-reads', 'allow-edits', 'allow-all']);
    for (const mode of session.modes!.availableModes) {
      expect(mode.name.length).toBeGreaterThan(0);
      expect(mode.description?.length).toBeGreaterThan(10);
    }
  });

  it('refuses a relative cwd and an unknown session with JSON-RPC errors', async () => {
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: 'relative/dir', mcpServers: [] })).rejects.toMatchObject({ code: -32602 });
    await expect(prompt('no-such-session', 'hi')).rejects.toMatchObject({ code: -32002 });
  });
});

describe('acx acp: session/prompt', () => {
  it('streams the reply as agent_message_chunk and reasoning as agent_thought_chunk, then end_turn', async () => {
    const { sessionId } = await newSession();
    const first = model.requests.length;
    model.enqueue({ reasoning: 'The user greets me.', text: 'Hello there, team. I keep your notes.' });
    const response = await prompt(sessionId, 'Hi, who are you?');
    expect(response.stopReason).toBe('end_turn');

    const updates = updatesOf(acx, sessionId);
    const chunks = updates.filter((u) => u.sessionUpdate === 'agent_message_chunk');
    expect(chunks.length).toBeGreaterThan(1); // streamed, not one final blob
    expect(replyText(updates)).toBe('Hello there, team. I keep your notes.');
    const thought = updates
      .filter((u) => u.sessionUpdate === 'agent_thought_chunk')
      .map((u) => (u.sessionUpdate === 'agent_thought_chunk' && u.content.type === 'text' ? u.content.text : ''))
      .join('');
    expect(thought).toBe('The user greets me.');
    const usage = updates.find((u) => u.sessionUpdate === 'usage_update');
    expect(usage).toMatchObject({ sessionUpdate: 'usage_update' });
    if (usage?.sessionUpdate === 'usage_update') {
      expect(usage.used).toBeGreaterThan(0);
      expect(usage.size).toBeGreaterThan(usage.used);
    }
    expect((response as { usage?: { totalTokens: number } }).usage?.totalTokens).toBeGreaterThan(0);

    // The model received the user's words.
    expect(model.requests[first]!.view.messages.some((m) => m.role === 'user' && m.text.includes('Hi, who are you?'))).toBe(true);
    // stdout carried nothing but JSON-RPC; the log went to stderr.
    for (const line of acx.stdout().split('\n').filter(Boolean)) expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
    expect(acx.stderr()).toContain('acp ready');
  });

  it('reports a tool call (memory_write) as tool_call → in_progress → completed with its result', async () => {
    const { sessionId } = await newSession();
    model.enqueue(
      { toolCalls: [{ id: 'call_store', name: 'memory_write', input: { key: 'release/freeze', value: 'The release freeze starts on 12 December.' } }] },
      { text: 'Noted: the freeze starts on 12 December.' },
    );
    const response = await prompt(sessionId, 'Remember that the release freeze starts on 12 December.');
    expect(response.stopReason).toBe('end_turn');

    const updates = updatesOf(acx, sessionId);
    const [call] = toolCalls(updates);
    expect(call).toMatchObject({
      toolCallId: 'call_store',
      kind: 'edit',
      status: 'pending',
      title: 'memory_write release/freeze',
      rawInput: { key: 'release/freeze', value: 'The release freeze starts on 12 December.' },
    });
    const later = toolUpdates(updates, 'call_store');
    expect(later.map((u) => u.status)).toEqual(['in_progress', 'completed']);
    const done = later[1]!;
    expect(done.content?.[0]).toMatchObject({ type: 'content', content: { type: 'text' } });
    expect(JSON.stringify(done.content)).toContain('release/freeze');
    expect(acx.permissions).toHaveLength(0); // allow-edits lets memory writes run
    expect(replyText(updates)).toBe('Noted: the freeze starts on 12 December.');
    // The update order a client relies on: the call, then its progress, then the reply.
    const order = updates.map((u) => u.sessionUpdate).filter((t) => t !== 'usage_update');
    expect(order.indexOf('tool_call')).toBeLessThan(order.lastIndexOf('agent_message_chunk'));
  });
});

describe('acx acp: permissions and modes', () => {
  it('asks with session/request_permission under allow-reads; allow_once runs the call in the same turn', async () => {
    const { sessionId } = await newSession();
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
    const first = model.requests.length;
    model.enqueue(
      { toolCalls: [{ id: 'call_a', name: 'memory_write', input: { key: 'team/lead', value: 'Dana leads the team.' } }] },
      { text: 'Saved.' },
    );
    const response = await prompt(sessionId, 'Remember that Dana leads the team.');
    expect(response.stopReason).toBe('end_turn');

    expect(acx.permissions).toHaveLength(1);
    const asked = acx.permissions[0]!;
    expect(asked.sessionId).toBe(sessionId);
    expect(asked.toolCall).toMatchObject({ toolCallId: 'call_a', kind: 'edit', title: 'memory_write team/lead' });
    expect(asked.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once']);

    const updates = updatesOf(acx, sessionId);
    expect(toolCalls(updates)[0]).toMatchObject({ toolCallId: 'call_a', status: 'pending' });
    expect(toolUpdates(updates, 'call_a').map((u) => u.status)).toEqual(['in_progress', 'completed']);
    // The model saw the tool's real result.
    const second = model.requests[first + 1]!.view.messages;
    const result = second.flatMap((m) => m.toolResults ?? []).find((r) => r.callId === 'call_a');
    expect(result?.isError).not.toBe(true);
    expect(result?.output).toContain('team/lead');
  });

  it('reject_once denies the call: tool_call_update failed, and the model is told it was not run', async () => {
    const { sessionId } = await newSession();
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    const first = model.requests.length;
    model.enqueue(
      { toolCalls: [{ id: 'call_r', name: 'memory_write', input: { key: 'secret', value: 'Do not keep this.' } }] },
      { text: 'Understood, I did not save it.' },
    );
    const response = await prompt(sessionId, 'Remember this.');
    expect(response.stopReason).toBe('end_turn');

    const updates = updatesOf(acx, sessionId);
    const after = toolUpdates(updates, 'call_r');
    expect(after.map((u) => u.status)).toEqual(['failed']);
    expect(JSON.stringify(after[0]!.content)).toContain('rejected');
    const second = model.requests[first + 1]!.view.messages;
    const result = second.flatMap((m) => m.toolResults ?? []).find((r) => r.callId === 'call_r');
    expect(result?.output).toContain('rejected');
    expect(replyText(updates)).toBe('Understood, I did not save it.');
  });

  it('allow_always is remembered for the rest of the session, and set_mode allow-all stops the questions', async () => {
    const { sessionId } = await newSession();
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_always');
    model.enqueue(
      { toolCalls: [{ id: 'c1', name: 'memory_write', input: { key: 'a', value: 'one' } }] },
      { toolCalls: [{ id: 'c2', name: 'memory_write', input: { key: 'b', value: 'two' } }] },
      { text: 'Both saved.' },
    );
    await prompt(sessionId, 'Save a and b.');
    expect(acx.permissions).toHaveLength(1); // the second write was not asked about
    expect(toolUpdates(updatesOf(acx, sessionId), 'c2').map((u) => u.status)).toEqual(['in_progress', 'completed']);

    // A new session does not inherit "always".
    const other = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId: other.sessionId, modeId: 'allow-reads' });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
    model.enqueue({ toolCalls: [{ id: 'c3', name: 'memory_write', input: { key: 'c', value: 'three' } }] }, { text: 'Saved c.' });
    await prompt(other.sessionId, 'Save c.');
    expect(acx.permissions).toHaveLength(2);

    // allow-all: no question at all.
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId: other.sessionId, modeId: 'allow-all' });
    model.enqueue({ toolCalls: [{ id: 'c4', name: 'memory_write', input: { key: 'd', value: 'four' } }] }, { text: 'Saved d.' });
    await prompt(other.sessionId, 'Save d.');
    expect(acx.permissions).toHaveLength(2);
    expect(toolUpdates(updatesOf(acx, other.sessionId), 'c4').map((u) => u.status)).toEqual(['in_progress', 'completed']);

    await expect(
      acx.agent.request(acp.methods.agent.session.setMode, { sessionId: other.sessionId, modeId: 'yolo' }),
    ).rejects.toMatchObject({ code: -32602 });
  });
});

describe('acx acp: session/cancel', () => {
  it('cancels a turn mid-stream: the prompt returns cancelled and the next prompt works', async () => {
    const { sessionId } = await newSession();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    model.enqueue({ text: 'Here is the start of a very long answer that will never finish', pauseUntil: gate });
    const pending = prompt(sessionId, 'Write me a long essay.');
    // The first words are on screen, and the model call is still open.
    await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
    await acx.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    const response = await pending;
    release();
    expect(response.stopReason).toBe('cancelled');

    const seen = updatesOf(acx, sessionId).length;
    model.enqueue({ text: 'A short answer.' });
    const next = await prompt(sessionId, 'Just a short answer, please.');
    expect(next.stopReason).toBe('end_turn');
    expect(replyText(updatesOf(acx, sessionId).slice(seen))).toBe('A short answer.');
  });

  it('cancels while a permission request is open: the call fails, no further model call, cancelled', async () => {
    const { sessionId } = await newSession();
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    let answerCancelled!: () => void;
    acx.onPermission = () =>
      new Promise((resolve) => {
        // As ACP requires, the client answers an open permission request "cancelled" once it cancels.
        answerCancelled = () => resolve({ outcome: { outcome: 'cancelled' } });
        asked();
      });
    const first = model.requests.length;
    model.enqueue({ toolCalls: [{ id: 'call_wait', name: 'memory_write', input: { key: 'k', value: 'v' } }] });
    const pending = prompt(sessionId, 'Remember k.');
    await wasAsked;
    await acx.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    answerCancelled();
    const response = await pending;
    expect(response.stopReason).toBe('cancelled');
    expect(model.requests.length).toBe(first + 1); // no step after the cancelled one
    const after = toolUpdates(updatesOf(acx, sessionId), 'call_wait');
    expect(after.at(-1)?.status).toBe('failed');

    model.enqueue({ text: 'Ready when you are.' });
    expect((await prompt(sessionId, 'Hello again.')).stopReason).toBe('end_turn');
  });
});

describe('acx acp: the client\'s MCP servers', () => {
  it('joins stdio and Streamable HTTP servers to the agent\'s tools and skips a broken one (told to the user, and a log line on stderr)', async () => {
    const { startHttpFixture } = await import('../../fixtures/mcp/http-server.ts');
    const http = await startHttpFixture();
    try {
      const { sessionId } = await newSession([
        { name: 'notes tools', command: process.execPath, args: [path.resolve('test/fixtures/mcp/stdio-server.ts')], env: [] },
        { type: 'http', name: 'remote', url: http.url, headers: [] },
        { name: 'broken', command: path.join(home, 'no-such-mcp-server'), args: [], env: [] },
      ]);
      acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
      const first = model.requests.length;
      model.enqueue({ toolCalls: [{ id: 'call_echo', name: 'notes_tools__echo', input: { text: 'hi' } }] }, { text: 'It echoed.' });
      const response = await prompt(sessionId, 'Use the echo tool.');
      expect(response.stopReason).toBe('end_turn');

      const offered = model.requests[first]!.view.tools;
      expect(offered).toEqual(expect.arrayContaining(['memory_write', 'notes_tools__echo', 'remote__add']));
      expect(offered.some((t) => t.startsWith('broken'))).toBe(false);
      // MCP tools are kind "other": allow-edits asks before running them.
      expect(acx.permissions[0]?.toolCall).toMatchObject({ toolCallId: 'call_echo', kind: 'other' });
      const done = toolUpdates(updatesOf(acx, sessionId), 'call_echo').at(-1)!;
      expect(done.status).toBe('completed');
      expect(JSON.stringify(done.content)).toContain('echo: hi');
      expect(acx.stderr()).toMatch(/WARNING mcp server skipped .*server=broken/);
      expect(replyText(updatesOf(acx, sessionId))).toMatch(/^An MCP server from the editor is not available in this session:\n- "broken": /);
      for (const line of acx.stdout().split('\n').filter(Boolean)) expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
      await acx.agent.request(acp.methods.agent.session.close, { sessionId });
    } finally {
      await http.close();
    }
  });
});

describe('acx acp: prompt content', () => {
  it('takes embedded text resources and resource links; refuses audio with a clear error', async () => {
    const { sessionId } = await newSession();
    const first = model.requests.length;
    model.enqueue({ text: 'Read it.' });
    await acx.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: 'text', text: 'Summarize this file:' },
        { type: 'resource', resource: { uri: 'file:///work/NOTES.md', text: 'Freeze on 12 December.', mimeType: 'text/markdown' } },
        { type: 'resource_link', uri: 'file:///work/PLAN.md', name: 'PLAN.md' },
      ],
    });
    const user = model.requests[first]!.view.messages.find((m) => m.role === 'user' && m.text.includes('Summarize'))!;
    expect(user.text).toContain('Freeze on 12 December.');
    expect(user.text).toContain('file:///work/PLAN.md');

    await expect(
      acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }] }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('audio') });
  });

  it('passes an image through to a model that takes images', async () => {
    expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true); // an unknown model is assumed able
    const { sessionId } = await newSession();
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const first = model.requests.length;
    model.enqueue({ text: 'A single transparent pixel.' });
    const response = await acx.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: 'text', text: 'What is in this image?' },
        { type: 'image', data: pixel, mimeType: 'image/png' },
      ],
    });
    expect(response.stopReason).toBe('end_turn');
    expect(JSON.stringify(model.requests[first]!.body)).toContain(pixel);
  });
});

describe('acx acp: failures', () => {
  it('answers a failed model call with a JSON-RPC error that says what went wrong; the session goes on', async () => {
    const { sessionId } = await newSession();
    model.enqueue({ fail: { status: 401, message: 'Incorrect API key provided' } });
    await expect(prompt(sessionId, 'Hello?')).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('Incorrect API key') });
    model.enqueue({ text: 'Back again.' });
    expect((await prompt(sessionId, 'Hello again?')).stopReason).toBe('end_turn');
  });
});
