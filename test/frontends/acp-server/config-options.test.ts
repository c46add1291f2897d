// `acx acp` config options (issue 15, item 5), the parts server-sessions.test.ts leaves out: the
// model given with --model heads the model selector (over ACX_MODEL) and runs the first turn, and a
// permission mode chosen with set_config_option (not set_mode) governs the very next turn. A real
// `acx acp` child process driven by the ACP SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type AcxAcp, startAcxAcp } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
let acx: AcxAcp | undefined;

beforeEach(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-config-'));
});

afterEach(async () => {
  if (acx) {
    expect(acx.responseProblems()).toEqual([]);
    expect(await acx.close()).toBe(0);
    acx = undefined;
  }
  expect(model.queued()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

async function start(args: string[] = []): Promise<AcxAcp> {
  acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL, args });
  await acx.initialize();
  return acx;
}

const prompt = (client: AcxAcp, sessionId: string, text: string) =>
  client.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

function selectOption(options: readonly acp.SessionConfigOption[] | null | undefined, id: string) {
  const found = options?.find((o) => o.id === id);
  if (!found || found.type !== 'select') throw new Error(`no select option "${id}" among ${JSON.stringify(options)}`);
  return { current: found.currentValue, values: found.options.flatMap((x) => ('value' in x ? [x.value] : x.options.map((y) => y.value))) };
}

it('puts the --model model first in the model selector, over ACX_MODEL, and runs the turn on it', async () => {
  const client = await start(['--model', 'openai:from-flag']); // the test client also sets ACX_MODEL=openai:test
  const session = await client.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  const models = selectOption(session.configOptions, 'model');
  expect(models.current).toBe('openai:from-flag');
  expect(models.values[0]).toBe('openai:from-flag');
  model.enqueue({ text: 'Hi.' });
  await prompt(client, session.sessionId, 'Hello');
  expect(model.requests.at(-1)!.view.model).toBe('from-flag');
});

it('applies a permission mode chosen with set_config_option to the next turn', async () => {
  const client = await start();
  const { sessionId } = await client.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  const memoryWrite = (id: string) => ({ toolCalls: [{ id, name: 'memory_write', input: { key: 'release/freeze', value: '12 December' } }] });

  // allow-reads: a memory write (an edit) is asked about first; the test client rejects it.
  await client.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'mode', value: 'allow-reads' });
  model.enqueue(memoryWrite('asked'), { text: 'Not stored.' });
  await prompt(client, sessionId, 'Remember the freeze date.');
  expect(client.permissions.map((p) => p.toolCall.toolCallId)).toEqual(['asked']);

  // Back to allow-edits: the same write runs without a question.
  await client.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'mode', value: 'allow-edits' });
  model.enqueue(memoryWrite('unasked'), { text: 'Stored.' });
  await prompt(client, sessionId, 'Remember the freeze date, please.');
  expect(client.permissions.map((p) => p.toolCall.toolCallId)).toEqual(['asked']);
  const done = client.updates
    .map((n) => n.update)
    .filter((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'unasked')
    .at(-1);
  expect(done).toMatchObject({ status: 'completed' });
});
