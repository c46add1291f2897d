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
