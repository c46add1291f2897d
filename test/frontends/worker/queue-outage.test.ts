// The wake queue while PostgreSQL is down (found by the chaos run): pg-boss reports a background
// error on every poll and pass, and each became a WARNING carrying the error as JSON with its
// stack — hundreds of lines a minute per worker. Now a few are written, each with the message
// only, and the rest are counted in one line.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { errorMessage } from '../../../src/core/errors.ts';
import { openWakeQueue, WAKE_QUEUE } from '../../../src/frontends/worker/queue.ts';
import { startWorker } from '../../../src/frontends/worker/worker.ts';
import { PostgresWakeStore } from '../../../src/store/postgres-wake-store.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { tempDir } from '../../support/cli.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../../support/postgres.ts';
import { waitFor } from '../../support/wait.ts';

let cluster: PostgresCluster | undefined;
beforeAll(() => {
  if (!POSTGRES_SKIP) cluster = startPostgres();
}, 120_000);
afterAll(() => cluster?.stop());

/**
 * One worker for one agent, `solo`, on a fresh database, whose timeline jobs run `wakeTimeline`
 * (given a connection of its own to halt the server with), and one such job sent; `check` then
 * runs, with the queue's jobs' states at hand. The heartbeat is far longer than a test: a job left
 * active is never retried here.
 */
async function withSoloWorker(
  database: string,
  wakeTimeline: (db: pg.Pool) => () => Promise<{ outcome: 'answered' }>,
  check: (fleet: { logger: ReturnType<typeof createMemoryLogger>; states: () => Promise<Array<{ state: string; retry_count: number }>> }) => Promise<void>,
): Promise<void> {
  const url = cluster!.createDatabase(database);
  const logger = createMemoryLogger('debug');
  const queue = await openWakeQueue(url, logger, { heartbeatSeconds: 3600, superviseSeconds: 1 });
  const store = await PostgresWakeStore.open(url, { agentId: 'solo' });
  const db = new pg.Pool({ connectionString: url, max: 1 });
  db.on('error', () => {});
  const worker = await startWorker({
    queue,
    agents: [{ name: 'solo', store, prepare: () => Promise.reject(new Error('no session jobs in this test')), wakeTimeline: wakeTimeline(db) }],
    breaker: { max: 0, windowMs: 1000, cooldownMs: 1000 },
    pacing: { enabled: false, charsPerSecond: 1, floorMs: 0, maxBuilds: 1 },
    maxAttempts: 3,
    logger,
    pollSeconds: 1,
  });
  try {
    const timeline = '0190a5f2-0000-7000-8000-0000000000bb';
    await queue.send({ kind: 'timeline', agent: 'solo', sessionId: `timeline:${timeline}`, timeline, deliveryId: 'd1', platformUrl: 'http://127.0.0.1:9' });
    await check({ logger, states: async () => (await db.query<{ state: string; retry_count: number }>('SELECT state, retry_count FROM pgboss.job WHERE name = $1', [WAKE_QUEUE])).rows });
  } finally {
    await cluster!.start().catch(() => {});
    await worker.stop();
    await queue.close();
    await store.close();
    await db.end();
  }
}

describe('the wake queue during a PostgreSQL outage', { timeout: 180_000 }, () => {
  it('refuses to open with what was wrong and what to do when the server is still down after its wait', async () => {
    const url = `postgres://acx@/chaos?host=${encodeURIComponent(join(tempDir('acx-no-pg-'), 'no-server-here'))}`;
    const opened = openWakeQueue(url, createMemoryLogger('debug'), { startupWait: { maxWaitMs: 0 } });
    await expect(opened).rejects.toMatchObject({
      code: 'store-open',
      message: expect.stringMatching(/^Cannot open the wake queue in the PostgreSQL database at postgres:\/\/acx@\/chaos\?host=\S+: connect ENOENT /),
      hint: expect.stringContaining('Check that the server is up'),
    });
  });

  it.skipIf(POSTGRES_SKIP !== '')(`opened while the server is down (a router or worker restarted mid-outage), it waits and opens once the server is back${POSTGRES_SKIP}`, async () => {
    const url = cluster!.createDatabase('late');
    const logger = createMemoryLogger('debug');
    await cluster!.halt();
    let opened: Awaited<ReturnType<typeof openWakeQueue>> | undefined;
    try {
      const opening = openWakeQueue(url, logger, { startupWait: { maxWaitMs: 600_000, maxDelayMs: 200 } });
      let failed: unknown;
      opening.catch((error: unknown) => (failed = error));
      await waitFor('the open says it waits', () => logger.lines.some((line) => line.startsWith('WARNING postgres not reachable yet ')) || failed !== undefined, { withinMs: 30_000 });
      expect(failed, 'still waiting, not failed').toBeUndefined();
      expect(logger.lines.filter((line) => line.startsWith('WARNING postgres not reachable yet ')), 'said once').toHaveLength(1);
      await cluster!.start();
      opened = await opening;
      expect(logger.lines.some((line) => /^INFO postgres reachable url=\S+ waited=[\d.]+s$/.test(line))).toBe(true);
      expect(await opened.send({ kind: 'session', agent: 'a', sessionId: 's', event: { id: 'e', text: 'hi' } } as never)).toMatch(/\S/);
    } finally {
      await cluster!.start().catch(() => {});
      await opened?.close();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`logs a few queue errors by their message and counts the rest${POSTGRES_SKIP}`, async () => {
    const logger = createMemoryLogger('debug');
    const queue = await openWakeQueue(cluster!.createDatabase('outage'), logger, { superviseSeconds: 1 });
    // A worker's poll: its failures are the ones pg-boss copies into plain objects with their stack.
    await queue.boss.work(WAKE_QUEUE, { pollingIntervalSeconds: 0.5 }, async () => {});
    let errors = 0;
    const many = new Promise<void>((resolve) =>
      queue.boss.on('error', () => {
        if (++errors === 12) resolve();
      }),
    );
    await cluster!.halt();
    await many;
    await cluster!.start();
    const written = logger.lines.filter((line) => line.includes('queue error'));
    expect(written).toHaveLength(5);
    for (const line of written) {
      expect(line).toMatch(/^WARNING queue error error="[^"{]*"$/);
      expect(line).not.toContain('stack');
    }
    await queue.close();
    expect(logger.lines.filter((line) => line.includes('queue error')).at(-1)).toMatch(/^WARNING queue error suppressed=\d+ window=/);
  });
  // Found by the chaos run: a job whose wake failed because the server went away was failed into
  // pg-boss while the server was still away, which could not record it; the job stayed active
  // until its heartbeat lapsed, and its timeline's other jobs (one active per session) waited too.
  it.skipIf(POSTGRES_SKIP !== '')(`a job failed by the server going away is retried once the server is back, not left active until its heartbeat lapses${POSTGRES_SKIP}`, async () => {
    const woken: string[] = [];
    const failOnce = (db: pg.Pool) => async () => {
      woken.push(woken.length === 0 ? 'failed' : 'answered');
      if (woken.length === 1) {
        await cluster!.halt();
        await db.query('SELECT 1');
      }
      return { outcome: 'answered' as const };
    };
    await withSoloWorker('failed_mid_outage', failOnce, async ({ logger, states }) => {
      await waitFor('the wake did not fail', () => logger.lines.some((line) => line.startsWith('WARNING worker job retried ')), { withinMs: 30_000 });
      await cluster!.start();
      await waitFor('the job was not retried and answered', async () => (await states()).every((job) => job.state === 'completed'), {
        withinMs: 60_000,
        explain: async () => `${JSON.stringify(await states())}\n${logger.lines.join('\n')}`,
      });
      expect(await states()).toEqual([{ state: 'completed', retry_count: 1 }]);
      expect(woken).toEqual(['failed', 'answered']);
    });
  });
  // Found by the chaos run: a job answered just as PostgreSQL restarted could not be settled by
  // pg-boss; it stayed active until its heartbeat lapsed (10-15 s), and so did its timeline's next
  // jobs (one active per session), so every message behind it waited that long.
  it.skipIf(POSTGRES_SKIP !== '')(`a job answered as the server goes away is recorded completed once it is back, not left active until its heartbeat lapses${POSTGRES_SKIP}`, async () => {
    let woken = 0;
    let halted = false;
    // Answered; the server goes away before the job is settled.
    const answerThenHalt = () => async () => {
      woken += 1;
      if (woken === 1) {
        await cluster!.halt();
        halted = true;
      }
      return { outcome: 'answered' as const };
    };
    await withSoloWorker('answered_mid_outage', answerThenHalt, async ({ logger, states }) => {
      await waitFor('the wake did not answer', () => halted, { withinMs: 30_000 });
      await cluster!.start();
      await waitFor('the job was not recorded completed', async () => (await states()).every((job) => job.state === 'completed'), {
        withinMs: 60_000,
        explain: async () => `${JSON.stringify(await states())}\n${logger.lines.join('\n')}`,
      });
      expect(await states(), 'completed on its first attempt').toEqual([{ state: 'completed', retry_count: 0 }]);
      expect(woken, 'answered once').toBe(1);
    });
  });
  // Found by the chaos run: a router whose enqueue failed during an outage dropped the delivery
  // (the platform had its 202, the poll its claimed item), and the last messages were lost.
  it.skipIf(POSTGRES_SKIP !== '')(`a send made while the server is down is made once it is back${POSTGRES_SKIP}`, async () => {
    const url = cluster!.createDatabase('send_when_back');
    const queue = await openWakeQueue(url, createMemoryLogger('debug'), { startupWait: { maxDelayMs: 200 } });
    try {
      await cluster!.halt();
      const retries: string[] = [];
      let sent: Promise<string>;
      try {
        sent = queue.sendWhenReachable({ kind: 'session', agent: 'a', sessionId: 'late', event: { id: 'e1', text: 'hi' } }, (error, attempt) => retries.push(`${attempt}: ${errorMessage(error)}`));
        await waitFor('the send was not retried', () => retries.length > 0, { withinMs: 30_000 });
      } finally {
        await cluster!.start();
      }
      const id = await sent;
      expect(retries[0]).toMatch(/^1: connect ENOENT /);
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      try {
        expect((await db.query('SELECT data FROM pgboss.job WHERE id = $1', [id])).rows).toEqual([{ data: expect.objectContaining({ sessionId: 'late' }) }]);
      } finally {
        await db.end();
      }
    } finally {
      await cluster!.start().catch(() => {});
      await queue.close();
    }
  });
});
