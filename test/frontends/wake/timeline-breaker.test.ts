// The timeline wake's circuit breaker counts wakes that could feed a loop, not the deliveries that
// find a live wake already answering: through the embedded platform (a real server over a real
// SQLite home) with a scripted model; a live claim on the message stands for a long turn.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresChannelState } from '../../../src/store/postgres-channel-state.ts';
import { SqliteChannelState } from '../../../src/store/sqlite-channel-state.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../../support/postgres.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { wakeInProcess } from '../../support/timeline-wake.ts';
import { scaled } from '../../support/time-scale.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

const postgres = postgresForSuite();
const breaker = { max: 2, windowMs: 600_000, cooldownMs: 600_000 };

describe('timeline wake breaker', { timeout: scaled(60_000) }, () => {
  it('a wake that finds its work in a live wake\'s hands is not counted, so a long turn\'s waiting deliveries never trip it', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova what is the status?');
    const answered = await wakeInProcess(platform, nova, room, { extra: { breaker } });
    expect(answered.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    const home = answered.home;

    // A long turn (a live wake of this process) holds the next message while its deliveries repeat.
    const held = { timeline: room, kind: 'message' as const, item: (await postMessage(platform, ana.token, room, '@nova and now?')).uuid };
    const longTurn = new SqliteChannelState(join(home, 'channel.db'));
    expect(await longTurn.take(held, 'a-long-turn')).toBe('taken');
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const wake = await wakeInProcess(platform, nova, room, { home, extra: { breaker } });
      outcomes.push(wake.outcome.outcome);
      expect(wake.model.calls, 'a busy wake calls no model').toHaveLength(0);
      expect(wake.logger.lines.join('\n')).not.toContain('wake breaker tripped');
    }
    expect(outcomes).toEqual(['busy', 'busy', 'busy', 'busy']);
    expect(await longTurn.isTripped(room)).toBe(false);

    // The long turn ends; the next message is answered, not declined: only the first wake counted.
    expect(await longTurn.commit([held], 'a-long-turn')).toEqual([]);
    await longTurn.close();
    await postMessage(platform, ana.token, room, '@nova one more thing');
    const next = await wakeInProcess(platform, nova, room, { home, extra: { breaker } });
    expect(next.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    // The breaker still counts the wakes that answered: a third answering wake trips it.
    await postMessage(platform, ana.token, room, '@nova last one');
    const tripping = await wakeInProcess(platform, nova, room, { home, extra: { breaker } });
    expect(tripping.outcome).toMatchObject({ outcome: 'declined' });
  });
  it.skipIf(POSTGRES_SKIP !== '')(`on PostgreSQL, a wake that finds its work held says when the holder's claims lapse, so whoever tries again need not wait past a dead holder${POSTGRES_SKIP}`, async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    const storeUrl = postgres.database('timeline_busy_lapse');
    const held = { timeline: room, kind: 'message' as const, item: (await postMessage(platform, ana.token, room, '@nova what is the status?')).uuid };
    // Another host's wake holds the message, its lease a minute long.
    const elsewhere = await PostgresChannelState.open(storeUrl, 'nova', { leaseTtlMs: 60_000, holder: { pid: 9, host: 'another-host', started: 1 } });
    try {
      expect(await elsewhere.take(held, 'their-wake')).toBe('taken');
      const wake = await wakeInProcess(platform, nova, room, { storeUrl });
      expect(wake.outcome).toMatchObject({ outcome: 'busy', posted: 0 });
      const lapse = (wake.outcome as { lapse?: { inMs: number; renewalMissed: boolean } }).lapse;
      expect(lapse?.inMs).toBeGreaterThan(0);
      expect(lapse?.inMs).toBeLessThanOrEqual(60_000);
      expect(lapse?.renewalMissed, 'its holder renews').toBe(false);
      expect(wake.logger.lines.join('\n')).toMatch(/INFO wake end .*outcome=busy posted=0 turns=0 lapses_in=\d+\.\d\ds duration=/);
    } finally {
      await elsewhere.close();
    }
  });
  it('a wake that finds nothing new is not counted either: only answering wakes trip the breaker', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova first');
    const first = await wakeInProcess(platform, nova, room, { extra: { breaker } });
    expect(first.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    const home = first.home;
    // Deliveries whose messages an earlier wake already answered: nothing new, four times over.
    for (let i = 0; i < 4; i++) expect((await wakeInProcess(platform, nova, room, { home, extra: { breaker } })).outcome.outcome).toBe('nothing-new');
    // The second answering wake is within max (2); the third trips it.
    await postMessage(platform, ana.token, room, '@nova second');
    expect((await wakeInProcess(platform, nova, room, { home, extra: { breaker } })).outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    await postMessage(platform, ana.token, room, '@nova third');
    expect((await wakeInProcess(platform, nova, room, { home, extra: { breaker } })).outcome).toMatchObject({ outcome: 'declined' });
  });
});
