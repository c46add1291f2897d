// A session wake whose lease is taken over mid-turn (on PostgreSQL: it went unrenewed for a TTL,
// so another wake took the session) stops its turn instead of running a second turn of the
// session beside the new holder's: outcome lease-lost, its batch left pending and the lease not
// given back. The wake that then answers the session continues the same turn from the journal:
// the event is answered once, and the tool the stopped turn ran is not run again. Real
// PostgreSQL for the wake store and the journal, with a scripted model.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { wake } from '../../../src/frontends/wake/session.ts';
import { createEngineHarness } from '../../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../../src/model/providers.ts';
import type { LeaseHolder } from '../../../src/store/lease-holder.ts';
import { PostgresWakeStore } from '../../../src/store/postgres-wake-store.ts';
import { tool } from '../../../src/tools/tool.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { leaseTakingTool, takeWakeLease } from '../../support/lease-taker.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../../support/postgres.ts';
import { scriptedModel } from '../../support/scripted-model.ts';
import { scaled } from '../../support/time-scale.ts';

const postgres = postgresForSuite();
const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };
const NO_PACING = { enabled: false, charsPerSecond: 17, floorMs: 0, maxBuilds: 1 };
/** The wake on another host that takes the session over. */
const thief: LeaseHolder = { pid: 4242, host: 'another-host', started: 1 };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a session wake that loses its lease mid-turn', { timeout: scaled(60_000) }, () => {
  it.skipIf(POSTGRES_SKIP !== '')(`stops the turn, leaves the batch pending and the session to its new holder, which answers it once${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('lease_lost');
    const db = new pg.Pool({ connectionString: url, max: 1 });
    cleanups.push(() => db.end());
    let phase: 'first wake' | 'takeover' = 'first wake';
    const ran: string[] = [];
    const longJob = leaseTakingTool(takeWakeLease((sql, values) => db.query(sql, values), 'room', thief), () => ran.push(`long_job in ${phase}`));
    const report = tool({
      name: 'report',
      description: 'Reports the result',
      inputSchema: z.object({}),
      capabilityScopes: [],
      kind: 'edit',
      effect: 'unsafe',
      execute: async () => void ran.push(`report in ${phase}`),
    });
    // One script across both wakes: the second model call is the turn's next step, whoever makes it.
    const model = scriptedModel([{ toolCalls: [{ name: 'long_job', input: {} }] }, { toolCalls: [{ name: 'report', input: {} }] }, { text: 'Done and reported.' }]);
    const wakeOnce = async (leaseTtlMs: number) => {
      const store = await PostgresWakeStore.open(url, { agentId: 'default', leaseTtlMs });
      const harness = createEngineHarness({ model: fromLanguageModel(model), store: url, agentId: 'default' });
      cleanups.push(async () => {
        await harness.close?.();
        await store.close();
      });
      const logger = createMemoryLogger();
      const replies: string[] = [];
      const outcome = await wake({
        agent: new HarnessAgent({ harness, tools: [longJob, report], permissionMode: 'allow-all' }),
        store,
        sessionId: 'room',
        event: phase === 'first wake' ? { id: 'e1', text: 'Run the long job, then report.' } : undefined,
        breaker: OFF,
        pacing: NO_PACING,
        logger,
        onReply: (_items, result) => void replies.push(result.text),
      });
      return { outcome, replies, log: logger.lines.join('\n'), store };
    };

    // A short lease, noticed soon once taken (renewed every third of it), yet one a loaded machine renews in time.
    const first = await wakeOnce(scaled(300));
    expect(first.outcome).toEqual({ outcome: 'lease-lost', answered: 0, failedEvents: [] });
    expect(first.log).toMatch(/WARNING wake end session=room outcome=lease-lost answered=0 reason="the lease on session room lapsed/);
    expect(ran, 'the stopped turn did not go on to its next tool').toEqual(['long_job in first wake']);
    expect(first.replies).toEqual([]);
    // Nor did it write the turn's end: settling its calls or its status as cancelled could overwrite
    // what the new holder writes to the same turn. It stands as a crash would leave it.
    expect((await db.query('SELECT status FROM acx_turns')).rows.map((row) => row.status)).toEqual(['running']);
    expect((await db.query("SELECT tool_name, status FROM acx_tool_calls WHERE result LIKE '%Cancelled%'")).rows).toEqual([]);
    expect((await first.store.items('room')).map((item) => [item.eventId, item.state, item.batchId])).toEqual([['e1', 'pending', 'e1']]);
    expect(await first.store.liveLeaseHolder('room'), 'not given back: the session is no longer its to give').toMatchObject({ pid: thief.pid });

    // The new holder gives the session up unanswered (as if it died); the next wake answers the batch.
    await first.store.abandon('room', thief);
    phase = 'takeover';
    const takeover = await wakeOnce(15_000);
    expect(takeover.outcome).toEqual({ outcome: 'answered', answered: 1, failedEvents: [] });
    expect(takeover.replies).toEqual(['Done and reported.']);
    expect(ran, 'the same turn, continued: long_job stands from the journal and is not run again').toEqual(['long_job in first wake', 'report in takeover']);
    expect((await takeover.store.items('room')).map((item) => [item.eventId, item.state, item.reply])).toEqual([['e1', 'done', 'Done and reported.']]);
    expect(model.calls).toHaveLength(3);
  });
});
