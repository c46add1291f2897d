// `acx acp` in an editor's project: the session's cwd (and additionalDirectories) are where the
// file tools and execute work, confined as the agent's own workspace is; tool calls carry the
// ACP kind, absolute locations, the command as title and the diff of each write. A real child
// process driven by the ACP SDK's client (which parses every message with the SDK's schemas).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AcxAcp, optionOfKind, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const AGENT = path.resolve(import.meta.dirname, '../../fixtures/acp-server/project-agent');

let model: ModelServer;
let base: string;
let home: string;
let project: string;
let docs: string;
let outside: string;
const started: AcxAcp[] = [];

beforeAll(async () => {
  model = await startModelServer();
});

afterAll(async () => {
  await model.close();
});

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-workspace-')));
  home = path.join(base, 'home');
  project = path.join(base, 'project');
  docs = path.join(base, 'docs');
  outside = path.join(base, 'outside');
  for (const dir of [home, project, docs, outside]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), 'old readme\n');
  fs.writeFileSync(path.join(docs, 'guide.md'), 'The guide says hello.\n');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'not for the agent\n');
  fs.symlinkSync(outside, path.join(project, 'escape'));
});

afterEach(async () => {
  for (const acx of started.splice(0)) expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  fs.rmSync(base, { recursive: true, force: true });
});

async function start(): Promise<AcxAcp> {
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, agentDir: AGENT });
  started.push(acx);
  const init = await acx.initialize();
  expect(init.agentCapabilities?.sessionCapabilities?.additionalDirectories).toEqual({});
  return acx;
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

type ToolCall = Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call' }>;
type ToolCallUpdate = Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call_update' }>;

function callOf(updates: acp.SessionUpdate[], id: string): ToolCall {
  const call = updates.find((u): u is ToolCall => u.sessionUpdate === 'tool_call' && u.toolCallId === id);
  if (!call) throw new Error(`no tool_call ${id}`);
  return call;
}

function finalOf(updates: acp.SessionUpdate[], id: string): ToolCallUpdate {
  const last = updates.filter((u): u is ToolCallUpdate => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status !== 'in_progress').at(-1);
  if (!last) throw new Error(`no final tool_call_update ${id}`);
  return last;
}

const textOf = (content: acp.ToolCallContent[] | null | undefined) =>
  (content ?? []).map((c) => (c.type === 'content' && c.content.type === 'text' ? c.content.text : '')).join('');

describe('acx acp: the session cwd is the workspace', () => {
  it('writes, reads and runs commands in cwd and additionalDirectories, never in the home workspace', async () => {
    const acx = await start();
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, additionalDirectories: [docs], mcpServers: [] });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
    model.enqueue(
      {
        toolCalls: [
          { id: 'w_new', name: 'fs_write', input: { path: 'notes/plan.md', content: 'step one\n' } },
          { id: 'w_old', name: 'fs_write', input: { path: 'README.md', content: 'new readme\n' } },
          { id: 'r_docs', name: 'fs_read', input: { path: path.join(docs, 'guide.md') } },
        ],
      },
      { toolCalls: [{ id: 'x_pwd', name: 'execute', input: { command: 'pwd && cat notes/plan.md' } }] },
      { text: 'Done.' },
    );
    expect((await prompt(acx, sessionId, 'Plan, update the readme, read the guide, check.')).stopReason).toBe('end_turn');

    // The files are in the editor's project; the agent's own workspace got nothing.
    expect(fs.readFileSync(path.join(project, 'notes/plan.md'), 'utf8')).toBe('step one\n');
    expect(fs.readFileSync(path.join(project, 'README.md'), 'utf8')).toBe('new readme\n');
    const homeWorkspace = path.join(home, 'agents', 'project-coder', 'workspace');
    expect(fs.existsSync(homeWorkspace) ? fs.readdirSync(homeWorkspace) : []).toEqual([]);

    const updates = updatesOf(acx, sessionId);
    // A new file: kind edit, its absolute path as location, a diff with no old text.
    expect(callOf(updates, 'w_new')).toMatchObject({
      kind: 'edit',
      title: 'fs_write notes/plan.md',
      locations: [{ path: path.join(project, 'notes/plan.md') }],
      content: [{ type: 'diff', path: path.join(project, 'notes/plan.md'), oldText: null, newText: 'step one\n' }],
    });
    expect(finalOf(updates, 'w_new')).toMatchObject({
      status: 'completed',
      content: [{ type: 'diff', path: path.join(project, 'notes/plan.md'), oldText: null, newText: 'step one\n' }, { type: 'content' }],
    });
    // An existing file: the diff carries what was there before the write.
    const readmeDiff = { type: 'diff', path: path.join(project, 'README.md'), oldText: 'old readme\n', newText: 'new readme\n' };
    expect(callOf(updates, 'w_old').content).toEqual([readmeDiff]);
    expect(finalOf(updates, 'w_old').content?.[0]).toEqual(readmeDiff);
    // An absolute path in an additional directory is read there.
    expect(callOf(updates, 'r_docs')).toMatchObject({ kind: 'read', locations: [{ path: path.join(docs, 'guide.md') }] });
    expect(finalOf(updates, 'r_docs')).toMatchObject({ status: 'completed' });
    expect(textOf(finalOf(updates, 'r_docs').content)).toBe('The guide says hello.\n');
    // execute: titled with its command, asked about (allow-edits does not cover commands), run in cwd.
    expect(callOf(updates, 'x_pwd')).toMatchObject({ kind: 'execute', title: 'pwd && cat notes/plan.md' });
    expect(acx.permissions.map((p) => [p.toolCall.title, p.toolCall.kind])).toEqual([['pwd && cat notes/plan.md', 'execute']]);
    expect(finalOf(updates, 'x_pwd').status).toBe('completed');
    expect(textOf(finalOf(updates, 'x_pwd').content)).toContain(`${project}\nstep one`);
  });

  it('gives dispatched sub-agents the same roots', async () => {
    const acx = await start();
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
    model.enqueue(
      { toolCalls: [{ id: 'd1', name: 'dispatch', input: { task: 'Write sub.txt saying hi.', tools: ['fs_write'] } }] },
      { toolCalls: [{ id: 's1', name: 'fs_write', input: { path: 'sub.txt', content: 'hi\n' } }] },
      { text: 'Wrote sub.txt.' },
      { text: 'The sub-agent wrote it.' },
    );
    expect((await prompt(acx, sessionId, 'Have a sub-agent write sub.txt.')).stopReason).toBe('end_turn');
    expect(fs.readFileSync(path.join(project, 'sub.txt'), 'utf8')).toBe('hi\n');
    expect(finalOf(updatesOf(acx, sessionId), 'd1').status).toBe('completed');
  });

  it('refuses paths outside cwd and the additional directories, symlink escapes included', async () => {
    const acx = await start();
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, additionalDirectories: [docs], mcpServers: [] });
    const first = model.requests.length;
    model.enqueue(
      {
        toolCalls: [
          { id: 'w_abs', name: 'fs_write', input: { path: path.join(outside, 'planted.txt'), content: 'x' } },
          { id: 'r_link', name: 'fs_read', input: { path: 'escape/secret.txt' } },
          { id: 'r_up', name: 'fs_read', input: { path: '../outside/secret.txt' } },
        ],
      },
      { text: 'Those are outside the project.' },
    );
    expect((await prompt(acx, sessionId, 'Try the outside files.')).stopReason).toBe('end_turn');

    expect(fs.existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    const updates = updatesOf(acx, sessionId);
    expect(callOf(updates, 'w_abs').locations ?? []).toEqual([]); // nothing in the project is touched
    for (const id of ['w_abs', 'r_link', 'r_up']) expect(finalOf(updates, id).status).toBe('failed');
    expect(textOf(finalOf(updates, 'w_abs').content)).toContain('outside the workspace roots');
    expect(textOf(finalOf(updates, 'r_link').content)).toMatch(/outside the workspace/);
    expect(textOf(finalOf(updates, 'r_up').content)).toContain('".."');
    // The model is told why, and never sees the outside file's content.
    const results = model.requests[first + 1]!.view.messages.flatMap((m) => m.toolResults ?? []);
    expect(results.map((r) => r.callId)).toEqual(['w_abs', 'r_link', 'r_up']);
    expect(results[0]!.output).toContain('outside the workspace roots');
    expect(results[1]!.output).toMatch(/outside the workspace/);
    expect(results[2]!.output).toContain('which could leave the workspace');
    expect(JSON.stringify(results)).not.toContain('not for the agent');
  });

  it('refuses a relative, missing or nonexistent cwd and additional directory with invalid params naming the value', async () => {
    const acx = await start();
    const open = (params: Record<string, unknown>) =>
      acx.agent.request(acp.methods.agent.session.new, { mcpServers: [], ...params } as unknown as acp.NewSessionRequest);
    await expect(open({ cwd: 'project' })).rejects.toMatchObject({ code: -32602 });
    await expect(open({})).rejects.toMatchObject({ code: -32602 });
    await expect(open({ cwd: path.join(base, 'nowhere') })).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('does not exist') });
    await expect(open({ cwd: project, additionalDirectories: ['docs'] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('additionalDirectories must be an absolute path (got "docs")'),
    });
  });

  it('keeps the cwd across session/load: the reopened session works in it, another cwd is refused', async () => {
    const first = await start();
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    model.enqueue({ toolCalls: [{ id: 'w1', name: 'fs_write', input: { path: 'a.txt', content: 'one\n' } }] }, { text: 'Wrote a.' });
    await prompt(first, sessionId, 'Write a.');
    expect(await first.close()).toBe(0);
    started.splice(0);

    const second = await start();
    await expect(second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: docs, mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining(`this session works in ${project}`),
    });
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: `${project}/`, mcpServers: [] }); // the same directory
    // The replayed call names its file where it is.
    expect(callOf(updatesOf(second, sessionId), 'w1')).toMatchObject({ kind: 'edit', status: 'completed', locations: [{ path: path.join(project, 'a.txt') }] });
    model.enqueue({ toolCalls: [{ id: 'w2', name: 'fs_write', input: { path: 'b.txt', content: 'two\n' } }] }, { text: 'Wrote b.' });
    await prompt(second, sessionId, 'Write b.');
    expect(fs.readFileSync(path.join(project, 'b.txt'), 'utf8')).toBe('two\n');
    // session/resume keeps to the same cwd.
    await expect(second.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: docs })).rejects.toMatchObject({ code: -32602 });
    await second.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: project, additionalDirectories: [docs] });
    model.enqueue({ toolCalls: [{ id: 'w3', name: 'fs_write', input: { path: path.join(docs, 'c.txt'), content: 'three\n' } }] }, { text: 'Wrote c.' });
    await prompt(second, sessionId, 'Write c in the docs.');
    expect(fs.readFileSync(path.join(docs, 'c.txt'), 'utf8')).toBe('three\n');
  });

  it("runs a client MCP tool its server marks readOnlyHint as a read (no question under allow-reads), and asks for the others", async () => {
    const acx = await start();
    const annotated: acp.McpServer = { name: 'words', command: process.execPath, args: [path.resolve(import.meta.dirname, '../../fixtures/mcp/annotated-server.ts')], env: [] };
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [annotated] });
    await acx.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
    acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
    model.enqueue(
      { toolCalls: [{ id: 'm_count', name: 'words__word_count', input: { text: 'one two three' } }] },
      { toolCalls: [{ id: 'm_shout', name: 'words__shout', input: { text: 'hey' } }] },
      { text: 'Counted and shouted.' },
    );
    await prompt(acx, sessionId, 'Count, then shout.');
    const updates = updatesOf(acx, sessionId);
    expect(callOf(updates, 'm_count').kind).toBe('read');
    expect(textOf(finalOf(updates, 'm_count').content)).toBe('3 words');
    expect(acx.permissions.map((p) => [p.toolCall.toolCallId, p.toolCall.kind])).toEqual([['m_shout', 'other']]);
    expect(textOf(finalOf(updates, 'm_shout').content)).toBe('HEY');
  });
});
