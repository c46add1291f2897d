// `acx acp` with an editor that offers its file system (ACP fs/read_text_file, fs/write_text_file,
// as Zed does): fs_read sees the editor's unsaved buffer, fs_write lands in the editor, and every
// path is still confined by acx before the editor is asked about it. A real child process driven
// by the ACP SDK's client, which parses every message with the SDK's schemas.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, editorBuffers, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const AGENT = path.resolve(import.meta.dirname, '../../fixtures/acp-server/project-agent');

let model: ModelServer;
let base: string;
let home: string;
let project: string;
let acx: AcxAcp | undefined;

beforeAll(async () => {
  model = await startModelServer();
});

afterAll(async () => {
  await model.close();
});

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-client-fs-')));
  home = path.join(base, 'home');
  project = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  for (const dir of [home, project, outside]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), 'old readme\n');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'not for the agent\n');
  fs.symlinkSync(outside, path.join(project, 'escape'));
});

afterEach(async () => {
  if (acx) expect(await acx.close()).toBe(0);
  acx = undefined;
  expect(model.queued()).toBe(0);
  fs.rmSync(base, { recursive: true, force: true });
});

/** An editor holding README.md open with unsaved changes; it answers reads from its buffers and keeps writes there. */
async function startWithEditor(fsCapabilities: acp.FileSystemCapabilities) {
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, agentDir: AGENT });
  const buffers = new Map([[path.join(project, 'README.md'), 'unsaved readme\n']]);
  acx.files = editorBuffers(buffers);
  await acx.initialize({ fs: fsCapabilities, terminal: false });
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
  return { acx, sessionId, buffers };
}

const prompt = (client: AcxAcp, sessionId: string, text: string) =>
  client.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

function finalContent(updates: acp.SessionUpdate[], id: string): acp.ToolCallContent[] {
  const last = updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status !== 'in_progress').at(-1);
  return last?.sessionUpdate === 'tool_call_update' ? (last.content ?? []) : [];
}

const textOf = (content: acp.ToolCallContent[]) => content.map((c) => (c.type === 'content' && c.content.type === 'text' ? c.content.text : '')).join('');

it('reads the editor\'s unsaved buffer, writes into the editor, and asks it about no path outside the project', async () => {
  const { acx: client, sessionId, buffers } = await startWithEditor({ readTextFile: true, writeTextFile: true });
  const readme = path.join(project, 'README.md');
  model.enqueue(
    { toolCalls: [{ id: 'r1', name: 'fs_read', input: { path: 'README.md' } }] },
    { toolCalls: [{ id: 'w1', name: 'fs_write', input: { path: 'README.md', content: 'new readme\n' } }] },
    {
      toolCalls: [
        { id: 'r_link', name: 'fs_read', input: { path: 'escape/secret.txt' } },
        { id: 'w_up', name: 'fs_write', input: { path: '../outside/planted.txt', content: 'x' } },
      ],
    },
    { text: 'Updated the readme.' },
  );
  expect((await prompt(client, sessionId, 'Update the readme.')).stopReason).toBe('end_turn');

  const updates = updatesOf(client, sessionId);
  expect(textOf(finalContent(updates, 'r1'))).toBe('unsaved readme\n');
  // The write went to the editor (its buffer), not to the file on disk; the diff starts from the buffer.
  expect(buffers.get(readme)).toBe('new readme\n');
  expect(fs.readFileSync(readme, 'utf8')).toBe('old readme\n');
  expect(finalContent(updates, 'w1')[0]).toEqual({ type: 'diff', path: readme, oldText: 'unsaved readme\n', newText: 'new readme\n' });
  expect(client.fileRequests).toEqual([
    { method: 'read', params: { sessionId, path: readme } },
    { method: 'read', params: { sessionId, path: readme } },
    { method: 'write', params: { sessionId, path: readme, content: 'new readme\n' } },
  ]);
  // Refused by acx's confinement before the editor heard of them.
  expect(textOf(finalContent(updates, 'r_link'))).toMatch(/outside the workspace/);
  expect(textOf(finalContent(updates, 'w_up'))).toContain('".."');
  expect(fs.existsSync(path.join(base, 'outside', 'planted.txt'))).toBe(false);
});

it('uses the disk for what the editor does not offer: a read-only client file system leaves writes to acx', async () => {
  const { acx: client, sessionId, buffers } = await startWithEditor({ readTextFile: true, writeTextFile: false });
  model.enqueue({ toolCalls: [{ id: 'w1', name: 'fs_write', input: { path: 'notes.md', content: 'on disk\n' } }] }, { text: 'Written.' });
  await prompt(client, sessionId, 'Write notes.');
  expect(fs.readFileSync(path.join(project, 'notes.md'), 'utf8')).toBe('on disk\n');
  expect(buffers.has(path.join(project, 'notes.md'))).toBe(false);
  expect(client.fileRequests).toEqual([]); // a new file has no buffer to read for the diff
});

/** What the model was told a call returned. */
function resultFor(callId: string): string {
  const result = model.requests.flatMap((r) => r.view.messages.flatMap((m) => m.toolResults ?? [])).find((r) => r.callId === callId);
  if (!result) throw new Error(`no tool result ${callId} reached the model`);
  return result.output;
}

it('leaves nothing on disk when the editor refuses a write, and its reason reaches the model and the editor', async () => {
  const { acx: client, sessionId, buffers } = await startWithEditor({ readTextFile: true, writeTextFile: true });
  const editor = client.files!;
  // An editor that declines writes (its handler throws: the ACP SDK answers "Internal error" with
  // the reason in data.details) and reads of one buffer (a JSON-RPC error with its own message).
  client.files = {
    read: (params) => (params.path.endsWith('locked.md') ? Promise.reject(new acp.RequestError(-32002, 'Resource not found: the buffer was closed')) : editor.read(params)),
    write: () => Promise.reject(new Error('the user declined the change')),
  };
  fs.writeFileSync(path.join(project, 'locked.md'), 'on disk\n');
  model.enqueue(
    {
      toolCalls: [
        { id: 'w_new', name: 'fs_write', input: { path: 'drafts/plan/new.md', content: 'fresh\n' } },
        { id: 'w_old', name: 'fs_write', input: { path: 'README.md', content: 'replaced\n' } },
        { id: 'r_locked', name: 'fs_read', input: { path: 'locked.md' } },
      ],
    },
    { text: 'The editor said no.' },
  );
  expect((await prompt(client, sessionId, 'Write the plan.')).stopReason).toBe('end_turn');

  // Nothing was created for the refused new file, not even its directories; the old file is untouched.
  expect(fs.existsSync(path.join(project, 'drafts'))).toBe(false);
  expect(fs.readFileSync(path.join(project, 'README.md'), 'utf8')).toBe('old readme\n');
  expect(buffers.get(path.join(project, 'README.md'))).toBe('unsaved readme\n');
  const updates = updatesOf(client, sessionId);
  for (const id of ['w_new', 'w_old']) {
    expect(resultFor(id)).toContain('the user declined the change');
    expect(resultFor(id)).not.toContain('Internal error');
    expect(textOf(finalContent(updates, id))).toContain('the user declined the change');
  }
  expect(resultFor('r_locked')).toContain('Resource not found: the buffer was closed');
  expect(textOf(finalContent(updates, 'r_locked'))).toContain('Resource not found: the buffer was closed');
  // Each call ends failed, once (the calls of one step run together, so in any order).
  const finals = updates.flatMap((u) => (u.sessionUpdate === 'tool_call_update' && u.status !== 'in_progress' ? [`${u.toolCallId} ${u.status}`] : []));
  expect(finals.sort()).toEqual(['r_locked failed', 'w_new failed', 'w_old failed']);
});
