// A timeline agent whose state lives on PostgreSQL (--store / ACX_STORE), against the embedded
// platform and the local model server, with real acx processes: a wake from one home keeps its
// marks and claims on the server, so a wake from another home (another host) finds nothing new
// and writes no channel.db; `acx cleanup --timeline` removes that timeline's rows there.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { cleanEnv, ROOT, runAcx, tempDir } from '../support/cli.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');
const postgres = postgresForSuite();

let platform: TestPlatform;
let model: ModelServer;
beforeAll(async () => {
  platform = await startTestPlatform();
  model = await startModelServer();
});
afterAll(async () => {
  await model?.close();
  await platform?.close();
});

async function query<R extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

const channelDbs = (home: string) => readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('channel.db'));

describe('a timeline agent on PostgreSQL (e2e)', { timeout: scaled(120_000) }, () => {
  it.skipIf(POSTGRES_SKIP !== '')(`acx wake --timeline --store keeps the marks and claims on the server, shared by every home; cleanup --timeline removes them${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('timeline_store');
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = (await postMessage(platform, ana.token, timeline, 'Hello @nova, when is the release?')).uuid;
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On Thursday.' } }] }, 'told ana');
    const env = cleanEnv({ BASECRADLE_BASE_URL: platform.url, BASECRADLE_TOKEN: nova.token, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL });
    const [here, elsewhere] = [tempDir('acx-tl-pg-'), tempDir('acx-tl-pg-')];

    const first = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger, '--store', url], { env, home: here });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/INFO wake end timeline=\S+ outcome=answered posted=1/);
    const claims = await query<{ agent_id: string; phase: string }>(url, 'SELECT agent_id, phase FROM acx_channel_claims WHERE timeline = $1', [timeline]);
    expect(claims).toEqual([{ agent_id: expect.any(String), phase: 'done' }]);
    expect(await query(url, 'SELECT item FROM acx_channel_marks WHERE timeline = $1', [timeline])).toHaveLength(1);

    // Another home (another host), ACX_STORE this time: the same state, so nothing is answered twice.
    const again = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env: { ...env, ACX_STORE: url }, home: elsewhere });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/wake end .*outcome=nothing-new posted=0/);
    expect([...channelDbs(here), ...channelDbs(elsewhere)], 'no channel.db is written').toEqual([]);

    const cleanup = await runAcx(['cleanup', AGENT, '--timeline', timeline, '--store', url, '--json'], { env, home: elsewhere });
    expect(cleanup.status, cleanup.stderr).toBe(0);
    const [removed] = JSON.parse(cleanup.stdout).removed as Array<{ timeline: string; messages: number }>;
    expect(removed?.timeline).toBe(timeline);
    expect(removed?.messages, "its transcript, in the PostgreSQL journal").toBeGreaterThan(0);
    for (const table of ['acx_channel_marks', 'acx_channel_claims', 'acx_channel_breaker_wakes']) {
      expect(await query(url, `SELECT 1 FROM ${table} WHERE timeline = $1`, [timeline]), table).toEqual([]);
    }
  });
});
