// `acx acp` session management and config options (issue 15, items 4 and 5): session/list with
// titles and update times, session/delete, the mode surviving load and resume, current_mode_update,
// session_info_update, and the mode and model config options. Real `acx acp` child processes,
// driven by the ACP SDK's client (which parses every request and notification it receives with the
// SDK's schemas); every response is checked against the SDK's schema for its method too.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AcxAcp, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
let project: string;
const started: AcxAcp[] = [];

beforeEach(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-sessions-'));
  project = path.join(home, 'project');
  fs.mkdirSync(project);
});

afterEach(async () => {
  for (const acx of started.splice(0)) {
    expect(acx.responseProblems()).toEqual([]);
    expect(await acx.close()).toBe(0);
  }
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}): Promise<AcxAcp> {
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, env });
  started.push(acx);
  await acx.initialize({ fs: { readTextFile: false, writeTextFile: false }, terminal: false });
  return acx;
}

/** Ends a process (as an editor quitting) and forgets it; its responses were all valid. */
async function stop(acx: AcxAcp): Promise<void> {
  started.splice(started.indexOf(acx), 1);
  expect(acx.responseProblems()).toEqual([]);
  expect(await acx.close()).toBe(0);
}

const newSession = (acx: AcxAcp, cwd = project) => acx.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
const list = (acx: AcxAcp, cwd?: string) => acx.agent.request(acp.methods.agent.session.list, cwd ? { cwd } : {});
const ofKind = <K extends acp.SessionUpdate['sessionUpdate']>(updates: acp.SessionUpdate[], kind: K) =>
  updates.filter((u): u is Extract<acp.SessionUpdate, { sessionUpdate: K }> => u.sessionUpdate === kind);
const option = (options: readonly acp.SessionConfigOption[] | null | undefined, id: string) => {
  const found = options?.find((o) => o.id === id);
  if (!found || found.type !== 'select') throw new Error(`no select option "${id}" among ${JSON.stringify(options)}`);
  return found;
};
const values = (o: acp.SessionConfigOption) => (o.type === 'select' ? o.options.flatMap((x) => ('value' in x ? [x.value] : x.options.map((y) => y.value))) : []);

describe('acx acp: session management', () => {
  it('advertises list, delete, resume and close, and lists its sessions with titles and update times, newest first', async () => {
    const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
    started.push(acx);
    const init = await acx.initialize();
    expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ list: {}, delete: {}, resume: {}, close: {} });

    const other = path.join(home, 'other');
    fs.mkdirSync(other);
    const first = await newSession(acx);
    const second = await newSession(acx, `${other}/`);
    model.enqueue({ text: 'Freeze noted.' }, { text: 'Here is the plan.' });
    await prompt(acx, first.sessionId, 'Remember that the release freeze starts on 12 December.');
    await prompt(acx, second.sessionId, 'Plan the docs release');

    const all = await list(acx);
    expect(all.sessions.map((s) => [s.sessionId, s.cwd, s.title])).toEqual([
      [second.sessionId, other, 'Plan the docs release'],
      [first.sessionId, project, 'Remember that the release freeze starts on 12 December.'],
    ]);
    for (const s of all.sessions) expect(new Date(s.updatedAt!).toISOString()).toBe(s.updatedAt);
    expect(all.nextCursor ?? undefined).toBeUndefined();

    // Filtered by cwd (written with a trailing slash, as some editors send it).
    expect((await list(acx, `${project}/`)).sessions.map((s) => s.sessionId)).toEqual([first.sessionId]);
    await expect(list(acx, 'relative/dir')).rejects.toMatchObject({ code: -32602 });

    // Another process on the same home lists the same sessions (they are the journal's).
    await stop(acx);
    const next = await start();
    expect((await list(next)).sessions.map((s) => s.title)).toEqual(['Plan the docs release', 'Remember that the release freeze starts on 12 December.']);
  });

  it('sends session_info_update with a short title from the first prompt after the first turn, and only then', async () => {
    const acx = await start();
    const { sessionId } = await newSession(acx);
    model.enqueue({ text: 'Sure.' }, { text: 'Done.' });
    const long =
      'Please go through the release checklist for the December freeze and tell me\nwhich items are still open before Friday';
    await prompt(acx, sessionId, long);
    const infos = ofKind(updatesOf(acx, sessionId), 'session_info_update');
    expect(infos).toHaveLength(1);
    expect(infos[0]!.title).toBe('Please go through the release checklist for the December…');
    expect(new Date(infos[0]!.updatedAt!).toISOString()).toBe(infos[0]!.updatedAt);
    // The title came after the turn's reply.
    const kinds = updatesOf(acx, sessionId).map((u) => u.sessionUpdate);
    expect(kinds.lastIndexOf('agent_message_chunk')).toBeLessThan(kinds.indexOf('session_info_update'));

    await prompt(acx, sessionId, 'And after Friday?');
    expect(ofKind(updatesOf(acx, sessionId), 'session_info_update')).toHaveLength(1);
    expect((await list(acx)).sessions[0]!.title).toBe('Please go through the release checklist for the December…');
  });

  it('keeps the mode through session/load and session/resume in a new process, and the reopened session asks as that mode says', async () => {
    const first = await start();
    const { sessionId } = await newSession(first);
    await first.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    await stop(first);

    const second = await start();
    const loaded = await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe('allow-reads');
    expect(option(loaded.configOptions, 'mode').currentValue).toBe('allow-reads');
    await stop(second);

    const third = await start();
    const resumed = await third.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: project });
    expect(resumed.modes?.currentModeId).toBe('allow-reads');
    expect(option(resumed.configOptions, 'mode').currentValue).toBe('allow-reads');
    // allow-reads: a memory write (an edit) asks first; the test client rejects it.
    model.enqueue(
      { toolCalls: [{ id: 'call_store', name: 'memory_write', input: { key: 'release/freeze', value: '12 December' } }] },
      { text: 'I did not store it.' },
    );
    await prompt(third, sessionId, 'Remember the freeze date.');
    expect(third.permissions.map((p) => p.toolCall.toolCallId)).toEqual(['call_store']);
    expect(replyText(updatesOf(third, sessionId))).toBe('I did not store it.');
  });

  it('sends current_mode_update (and the mode option) when the mode changes by set_mode or by set_config_option', async () => {
    const acx = await start();
    const { sessionId } = await newSession(acx);
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-all' });
    let updates = updatesOf(acx, sessionId);
    expect(ofKind(updates, 'current_mode_update').map((u) => u.currentModeId)).toEqual(['allow-all']);
    // The config option view follows a set_mode too.
    expect(ofKind(updates, 'config_option_update').map((u) => option(u.configOptions, 'mode').currentValue)).toEqual(['allow-all']);

    const answer = await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'mode', value: 'allow-reads' });
    expect(option(answer.configOptions, 'mode').currentValue).toBe('allow-reads');
    updates = updatesOf(acx, sessionId);
    expect(ofKind(updates, 'current_mode_update').map((u) => u.currentModeId)).toEqual(['allow-all', 'allow-reads']);
  });

  it('deletes a session: gone from the list and from the journal, so it can no longer be loaded', async () => {
    const acx = await start();
    const kept = await newSession(acx);
    const doomed = await newSession(acx);
    model.enqueue({ text: 'Noted.' });
    await prompt(acx, doomed.sessionId, 'Remember the freeze.');
    expect(await acx.agent.request(acp.methods.agent.session.delete, { sessionId: doomed.sessionId })).toEqual({});
    expect((await list(acx)).sessions.map((s) => s.sessionId)).toEqual([kept.sessionId]);
    // The open session went with it.
    await expect(prompt(acx, doomed.sessionId, 'Still there?')).rejects.toMatchObject({ code: -32002 });
    await expect(
      acx.agent.request(acp.methods.agent.session.load, { sessionId: doomed.sessionId, cwd: project, mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32002 });
    // An unknown id is "not found" on the wire (-32002), which the SDK's client takes as done, as ACP recommends.
    expect(await acx.agent.request(acp.methods.agent.session.delete, { sessionId: 'never-seen' })).toEqual({});
    const last = JSON.parse(acx.stdout().trim().split('\n').at(-1)!) as { error?: { code: number } };
    expect(last.error?.code).toBe(-32002);
  });
});

describe('acx acp: config options', () => {
  it('offers the permission mode as a mode-category option and a model selector of the models the keys reach', async () => {
    const acx = await start({ ACX_MODELS: 'openai:test-b, not-a-spec', ANTHROPIC_API_KEY: 'sk-ant-test-anything' });
    const session = await newSession(acx);
    const mode = option(session.configOptions, 'mode');
    expect(mode.category).toBe('mode');
    expect(mode.currentValue).toBe('allow-edits');
    expect(values(mode)).toEqual(['allow-reads', 'allow-edits', 'allow-all']);
    const models = option(session.configOptions, 'model');
    expect(models.category).toBe('model');
    expect(models.currentValue).toBe('openai:test');
    // --model/ACX_MODEL first, then ACX_MODELS, then well-known models of each provider with a key (OpenAI and Anthropic here; no Google key).
    expect(values(models)).toEqual([
      'openai:test',
      'openai:test-b',
      'openai:gpt-5.4',
      'openai:gpt-5.4-mini',
      'anthropic:claude-sonnet-4-5',
      'anthropic:claude-haiku-4-5',
    ]);
    expect(acx.stderr()).toMatch(/ACX_MODELS entry skipped.*not-a-spec/);

    await expect(
      acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: session.sessionId, configId: 'model', value: 'openai:unlisted' }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('openai:test-b') });
    await expect(
      acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: session.sessionId, configId: 'mode', value: 'yolo' }),
    ).rejects.toMatchObject({ code: -32602 });
    await expect(
      acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: session.sessionId, configId: 'temperature', value: 'hot' }),
    ).rejects.toMatchObject({ code: -32602 });
  });

  it('runs the next turn on the model chosen with set_config_option, with the history intact, and keeps the choice on resume', async () => {
    const acx = await start({ ACX_MODELS: 'openai:test-b' });
    const { sessionId } = await newSession(acx);
    model.enqueue({ text: 'The freeze starts on 12 December.' }, { text: 'Still 12 December.' });
    const before = model.requests.length;
    await prompt(acx, sessionId, 'Remember that the freeze starts on 12 December.');
    const answer = await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'model', value: 'openai:test-b' });
    expect(option(answer.configOptions, 'model').currentValue).toBe('openai:test-b');
    await prompt(acx, sessionId, 'When does the freeze start?');
    const asked = model.requests.slice(before);
    expect(asked.map((r) => r.view.model)).toEqual(['test', 'test-b']);
    expect(asked[1]!.view.messages.map((m) => m.text).join('\n')).toContain('Remember that the freeze starts on 12 December.');
    await stop(acx);

    const next = await start({ ACX_MODELS: 'openai:test-b' });
    const resumed = await next.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: project });
    expect(option(resumed.configOptions, 'model').currentValue).toBe('openai:test-b');
    model.enqueue({ text: 'Yes.' });
    await prompt(next, sessionId, 'Still?');
    expect(model.requests.at(-1)!.view.model).toBe('test-b');
  });
});
