// One working turn in `acx acp` as Zed drives it (issue 15, item 8: the per-item e2e with a client
// that advertises what Zed advertises — fs read/write, terminal, its _meta). The other server
// tests use a client without fs or terminal; this one checks that with Zed's capabilities
// the session's cwd and additionalDirectories are still the workspace (item 1) when files go
// through the editor and commands run in its terminal (item 2), that the calls carry kinds,
// locations and a diff (item 3), that the title follows the first turn (item 4), that the commands
// and the plan reach the editor (item 6), and that usage_update carries the cost (item 7).
// A real `acx acp` child process driven by the ACP SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, editorBuffers, optionOfKind, replyText, startAcxAcp, updatesOf, ZED_CAPABILITIES } from '../../fixtures/acp-server/client.ts';
import { TerminalHost } from '../../fixtures/acp-server/terminal-host.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const AGENT = path.resolve(import.meta.dirname, '../../fixtures/acp-server/project-agent');

let model: ModelServer;
let base: string;
let home: string;
let project: string;
let docs: string;
let acx: AcxAcp;

beforeEach(async () => {
  model = await startModelServer();
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-zed-session-')));
  home = path.join(base, 'home');
  project = path.join(base, 'project');
  docs = path.join(base, 'docs');
  for (const dir of [home, project, docs]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), 'old readme\n');
  fs.writeFileSync(path.join(docs, 'guide.md'), 'The guide on disk.\n');
});

afterEach(async () => {
  expect(acx.responseProblems()).toEqual([]);
  expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(base, { recursive: true, force: true });
});

it('works in the project Zed opened, through its buffers and terminal, and shows kinds, diff, plan, title and cost', async () => {
  // On OpenRouter, which states what each call cost (the OpenAI provider does not).
  const openRouter = { ACX_MODEL: 'openrouter:vendor/model', OPENROUTER_API_KEY: 'sk-or-test-0123456789', OPENROUTER_BASE_URL: model.openaiBaseURL, ACX_CONTEXT_TOKENS: '64000' };
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, agentDir: AGENT, env: openRouter });
  const buffers = new Map<string, string>([[path.join(docs, 'guide.md'), 'The guide as the editor holds it.\n']]);
  acx.files = editorBuffers(buffers);
  const terminals = new TerminalHost();
  acx.terminals = terminals;
  acx.onPermission = async (params) => optionOfKind(params, 'allow_once'); // the user allows what is asked
  await acx.initialize(ZED_CAPABILITIES);
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, additionalDirectories: [docs], mcpServers: [] });
  const commands = await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'available_commands_update');
  expect(commands.update.sessionUpdate === 'available_commands_update' && commands.update.availableCommands.map((c) => c.name)).toEqual(
    expect.arrayContaining(['model', 'clear', 'compact']),
  );

  const guide = path.join(docs, 'guide.md');
  const readme = path.join(project, 'README.md');
  model.enqueue(
    { toolCalls: [{ id: 'plan', name: 'plan_update', input: { entries: [{ content: 'Read the guide', status: 'in_progress' }, { content: 'Update the readme', status: 'pending' }] } }] },
    { toolCalls: [{ id: 'read', name: 'fs_read', input: { path: guide } }] },
    { toolCalls: [{ id: 'run', name: 'execute', input: { command: 'pwd' } }] },
    { toolCalls: [{ id: 'write', name: 'fs_write', input: { path: 'README.md', content: 'new readme\n' } }] },
    { text: 'Updated the readme from the guide.', usage: { inputTokens: 200, outputTokens: 20, cost: 0.0042 } },
  );
  const response = await acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Update the readme from the guide' }] });
  expect(response.stopReason).toBe('end_turn');
  const updates = updatesOf(acx, sessionId);
  expect(replyText(updates)).toBe('Updated the readme from the guide.');

  // Item 6: the plan, as a plan update.
  const plan = updates.find((u) => u.sessionUpdate === 'plan');
  expect(plan?.sessionUpdate === 'plan' && plan.entries.map((e) => `${e.status} ${e.content}`)).toEqual(['in_progress Read the guide', 'pending Update the readme']);

  // Items 1–3: the additional directory read through the editor's buffer, as a read at its absolute path.
  const final = (id: string) => updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id).at(-1);
  expect(updates.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'read')).toMatchObject({ kind: 'read', locations: [{ path: guide }] });
  expect(JSON.stringify(final('read'))).toContain('The guide as the editor holds it.');
  // The command ran in Zed's terminal, in the session's cwd, embedded in the call.
  expect(terminals.requests[0]).toMatchObject({ method: 'create', params: { sessionId, cwd: project } });
  expect(updates.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'run')).toMatchObject({ kind: 'execute', title: 'pwd' });
  expect(acx.permissions.map((p) => p.toolCall.toolCallId)).toEqual(['run']); // allow-edits asks before a command only
  expect(final('run')).toMatchObject({ status: 'completed', content: [{ type: 'terminal' }] });
  // The write went into the editor, relative to the cwd, shown as a diff from what was there.
  expect(final('write')).toMatchObject({ status: 'completed', content: [{ type: 'diff', path: readme, oldText: 'old readme\n', newText: 'new readme\n' }, { type: 'content' }] });
  expect(buffers.get(readme)).toBe('new readme\n');
  expect(acx.fileRequests.map((r) => `${r.method} ${r.params.path}`)).toEqual(expect.arrayContaining([`read ${guide}`, `write ${readme}`]));
  // In the editor's buffer, not yet on disk.
  expect(fs.readFileSync(readme, 'utf8')).toBe('old readme\n');

  // Item 7: the cost; item 4: the title, after the turn.
  const costs = updates.flatMap((u) => (u.sessionUpdate === 'usage_update' && u.cost ? [u.cost] : []));
  expect(costs.at(-1)).toEqual({ amount: 0.0042, currency: 'USD' });
  const kinds = updates.map((u) => u.sessionUpdate);
  expect(kinds.indexOf('session_info_update')).toBeGreaterThan(kinds.lastIndexOf('agent_message_chunk'));
  expect(updates.find((u) => u.sessionUpdate === 'session_info_update')).toMatchObject({ title: 'Update the readme from the guide' });
});
