// usage_update carries the session's cost when the provider states one: OpenRouter's usage.cost,
// through the real @openrouter/ai-sdk-provider against the local model server's chat wire.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AcxAcp, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

let model: ModelServer;
let home: string;
let acx: AcxAcp;

beforeAll(async () => {
  model = await startModelServer();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-cost-'));
  acx = startAcxAcp({
    home,
    modelBaseURL: model.openaiBaseURL,
    env: { ACX_MODEL: 'openrouter:vendor/model', OPENROUTER_API_KEY: 'sk-or-test-0123456789', OPENROUTER_BASE_URL: model.openaiBaseURL, ACX_CONTEXT_TOKENS: '64000' },
  });
  await acx.initialize();
});

afterAll(async () => {
  expect(await acx.close()).toBe(0);
  await model.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const costs = (updates: acp.SessionUpdate[]) =>
  updates.filter((u): u is Extract<acp.SessionUpdate, { sessionUpdate: 'usage_update' }> => u.sessionUpdate === 'usage_update').map((u) => u.cost ?? null);

describe('acx acp: cost in usage_update', () => {
  it("reports the session's running cost in USD, as the provider stated it", async () => {
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
    model.enqueue({ text: 'first', usage: { inputTokens: 100, outputTokens: 10, cost: 0.0012 } });
    await acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'one' }] });
    model.enqueue({ text: 'second', usage: { inputTokens: 120, outputTokens: 10, cost: 0.0008 } });
    await acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'two' }] });
    const reported = costs(updatesOf(acx, sessionId));
    expect(reported).toHaveLength(2);
    expect(reported[0]).toEqual({ amount: 0.0012, currency: 'USD' });
    expect(reported[1]!.currency).toBe('USD');
    expect(reported[1]!.amount).toBeCloseTo(0.002, 10);
  });

  it('sends no cost where the provider states none', async () => {
    const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
    model.enqueue({ text: 'free', usage: { inputTokens: 50, outputTokens: 5 } });
    await acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'three' }] });
    expect(costs(updatesOf(acx, sessionId))).toEqual([null]);
  });
});
