// `acx acp` takes the run flags: --permission-mode sets the sessions' starting mode and
// --max-steps the step budget, whose exhaustion ends a turn with ACP's max_turn_requests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AcxAcp, NOTES_KEEPER, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
let acx: AcxAcp;

beforeAll(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-budget-'));
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, args: ['--max-steps', '1', '--permission-mode', 'allow-reads'] });
  await acx.initialize();
});

afterAll(async () => {
  await acx.close();
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

it('starts sessions in the --permission-mode and stops with max_turn_requests when the step budget is spent', async () => {
  const { sessionId, modes } = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  expect(modes?.currentModeId).toBe('allow-reads');

  model.enqueue(
    { toolCalls: [{ id: 'call_list', name: 'memory_list', input: {} }] },
    // The reserve call: tools withheld, the model reports where it got to.
    { text: 'I used my one step listing memory; ask again to continue.' },
  );
  const response = await acx.agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'Go through all my notes and tidy them.' }],
  });
  expect(response.stopReason).toBe('max_turn_requests');
  const updates = updatesOf(acx, sessionId);
  // memory_list is a read: allow-reads runs it without asking, and it lists the agent's seeded memories.
  expect(acx.permissions).toHaveLength(0);
  const seeds = JSON.parse(fs.readFileSync(path.join(NOTES_KEEPER, 'memory/team.json'), 'utf8')) as Array<{ key: string; value: string }>;
  const listing = [`${seeds.length} memories:`, ...seeds.map((seed) => `${seed.key}: ${seed.value}`)].join('\n');
  expect(updates.filter((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update')).toEqual([
    { sessionUpdate: 'tool_call', toolCallId: 'call_list', title: 'memory_list', name: 'memory_list', kind: 'read', status: 'pending', rawInput: {} },
    { sessionUpdate: 'tool_call_update', toolCallId: 'call_list', status: 'in_progress' },
    {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'call_list',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: listing } }],
      rawOutput: listing,
    },
  ]);
  expect(model.requests.at(-1)!.view.messages.flatMap((m) => m.toolResults ?? [])).toEqual([{ callId: 'call_list', output: listing }]);
  expect(replyText(updates)).toBe('I used my one step listing memory; ask again to continue.');
  expect(model.requests.at(-1)!.body.tool_choice).toBe('none');
});
