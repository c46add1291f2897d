// A timeline wake whose claims lapse mid-turn (on PostgreSQL: not renewed within the lease TTL,
// so a wake on another host took the items over) stops its turn, saying which items, instead of
// running on to repeat that wake's tool effects and model spend — and posts nothing more. Against
// the embedded platform and a real PostgreSQL cluster, with a scripted model.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { z } from 'zod';
import { BaseCradleClient } from '../../../src/channel/client.ts';
import { tool } from '../../../src/tools/tool.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../../support/postgres.ts';
import { scaled } from '../../support/time-scale.ts';
import { wakeInProcess } from '../../support/timeline-wake.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});
const postgres = postgresForSuite();

describe('a timeline wake that loses its claims mid-turn', { timeout: scaled(60_000) }, () => {
  it.skipIf(POSTGRES_SKIP !== '')(`stops the turn with a WARNING naming the items, and posts nothing more${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('claims_lost');
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    const question = await postMessage(platform, ana.token, room, '@nova run the long job, then tell me');
    // A long step during which another host's wake takes the items over (as after this one stalled past the TTL).
    const longJob = tool({
      name: 'long_job',
      description: 'Runs for a while',
      inputSchema: z.object({}),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: async (_input, context) => {
        const db = new pg.Client({ connectionString: url });
        await db.connect();
        await db.query("UPDATE acx_channel_claims SET wake = 'other-wake'");
        await db.end();
        // Until the wake is told (its renewal, every third of the STATE_LEASE_TTL_MS TTL, finds the claims gone); a wake never told goes on after a while.
        if (!context.abortSignal.aborted) await new Promise((resolve) => (context.abortSignal.addEventListener('abort', resolve, { once: true }), setTimeout(resolve, scaled(5000))));
        return 'finished';
      },
    });
    const wake = await wakeInProcess(platform, nova, room, {
      storeUrl: url,
      tools: [longJob],
      script: (_options, call) => (call === 0 ? { toolCalls: [{ name: 'long_job', input: {} }] } : call === 1 ? { toolCalls: [{ name: 'messages_create', input: { body: 'done twice' } }] } : { text: 'ok' }),
    });
    expect(wake.outcome).toEqual({ outcome: 'lease-lost', posted: 0 });
    const log = wake.logger.lines.join('\n');
    expect(log).toMatch(new RegExp(`WARNING claims lost timeline=${room} kind=message items=${question.uuid}`));
    expect(log).toMatch(new RegExp(`WARNING wake end timeline=${room} outcome=lease-lost posted=0 reason=`));
    const said: string[] = [];
    for await (const message of new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token }).messages.list({ timeline: room })) said.push(message.content.body);
    expect(said, 'the turn stopped before its next step').not.toContain('done twice');
  });
});
