// `acx acp` plans (issue 15, item 6): the engine gets a plan tool in editor sessions; each call is
// sent as an ACP `plan` update (not as a tool call), runs in every permission mode without asking,
// and is kept in the journal so session/load shows the plan again. Real `acx acp` child processes
// driven by the ACP SDK's client; the model is the local model server.
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
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-plan-'));
});

afterEach(async () => {
  for (const acx of started.splice(0)) expect(await acx.close()).toBe(0);
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

async function start(): Promise<AcxAcp> {
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
  started.push(acx);
  await acx.initialize();
  return acx;
}

const plans = (updates: acp.SessionUpdate[]) =>
  updates.flatMap((u) => (u.sessionUpdate === 'plan' ? [u.entries.map((e) => `${e.status} ${e.priority} ${e.content}`)] : []));

it('sends the model\'s plan as ACP plan updates, asks no permission for it even in allow-reads, and replays it on session/load', async () => {
  const first = await start();
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  await first.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'allow-reads' });
  model.enqueue(
    {
      toolCalls: [
        {
          id: 'call_plan_1',
          name: 'plan_update',
          input: {
            entries: [
              { content: 'Find the release notes', status: 'in_progress', priority: 'high' },
              { content: 'Group them by kind', status: 'pending' },
            ],
          },
        },
      ],
    },
    {
      toolCalls: [
        {
          id: 'call_plan_2',
          name: 'plan_update',
          input: {
            entries: [
              { content: 'Find the release notes', status: 'completed', priority: 'high' },
              { content: 'Group them by kind', status: 'in_progress' },
            ],
          },
        },
      ],
    },
    { text: 'Here are the notes, grouped.' },
  );
  const before = model.requests.length;
  const response = await first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Write the release notes.' }] });
  expect(response.stopReason).toBe('end_turn');

  const updates = updatesOf(first, sessionId);
  expect(plans(updates)).toEqual([
    ['in_progress high Find the release notes', 'pending medium Group them by kind'],
    ['completed high Find the release notes', 'in_progress medium Group them by kind'],
  ]);
  expect(updates.some((u) => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId.startsWith('call_plan'))).toBe(false);
  expect(first.permissions).toEqual([]);
  expect(replyText(updates)).toBe('Here are the notes, grouped.');
  // The model was offered the tool and told the plan was taken.
  expect(model.requests[before]!.view.tools).toContain('plan_update');
  const results = model.requests[before + 1]!.view.messages.flatMap((m) => m.toolResults ?? []);
  expect(JSON.stringify(results)).toContain('Plan updated: 2 entries, 0 completed.');
  expect(await first.close()).toBe(0);
  started.splice(0);

  const second = await start();
  await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] });
  expect(plans(updatesOf(second, sessionId))).toEqual([
    ['in_progress high Find the release notes', 'pending medium Group them by kind'],
    ['completed high Find the release notes', 'in_progress medium Group them by kind'],
  ]);
});
