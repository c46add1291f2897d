// `acx acp` session/close (issue 15, item 4): closing a session ends its running turn as
// cancelled, stops the MCP servers the client gave it, and frees it — a prompt to it is "session
// not found" — while the session stays in session/list and session/resume reopens it with its
// history. A real `acx acp` child process driven by the ACP SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const STDIO_MCP_SERVER = path.resolve(import.meta.dirname, '../../fixtures/mcp/stdio-server.ts');

let model: ModelServer;
let home: string;
let acx: AcxAcp;

beforeEach(async () => {
  model = await startModelServer();
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-close-')));
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
  await acx.initialize();
});

afterEach(async () => {
  expect(acx.responseProblems()).toEqual([]);
  expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const prompt = (sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
const close = (sessionId: string) => acx.agent.request(acp.methods.agent.session.close, { sessionId });

/** Whether a process is still there (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('ends the running turn as cancelled and stops the session\'s MCP servers; the session is then not found', async () => {
  // The client's stdio MCP server, started through a shell that leaves its pid behind.
  const pidFile = path.join(home, 'mcp.pid');
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, {
    cwd: home,
    mcpServers: [{ name: 'notes tools', command: '/bin/sh', args: ['-c', `echo $$ > '${pidFile}'; exec '${process.execPath}' '${STDIO_MCP_SERVER}'`], env: [] }],
  });
  const mcpPid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  expect(alive(mcpPid)).toBe(true);

  let release!: () => void;
  model.enqueue({ text: 'The start of an answer that never finishes', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
  const running = prompt(sessionId, 'Write a long essay.');
  await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
  expect(await close(sessionId)).toEqual({});
  expect((await running).stopReason).toBe('cancelled');
  release();

  // Its MCP server was told to go (stdin closed) and went.
  while (alive(mcpPid)) await new Promise((resolve) => setTimeout(resolve, 20));
  await expect(prompt(sessionId, 'Still there?')).rejects.toMatchObject({ code: -32002 });
  // Closing it again, or an id never opened, is "not found" on the wire (-32002), which the SDK's client takes as done.
  for (const id of [sessionId, 'never-opened']) {
    expect(await close(id)).toEqual({});
    const last = JSON.parse(acx.stdout().trim().split('\n').at(-1)!) as { error?: { code: number } };
    expect(last.error?.code).toBe(-32002);
  }
});

it('keeps a closed session listed, and session/resume reopens it with its history', async () => {
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  model.enqueue({ text: 'Noted: the freeze starts on 12 December.' });
  await prompt(sessionId, 'Remember that the freeze starts on 12 December.');
  expect(await close(sessionId)).toEqual({});

  const listed = await acx.agent.request(acp.methods.agent.session.list, {});
  expect(listed.sessions.map((s) => s.sessionId)).toEqual([sessionId]);

  await acx.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: home });
  const seen = updatesOf(acx, sessionId).length;
  model.enqueue({ text: 'On 12 December.' });
  expect((await prompt(sessionId, 'When does the freeze start?')).stopReason).toBe('end_turn');
  expect(replyText(updatesOf(acx, sessionId).slice(seen))).toBe('On 12 December.');
  expect(model.requests.at(-1)!.view.messages.map((m) => m.text).join('\n')).toContain('Remember that the freeze starts on 12 December.');
});
