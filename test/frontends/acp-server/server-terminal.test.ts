// `acx acp` with an editor that offers terminals (ACP terminal/*, as Zed does): execute runs its
// command through terminal/create … wait_for_exit … release, in the session's confined cwd, with
// the terminal embedded in the tool call so the editor streams its output; acx's time limit and a
// cancel kill it (terminal/kill). Without the capability, or for a call with stdin (a terminal has
// none), the command runs in acx's own sandbox as before. A real child process driven by the ACP
// SDK's client, whose terminals really run the commands (test/fixtures/acp-server/terminal-host.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, optionOfKind, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { TerminalHost } from '../../fixtures/acp-server/terminal-host.ts';
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
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-terminal-')));
  home = path.join(base, 'home');
  project = path.join(base, 'project');
  for (const dir of [home, project]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'README.md'), 'the readme\n');
});

afterEach(async () => {
  if (acx) expect(await acx.close()).toBe(0);
  acx = undefined;
  expect(model.queued()).toBe(0);
  fs.rmSync(base, { recursive: true, force: true });
});

/** An editor with terminals (or without: `terminal: false` with a host that must stay unused); it allows every command once. */
async function startWithTerminals(terminal: boolean) {
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, agentDir: AGENT });
  const host = new TerminalHost();
  acx.terminals = host;
  acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
  await acx.initialize({ fs: { readTextFile: false, writeTextFile: false }, terminal });
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
  return { acx, host, sessionId };
}

const prompt = (client: AcxAcp, sessionId: string, text: string) =>
  client.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

type ToolCallUpdate = Extract<acp.SessionUpdate, { sessionUpdate: 'tool_call_update' }>;

function finalOf(updates: acp.SessionUpdate[], id: string): ToolCallUpdate {
  const last = updates.filter((u): u is ToolCallUpdate => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status !== 'in_progress').at(-1);
  if (!last) throw new Error(`no final tool_call_update ${id}`);
  return last;
}

/** The terminals embedded in a call's updates (its tool_call and tool_call_updates), in order. */
function terminalsOf(updates: acp.SessionUpdate[], id: string): string[] {
  return updates
    .filter((u) => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId === id)
    .flatMap((u) => ((u as ToolCallUpdate).content ?? []).flatMap((c) => (c.type === 'terminal' ? [c.terminalId] : [])));
}

/** What the model was told a call returned. */
function resultFor(callId: string): string {
  const result = model.requests.flatMap((r) => r.view.messages.flatMap((m) => m.toolResults ?? [])).find((r) => r.callId === callId);
  if (!result) throw new Error(`no tool result ${callId} reached the model`);
  return typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
}

const methods = (host: TerminalHost) => host.requests.map((r) => r.method);

it('runs execute in the editor\'s terminal, in the session cwd, embedded in the call, and releases it', async () => {
  const { acx: client, host, sessionId } = await startWithTerminals(true);
  const command = 'pwd; cat README.md; echo oops >&2; exit 3';
  model.enqueue({ toolCalls: [{ id: 'x1', name: 'execute', input: { command } }] }, { text: 'Ran it.' });
  expect((await prompt(client, sessionId, 'Run it.')).stopReason).toBe('end_turn');

  // acx chose the shell and the confined cwd, and kept its output limit.
  expect(host.requests[0]).toEqual({
    method: 'create',
    params: { sessionId, command: '/bin/sh', args: ['-c', command], cwd: project, outputByteLimit: 64 * 1024 },
  });
  expect(methods(host)).toEqual(['create', 'wait_for_exit', 'output', 'release']);
  expect(host.anyRunning()).toBe(false);

  const updates = updatesOf(client, sessionId);
  const terminalId = 'term-1'; // the host's first
  expect(terminalsOf(updates, 'x1')[0]).toBe(terminalId);
  expect(finalOf(updates, 'x1')).toMatchObject({ status: 'completed', content: [{ type: 'terminal', terminalId }] });
  // The model gets the exit code and the interleaved output, as acx's own sandbox would report it.
  const result = resultFor('x1');
  expect(result).toContain('Exit code: 3');
  expect(result).toContain(`--- output (stdout and stderr) ---\n${project}\nthe readme\noops`);
  // The model is told where its commands run.
  const offered = JSON.stringify(model.requests[0]!.body.tools);
  expect(offered).toContain("in the editor's terminal");
});

it('kills a command at acx\'s time limit through terminal/kill, then releases it', async () => {
  const { acx: client, host, sessionId } = await startWithTerminals(true);
  model.enqueue({ toolCalls: [{ id: 'slow', name: 'execute', input: { command: 'echo started; sleep 60', timeoutMs: 200 } }] }, { text: 'Too slow.' });
  expect((await prompt(client, sessionId, 'Run the slow thing.')).stopReason).toBe('end_turn');
  expect(methods(host)).toEqual(['create', 'wait_for_exit', 'kill', 'output', 'release']);
  expect(host.anyRunning()).toBe(false);
  const result = resultFor('slow');
  expect(result).toMatch(/^Timed out after 200 ms/);
  expect(result).toContain('started');
});

it('kills the command when the turn is cancelled, and the turn stops as cancelled', async () => {
  const { acx: client, host, sessionId } = await startWithTerminals(true);
  model.enqueue({ toolCalls: [{ id: 'long', name: 'execute', input: { command: 'sleep 60' } }] });
  const turn = prompt(client, sessionId, 'Run the long thing.');
  // The editor sees the terminal while the command runs.
  await client.waitForUpdate((n) => n.sessionId === sessionId && terminalsOf([n.update], 'long').length > 0);
  await client.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  expect((await turn).stopReason).toBe('cancelled');
  await waitFor(() => methods(host).includes('release'));
  expect(methods(host)).toEqual(['create', 'wait_for_exit', 'kill', 'output', 'release']);
  expect(host.anyRunning()).toBe(false);
  // The killed command ends failed, never completed; the editor keeps showing its terminal.
  await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'tool_call_update' && n.update.toolCallId === 'long' && n.update.status !== 'in_progress');
  const updates = updatesOf(client, sessionId);
  expect(finalOf(updates, 'long')).toMatchObject({ status: 'failed', content: [{ type: 'terminal', terminalId: 'term-1' }] });
  expect(updates.some((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'long' && u.status === 'completed')).toBe(false);
});

it('ends a command in acx\'s own sandbox that the cancel killed as failed too', async () => {
  const { acx: client, sessionId } = await startWithTerminals(false);
  model.enqueue({ toolCalls: [{ id: 'local_long', name: 'execute', input: { command: 'echo started; sleep 60' } }] });
  const turn = prompt(client, sessionId, 'Run the long thing here.');
  await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'tool_call_update' && n.update.toolCallId === 'local_long' && n.update.status === 'in_progress');
  await client.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  expect((await turn).stopReason).toBe('cancelled');
  const updates = updatesOf(client, sessionId);
  const final = finalOf(updates, 'local_long');
  expect(final.status).toBe('failed');
  expect(JSON.stringify(final.content)).toContain('Cancelled');
});

it('runs in acx\'s own sandbox without the capability, and for a call with stdin', async () => {
  const { acx: client, host, sessionId } = await startWithTerminals(false);
  model.enqueue({ toolCalls: [{ id: 'local', name: 'execute', input: { command: 'pwd' } }] }, { text: 'Done.' });
  await prompt(client, sessionId, 'Where am I?');
  expect(host.requests).toEqual([]); // never asked: the client did not advertise terminals
  expect(resultFor('local')).toContain(`--- stdout ---\n${project}`);
  expect(JSON.stringify(model.requests.at(-1)!.body.tools)).not.toContain("editor's terminal");
  await client.close();
  acx = undefined;

  const withTerminal = await startWithTerminals(true);
  model.enqueue({ toolCalls: [{ id: 'piped', name: 'execute', input: { command: 'cat', stdin: 'fed in\n' } }] }, { text: 'Done.' });
  await prompt(withTerminal.acx, withTerminal.sessionId, 'Feed it.');
  expect(withTerminal.host.requests).toEqual([]);
  expect(resultFor('piped')).toContain('--- stdout ---\nfed in');
});

/** Polls a condition the client side settles asynchronously (the release after a cancelled turn). */
async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}
