// `acx acp` session/load: a session journaled by one agent process is replayed to the client by
// the next one (same --home), and then takes new prompts with its history intact.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
const started: AcxAcp[] = [];

beforeEach(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-load-'));
});

afterEach(async () => {
  for (const acx of started.splice(0)) await acx.close();
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

function start(): AcxAcp {
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
  started.push(acx);
  return acx;
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

it('replays a journaled session after a restart, then continues it with its history', async () => {
  const first = start();
  await first.initialize();
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  model.enqueue(
    { reasoning: 'Store it.', toolCalls: [{ id: 'call_store', name: 'memory_write', input: { key: 'release/freeze', value: 'Freeze starts 12 December.' } }] },
    { text: 'Noted: the freeze starts on 12 December.' },
    { text: 'You can deploy until 11 December.' },
  );
  await prompt(first, sessionId, 'Remember that the release freeze starts on 12 December.');
  await prompt(first, sessionId, 'When can we still deploy?');
  expect(await first.close()).toBe(0);

  const second = start();
  const init = await second.initialize();
  expect(init.agentCapabilities?.loadSession).toBe(true);
  const loaded = await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] });
  expect(loaded.modes?.currentModeId).toBe('allow-edits');

  // Every replayed update arrived before the load response.
  const replay = updatesOf(second, sessionId);
  const users = replay.flatMap((u) => (u.sessionUpdate === 'user_message_chunk' && u.content.type === 'text' ? [u.content.text] : []));
  expect(users).toEqual(['Remember that the release freeze starts on 12 December.', 'When can we still deploy?']);
  expect(replyText(replay)).toBe('Noted: the freeze starts on 12 December.You can deploy until 11 December.');
  const call = replay.find((u) => u.sessionUpdate === 'tool_call');
  expect(call).toMatchObject({ toolCallId: 'call_store', kind: 'edit', status: 'completed', title: 'memory_write release/freeze' });
  expect(JSON.stringify(call)).toContain('release/freeze');
  expect(replay.map((u) => u.sessionUpdate)).toEqual([
    'user_message_chunk',
    'agent_thought_chunk',
    'tool_call',
    'agent_message_chunk',
    'user_message_chunk',
    'agent_message_chunk',
  ]);

  // The loaded session takes prompts, and the model sees the earlier conversation.
  const before = model.requests.length;
  model.enqueue({ text: 'The freeze starts on 12 December.' });
  const response = await prompt(second, sessionId, 'Remind me when the freeze starts.');
  expect(response.stopReason).toBe('end_turn');
  const seen = model.requests[before]!.view.messages.map((m) => m.text).join('\n');
  expect(seen).toContain('Remember that the release freeze starts on 12 December.');
  expect(seen).toContain('You can deploy until 11 December.');
  expect(replyText(updatesOf(second, sessionId).slice(replay.length))).toBe('The freeze starts on 12 December.');

  // An id the journal never saw is "not found", not a fresh session.
  await expect(
    second.agent.request(acp.methods.agent.session.load, { sessionId: 'never-seen', cwd: home, mcpServers: [] }),
  ).rejects.toMatchObject({ code: -32002 });
});
