// xai_account_balance against the local model server's xAI Management API: the team found from
// the management key (or XAI_TEAM_ID), the prepaid ledger's inverted cents read as dollars, and
// every failure a plain "unavailable — reason" that never carries the key or the API's body.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mediaTools } from '../../src/app/media-tools.ts';
import { createXaiBalanceTool } from '../../src/tools/builtin/xai-balance.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { toolContext } from './helpers.ts';

const TEAM = '0b6d6c2e-8f7a-4c0e-9d1b-5e3f2a1c9d77';
const KEY = 'xai-mgmt-key-abc123';
const NOW = new Date('2026-12-06T12:00:00.000Z');

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.xaiManagement.reset();
  server.xaiManagement.keys.set(KEY, { teamId: TEAM, billingRead: true });
  server.xaiManagement.balanceCents.set(TEAM, '-123456');
});

async function balance(env: Record<string, string>) {
  const tool = createXaiBalanceTool({ env: { XAI_MANAGEMENT_BASE_URL: server.xaiManagementURL, ...env }, now: () => NOW });
  const registry = new ToolRegistry({ policy: Policy.locked({ grants: [tool.name] }) });
  registry.register(tool);
  const context = toolContext();
  const result = await registry.run(tool.name, {}, context);
  return { ...result, logs: context.logger.lines };
}

describe('xai_account_balance', () => {
  it('finds the team from the key, asks once, and reads the inverted cents as dollars', async () => {
    const tool = createXaiBalanceTool({ env: { XAI_MANAGEMENT_BASE_URL: server.xaiManagementURL, XAI_MANAGEMENT_KEY: KEY }, now: () => NOW });
    const context = toolContext();
    expect(await tool.execute!({}, context)).toBe('xAI prepaid credit balance: $1,234.56 USD (as of 2026-12-06T12:00:00Z).');
    server.xaiManagement.balanceCents.set(TEAM, '2500');
    expect(await tool.execute!({}, context)).toBe('xAI prepaid credit balance: -$25.00 (the account is overdrawn) USD (as of 2026-12-06T12:00:00Z).');
    expect(server.xaiManagement.requests).toEqual([
      'GET /auth/management-keys/validation',
      `GET /v1/billing/teams/${TEAM}/prepaid/balance`,
      `GET /v1/billing/teams/${TEAM}/prepaid/balance`,
    ]);
  });

  it('XAI_TEAM_ID skips the discovery; one that is not a uuid is refused before any request', async () => {
    expect((await balance({ XAI_MANAGEMENT_KEY: KEY, XAI_TEAM_ID: TEAM })).output).toBe('xAI prepaid credit balance: $1,234.56 USD (as of 2026-12-06T12:00:00Z).');
    expect(server.xaiManagement.requests).toEqual([`GET /v1/billing/teams/${TEAM}/prepaid/balance`]);
    expect((await balance({ XAI_MANAGEMENT_KEY: KEY, XAI_TEAM_ID: 'default' })).output).toBe(
      'xAI account balance unavailable — XAI_TEAM_ID must be your team\'s uuid, not "default"; or leave it unset to find the team from the key.',
    );
    expect(server.xaiManagement.requests).toHaveLength(1);
  });

  it('no key, a refused key, a key without BillingRead, an outage: unavailable with the reason, never the key', async () => {
    expect((await balance({})).output).toBe('xAI account balance unavailable — XAI_MANAGEMENT_KEY is not set (a read-only xAI Management Key, console.x.ai → Settings → Management Keys).');
    const refused = await balance({ XAI_MANAGEMENT_KEY: 'xai-mgmt-wrong-key-999' });
    expect(refused.output).toBe('xAI account balance unavailable — the xAI Management API refused the key (HTTP 401); it needs read-only billing scope (BillingRead). Check XAI_MANAGEMENT_KEY.');
    server.xaiManagement.keys.set(KEY, { teamId: TEAM, billingRead: false });
    expect((await balance({ XAI_MANAGEMENT_KEY: KEY })).output).toMatch(/^xAI account balance unavailable — the xAI Management API refused the key \(HTTP 403\)/);
    server.xaiManagement.failWith = 503;
    expect((await balance({ XAI_MANAGEMENT_KEY: KEY, XAI_TEAM_ID: TEAM })).output).toBe('xAI account balance unavailable — the xAI Management API answered HTTP 503 trying to read the prepaid balance.');
    const unreachable = await balance({ XAI_MANAGEMENT_KEY: KEY, XAI_MANAGEMENT_BASE_URL: 'http://127.0.0.1:9' });
    expect(unreachable.output).toMatch(/^xAI account balance unavailable — the xAI Management API could not be reached/);
    for (const result of [refused, unreachable]) expect(JSON.stringify(result)).not.toMatch(/xai-mgmt/);
  });

  it('is offered on the xAI provider only, and loads only when granted', () => {
    const offered = (provider: string) => mediaTools({ provider, workspace: '/tmp', grants: new Set(['xai_account_balance']) });
    expect(offered('xai').tools.map((tool) => tool.name)).toContain('xai_account_balance');
    expect(offered('openai').skipped).toContainEqual({ name: 'xai_account_balance', reason: 'it needs the xai provider and this agent\'s model runs on openai' });
    const registry = new ToolRegistry({ policy: Policy.locked({ grants: [] }) });
    expect(registry.load(offered('xai').tools.filter((tool) => tool.name === 'xai_account_balance')).skipped.map((s) => s.name)).toEqual(['xai_account_balance']);
  });
});
