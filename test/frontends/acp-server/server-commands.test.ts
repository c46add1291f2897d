// `acx acp` slash commands (issue 15, item 6): available_commands_update after session/new and
// session/load (the agent's skills plus /model, /clear, /compact), and what each command does, seen
// as an editor and the model see it. A real `acx acp` child process driven by the ACP SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
let acx: AcxAcp;

beforeEach(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-commands-'));
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, env: { ACX_MODELS: 'openai:test-b' } });
  await acx.initialize();
});

afterEach(async () => {
  expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const newSession = () => acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
const prompt = (sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
/** The agent's reply to the last prompt: its message chunks after `from` updates. */
const replySince = (sessionId: string, from: number) => replyText(updatesOf(acx, sessionId).slice(from));
const commandsOf = (sessionId: string) =>
  acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'available_commands_update').then((n) =>
    n.update.sessionUpdate === 'available_commands_update' ? n.update.availableCommands : [],
  );

it('sends available_commands_update after session/new and session/load: the skills plus /model, /clear and /compact', async () => {
  const { sessionId } = await newSession();
  const commands = await commandsOf(sessionId);
  expect(commands.map((c) => c.name)).toEqual(['model', 'clear', 'compact', 'release-notes']);
  expect(commands.find((c) => c.name === 'release-notes')?.description).toBe('Write release notes for the team from what you remember about a release.');
  expect(commands.find((c) => c.name === 'model')?.input).toEqual({ hint: 'provider:model-id' });
  // On the wire after the response that names the session (an editor drops updates for a session it does not know yet).
  const lines = acx.stdout().split('\n');
  const answered = lines.findIndex((l) => l.includes(`"sessionId":"${sessionId}"`) && l.includes('"result"'));
  const announced = lines.findIndex((l) => l.includes('available_commands_update'));
  expect(answered).toBeGreaterThanOrEqual(0);
  expect(announced).toBeGreaterThan(answered);

  acx.updates.length = 0;
  await acx.agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] });
  expect((await commandsOf(sessionId)).map((c) => c.name)).toEqual(['model', 'clear', 'compact', 'release-notes']);
});

it('/model shows the model, switches it without a model turn, and the next turn runs on the new one', async () => {
  const { sessionId } = await newSession();
  const asked = model.requests.length;
  let from = updatesOf(acx, sessionId).length;
  expect(await prompt(sessionId, '/model')).toMatchObject({ stopReason: 'end_turn' });
  expect(replySince(sessionId, from)).toBe('Model: openai:test. Others: openai:test-b, openai:gpt-5.4, openai:gpt-5.4-mini.');

  from = updatesOf(acx, sessionId).length;
  await prompt(sessionId, '/model openai:test-b');
  expect(replySince(sessionId, from)).toBe('Model: openai:test-b, from the next turn on.');
  const change = updatesOf(acx, sessionId).slice(from).find((u) => u.sessionUpdate === 'config_option_update');
  expect(change?.sessionUpdate === 'config_option_update' && change.configOptions.find((o) => o.id === 'model')?.currentValue).toBe('openai:test-b');

  from = updatesOf(acx, sessionId).length;
  await prompt(sessionId, '/model openai:nope');
  expect(replySince(sessionId, from)).toContain('There is no model "openai:nope" here');
  expect(model.requests.length).toBe(asked); // no model call for any of them

  model.enqueue({ text: 'On test-b.' });
  await prompt(sessionId, 'Which model?');
  expect(model.requests.at(-1)!.view.model).toBe('test-b');
});

it('runs a skill command with the skill instructions in the prompt the model gets', async () => {
  const { sessionId } = await newSession();
  model.enqueue({ text: 'Added: the dark mode.' });
  await prompt(sessionId, '/release-notes for 2.1');
  const user = model.requests.at(-1)!.view.messages.filter((m) => m.role === 'user').map((m) => m.text).join('\n');
  expect(user).toContain('Use your "release-notes" skill for this: for 2.1');
  expect(user).toContain('Group what you find under Added, Changed and Fixed.');
  expect(replyText(updatesOf(acx, sessionId))).toBe('Added: the dark mode.');
  // A slash word that names no command is an ordinary prompt.
  model.enqueue({ text: 'That is a path.' });
  await prompt(sessionId, '/etc/hosts is what?');
  expect(model.requests.at(-1)!.view.messages.map((m) => m.text).join('\n')).toContain('/etc/hosts is what?');
});

it('/clear forgets the conversation: the next turn and a later session/load see none of it', async () => {
  const { sessionId } = await newSession();
  model.enqueue({ text: 'Noted: the freeze starts on 12 December.' });
  await prompt(sessionId, 'Remember that the release freeze starts on 12 December.');
  const from = updatesOf(acx, sessionId).length;
  await prompt(sessionId, '/clear');
  expect(replySince(sessionId, from)).toBe('Cleared: the conversation is forgotten; the session keeps its mode, model and project.');

  model.enqueue({ text: 'I do not know.' });
  await prompt(sessionId, 'When is the freeze?');
  const seen = model.requests.at(-1)!.view.messages.map((m) => m.text).join('\n');
  expect(seen).not.toContain('12 December');
  expect(seen).toContain('When is the freeze?');

  acx.updates.length = 0;
  await acx.agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] });
  const replayed = updatesOf(acx, sessionId).flatMap((u) => (u.sessionUpdate === 'user_message_chunk' && u.content.type === 'text' ? [u.content.text] : []));
  expect(replayed).toEqual(['When is the freeze?']);
});

it('/compact replaces the earlier conversation with a summary the next turn sees', async () => {
  const { sessionId } = await newSession();
  model.enqueue({ text: 'Noted the freeze.' }, { text: 'Noted the owner.' });
  await prompt(sessionId, 'Remember that the release freeze starts on 12 December.');
  await prompt(sessionId, 'Mia owns the release.');
  model.enqueue({ text: 'The freeze starts on 12 December; Mia owns the release.' });
  const from = updatesOf(acx, sessionId).length;
  await prompt(sessionId, '/compact');
  expect(replySince(sessionId, from)).toMatch(/^Compacted: 2 earlier messages are now one summary \(4 → 3 messages\)\.$/);

  model.enqueue({ text: 'Mia.' });
  await prompt(sessionId, 'Who owns it?');
  const seen = model.requests.at(-1)!.view.messages.map((m) => m.text).join('\n');
  expect(seen).toContain('The freeze starts on 12 December; Mia owns the release.');
  expect(seen).not.toContain('Remember that the release freeze starts on 12 December.');
  expect(seen).toContain('Mia owns the release.');
});

it('runs a prompt sent while /compact is still summarizing after it, on the compacted history', async () => {
  const { sessionId } = await newSession();
  model.enqueue({ text: 'Noted the freeze.' }, { text: 'Noted the owner.' });
  await prompt(sessionId, 'Remember that the release freeze starts on 12 December.');
  await prompt(sessionId, 'Mia owns the release.');
  let release!: () => void;
  model.enqueue({ text: 'Summary: freeze 12 December, Mia owns it.', pauseUntil: new Promise<void>((r) => (release = r)) }, { text: 'Mia.' });
  const asked = model.requests.length;
  const compacting = prompt(sessionId, '/compact');
  let question: Promise<acp.PromptResponse>;
  try {
    while (model.requests.length === asked) await new Promise((r) => setTimeout(r, 10)); // the summary request has arrived
    question = prompt(sessionId, 'Who owns it?');
    while (!acx.stderr().includes('acp prompt queued')) await new Promise((r) => setTimeout(r, 10)); // taken, and waiting
    expect(model.requests.length).toBe(asked + 1);
  } finally {
    release();
  }
  expect(await compacting).toMatchObject({ stopReason: 'end_turn' });
  expect(await question).toMatchObject({ stopReason: 'end_turn' });
  const seen = model.requests.at(-1)!.view.messages.map((m) => m.text).join('\n');
  expect(seen).toContain('Summary: freeze 12 December, Mia owns it.');
  expect(seen).not.toContain('Remember that the release freeze starts on 12 December.');
});
