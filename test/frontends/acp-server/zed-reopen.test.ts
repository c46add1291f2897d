// `acx acp` as Zed drives it when a user reopens an existing project (issue 15, "Checked by"): a
// client with Zed's capabilities (fs read/write, terminal, its _meta) lists the project's
// sessions, loads the earlier one (its history replayed), switches the model with
// set_config_option, runs a slash command, and sends a prompt whose edit arrives as a diff and
// lands in the editor's buffer. Two real `acx acp` processes on one --home, driven by the SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, editorBuffers, replyText, startAcxAcp, updatesOf, ZED_CAPABILITIES } from '../../fixtures/acp-server/client.ts';
import { TerminalHost } from '../../fixtures/acp-server/terminal-host.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const AGENT = path.resolve(import.meta.dirname, '../../fixtures/acp-server/project-agent');

let model: ModelServer;
let base: string;
let home: string;
let project: string;
const started: AcxAcp[] = [];

beforeAll(async () => {
  model = await startModelServer();
});

afterAll(async () => {
  await model.close();
});

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-zed-')));
  home = path.join(base, 'home');
  project = path.join(base, 'project');
  for (const dir of [home, project]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), 'teh readme\n');
});

afterEach(async () => {
  for (const acx of started.splice(0)) expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  fs.rmSync(base, { recursive: true, force: true });
});

/** Zed: its capabilities, an editor holding the project's files, its terminals. */
async function openZed(): Promise<{ acx: AcxAcp; buffers: Map<string, string>; init: acp.InitializeResponse }> {
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, agentDir: AGENT, env: { ACX_MODELS: 'openai:test-large' } });
  started.push(acx);
  const buffers = new Map<string, string>();
  acx.files = editorBuffers(buffers);
  acx.terminals = new TerminalHost();
  acx.onPermission = async (params) => ({ outcome: { outcome: 'selected', optionId: params.options.find((o) => o.kind === 'allow_once')!.optionId } });
  const init = await acx.initialize(ZED_CAPABILITIES);
  return { acx, buffers, init };
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

it('reopens a project as Zed does: lists and loads the session, switches the model, runs /model, and shows an edit as a diff', async () => {
  // Yesterday: a session in this project.
  const first = await openZed();
  const { sessionId } = await first.acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
  model.enqueue({ text: 'The readme has a typo in its first word.' });
  await prompt(first.acx, sessionId, 'Review the readme');
  expect(await first.acx.close()).toBe(0);
  started.splice(started.indexOf(first.acx), 1);

  // Today: Zed starts acx again and opens the project.
  const { acx, buffers, init } = await openZed();
  expect(init.agentCapabilities).toMatchObject({ loadSession: true, sessionCapabilities: { list: {}, resume: {} } });
  const listed = await acx.agent.request(acp.methods.agent.session.list, { cwd: project });
  expect(listed.sessions).toEqual([expect.objectContaining({ sessionId, cwd: project, title: 'Review the readme', updatedAt: expect.any(String) })]);

  const loaded = await acx.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
  const replay = updatesOf(acx, sessionId);
  expect(replay.filter((u) => u.sessionUpdate === 'user_message_chunk')).toHaveLength(1);
  expect(replyText(replay)).toBe('The readme has a typo in its first word.');
  const modelOption = loaded.configOptions?.find((o) => o.id === 'model');
  expect(modelOption).toMatchObject({ category: 'model', currentValue: 'openai:test' });
  await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'available_commands_update');

  // The model picker.
  const switched = await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'model', value: 'openai:test-large' });
  expect(switched.configOptions.find((o) => o.id === 'model')).toMatchObject({ currentValue: 'openai:test-large' });

  // A slash command: answered by acx, no model call.
  const requestsBefore = model.requests.length;
  const seen = updatesOf(acx, sessionId).length;
  expect((await prompt(acx, sessionId, '/model')).stopReason).toBe('end_turn');
  expect(replyText(updatesOf(acx, sessionId).slice(seen))).toMatch(/^Model: openai:test-large\./);
  expect(model.requests.length).toBe(requestsBefore);

  // The user has typed into README.md without saving; the agent's fix arrives as a diff from that buffer.
  const readme = path.join(project, 'README.md');
  buffers.set(readme, 'teh readme, edited\n');
  model.enqueue({ toolCalls: [{ id: 'fix', name: 'fs_write', input: { path: 'README.md', content: 'the readme, edited\n' } }] }, { text: 'Fixed the typo.' });
  const afterCommand = updatesOf(acx, sessionId).length;
  expect((await prompt(acx, sessionId, 'Fix it')).stopReason).toBe('end_turn');
  const turn = updatesOf(acx, sessionId).slice(afterCommand);
  const diff = { type: 'diff', path: readme, oldText: 'teh readme, edited\n', newText: 'the readme, edited\n' };
  // The call is announced with the change it makes (its old text read from disk at once; the buffer's comes with the result).
  expect(turn.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'fix')).toMatchObject({
    kind: 'edit',
    locations: [{ path: readme }],
    content: [{ type: 'diff', path: readme, newText: 'the readme, edited\n' }],
  });
  expect(turn.filter((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'fix').at(-1)).toMatchObject({ status: 'completed', content: [diff, { type: 'content' }] });
  expect(buffers.get(readme)).toBe('the readme, edited\n'); // in the editor, not yet on disk
  expect(fs.readFileSync(readme, 'utf8')).toBe('teh readme\n');
  // The turn ran on the model picked above, and the model saw yesterday's conversation.
  const fixRequest = model.requests[requestsBefore]!;
  expect(fixRequest.view.model).toBe('test-large');
  expect(fixRequest.view.messages.map((m) => m.text).join('\n')).toContain('The readme has a typo in its first word.');
});
