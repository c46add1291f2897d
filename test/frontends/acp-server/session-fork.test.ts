// `acx acp` session/fork (issue 26, item 13; an ACP method the SDK 2.4 lists among its unstable
// ones, which claude-agent-acp and other agents serve): with a journal, initialize advertises
// `sessionCapabilities.fork`, and a fork is a new session with the same history, mode, model and
// thinking level, after which each goes its own way. A real `acx acp` child process driven by the
// ACP SDK's client.
import fs from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import type { ForkSessionRequest, ForkSessionResponse } from '@agentclientprotocol/sdk/unstable';
import { expect, it } from 'vitest';
import { type AcxAcp, replyText, updatesOf } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const bed = useAcpTestBed('acx-acp-fork-');

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
const fork = (acx: AcxAcp, params: ForkSessionRequest) => acx.agent.request<ForkSessionResponse>('session/fork', params);
/** The conversation the model saw in its last request, as one text (not acx's brief, whose recalled memories span sessions). */
const lastSeen = () =>
  bed.model.requests
    .at(-1)!
    .view.messages.filter((m) => !m.text.startsWith('<acx-brief>'))
    .map((m) => m.text)
    .join('\n');

it('forks a session into a new one with the same history and choices; the two then go their own ways', async () => {
  const acx = bed.start({ env: { ACX_MODELS: 'openai:test-b' } });
  const init = await acx.initialize();
  expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ fork: {} });
  const { sessionId: original } = await acx.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: original, configId: 'mode', value: 'allow-reads' });
  await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: original, configId: 'model', value: 'openai:test-b' });
  bed.model.enqueue({ text: 'Noted: the freeze starts on 12 December.' });
  await prompt(acx, original, 'Remember that the freeze starts on 12 December.');

  // A fork may work in another directory (a second checkout, say).
  const elsewhere = path.join(bed.home, 'worktree');
  fs.mkdirSync(elsewhere);
  const forked = await fork(acx, { sessionId: original, cwd: elsewhere, mcpServers: [] });
  expect(forked.sessionId).not.toBe(original);
  expect(forked.modes?.currentModeId).toBe('allow-reads');
  expect(forked.configOptions?.find((o) => o.id === 'model')?.currentValue).toBe('openai:test-b');
  await acx.waitForUpdate((n) => n.sessionId === forked.sessionId && n.update.sessionUpdate === 'available_commands_update');

  bed.model.enqueue({ text: 'Moved to 19 December.' });
  await prompt(acx, forked.sessionId, 'In this branch the freeze moves to 19 December.');
  expect(bed.model.requests.at(-1)!.view.model).toBe('test-b');
  expect(lastSeen()).toContain('Noted: the freeze starts on 12 December.');

  bed.model.enqueue({ text: 'Still 12 December.' });
  await prompt(acx, original, 'When is the freeze?');
  expect(lastSeen()).toContain('Noted: the freeze starts on 12 December.');
  expect(lastSeen()).not.toContain('19 December');

  // Both are listed, each with its own cwd; loading the fork replays the history it was given and its own turn.
  const { sessions } = await acx.agent.request(acp.methods.agent.session.list, {});
  expect(sessions.map((s) => [s.sessionId, s.cwd]).sort()).toEqual([[forked.sessionId, elsewhere], [original, bed.home]].sort());
  acx.updates.length = 0;
  await acx.agent.request(acp.methods.agent.session.load, { sessionId: forked.sessionId, cwd: elsewhere, mcpServers: [] });
  const replayed = updatesOf(acx, forked.sessionId).flatMap((u) => (u.sessionUpdate === 'user_message_chunk' && u.content.type === 'text' ? [u.content.text] : []));
  expect(replayed).toEqual(['Remember that the freeze starts on 12 December.', 'In this branch the freeze moves to 19 December.']);
});

it('refuses to fork an unknown session, and a session whose turn is running', async () => {
  const acx = bed.start();
  await acx.initialize();
  await expect(fork(acx, { sessionId: 'no-such-session', cwd: bed.home })).rejects.toMatchObject({ code: -32002 });
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  let release!: () => void;
  bed.model.enqueue({ text: 'Thinking', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
  const running = prompt(acx, sessionId, 'Take your time.');
  try {
    await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
    await expect(fork(acx, { sessionId, cwd: bed.home })).rejects.toMatchObject({ code: -32600, message: expect.stringContaining('running') });
  } finally {
    release();
  }
  expect((await running).stopReason).toBe('end_turn');
});

it('leaves out a turn the session never finished (acx was killed during it): the fork starts where it last finished', async () => {
  const first = bed.start();
  await first.initialize();
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  bed.model.enqueue({ text: 'Noted: the freeze starts on 12 December.' });
  await prompt(first, sessionId, 'Remember that the freeze starts on 12 December.');
  let release!: () => void;
  bed.model.enqueue({ text: 'Half an answ', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
  void prompt(first, sessionId, 'A question the turn never answers.').catch(() => {});
  // The unfinished turn is journaled (its prompt) and under way (the model has begun to answer).
  await first.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk' && replyText([n.update]).startsWith('Half'));
  const gone = new Promise((resolve) => first.child.once('exit', resolve));
  first.child.kill('SIGKILL');
  await gone;
  release();

  const next = bed.start();
  await next.initialize();
  const forked = await fork(next, { sessionId, cwd: bed.home, mcpServers: [] });
  bed.model.enqueue({ text: '12 December.' });
  await prompt(next, forked.sessionId, 'When is the freeze?');
  expect(lastSeen()).toContain('Noted: the freeze starts on 12 December.');
  expect(lastSeen()).not.toContain('A question the turn never answers.');
});
