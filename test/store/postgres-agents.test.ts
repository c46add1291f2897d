// Several agents on one PostgreSQL database (a worker's --agents a=DIR,b=DIR, or wakes of
// different agents on one --store): each agent's sessions are its own, as each agent's SQLite
// files under <home>/agents/<id>/ are, even when two agents use the same session id — and the
// same turn id, since a wake derives its turn ids from the session and the event.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { LeaseHolder } from '../../src/store/lease-holder.ts';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import { openPostgresStores, postgresAgentIds } from '../../src/store/postgres-stores.ts';
import { PostgresWakeStore } from '../../src/store/postgres-wake-store.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';

const postgres = postgresForSuite();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close();
});

const OFF = { max: 0, windowMs: 1000, cooldownMs: 1000 };
const holder = (pid: number): LeaseHolder => ({ pid, host: 'test-host', started: 1 });

async function journalFor(url: string, agentId: string): Promise<PostgresJournalStore> {
  const journal = await PostgresJournalStore.open(url, { agentId });
  closers.push(() => journal.close());
  return journal;
}

async function wakesFor(url: string, agentId: string): Promise<PostgresWakeStore> {
  const wakes = await PostgresWakeStore.open(url, { agentId });
  closers.push(() => wakes.close());
  return wakes;
}

describe('agents sharing one PostgreSQL store', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`keep apart the journals of two agents with the same session and turn ids${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('agents_journal');
    const [a, b] = [await journalFor(url, 'alpha'), await journalFor(url, 'beta')];
    for (const [journal, said] of [[a, 'from alpha'], [b, 'from beta']] as const) {
      await journal.transaction(async () => {
        await journal.ensureSession('s1');
        await journal.startTurn('s1:e1:1', 's1');
        await journal.appendMessage('s1', 's1:e1:1', 'user', { role: 'user', content: said });
        await journal.setSessionAttribute('s1', 'title', said);
      });
    }
    await a.updateTurn('s1:e1:1', { status: 'done', finalText: 'alpha done' });
    expect((await a.messages('s1')).map((m) => m.message.content)).toEqual(['from alpha']);
    expect((await b.messages('s1')).map((m) => m.message.content)).toEqual(['from beta']);
    expect(await a.sessionAttribute('s1', 'title')).toBe('from alpha');
    expect((await b.turn('s1:e1:1'))?.status, "alpha's turn ending leaves beta's running").toBe('running');
    expect((await b.unfinishedTurn('s1'))?.id).toBe('s1:e1:1');
    expect(await a.unfinishedTurn('s1')).toBeUndefined();

    expect(await a.leases!.take('s1', 'worker-1', 60_000)).toBe(true);
    expect(await b.leases!.take('s1', 'worker-2', 60_000), "alpha's lease on s1 is not beta's").toBe(true);

    await a.deleteSession('s1');
    expect(await a.hasSession('s1')).toBe(false);
    expect(await b.hasSession('s1'), "deleting alpha's s1 leaves beta's").toBe(true);
    expect((await b.listSessions()).map((s) => s.id)).toEqual(['s1']);
    expect(await a.listSessions()).toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`keep apart two agents' inboxes, leases and breakers for one session id${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('agents_wakes');
    const [a, b] = [await wakesFor(url, 'alpha'), await wakesFor(url, 'beta')];
    expect(await a.admit('s1', { id: 'e1', text: 'to alpha' }, OFF, holder(1))).toMatchObject({ kind: 'leader', eventIsNew: true });
    expect(await b.admit('s1', { id: 'e1', text: 'to beta' }, OFF, holder(2)), "beta's first e1 is new, and alpha's lease is not in its way").toMatchObject({
      kind: 'leader',
      eventIsNew: true,
    });
    expect((await a.pending('s1')).map((item) => item.text)).toEqual(['to alpha']);
    expect((await b.pending('s1')).map((item) => item.text)).toEqual(['to beta']);
    await a.markDone('s1', ['e1'], 'answered');
    expect((await b.item('s1', 'e1'))?.state).toBe('pending');
    expect(await a.release('s1', holder(1))).toBe(true);
    expect(await b.liveLeaseHolder('s1')).toMatchObject({ pid: 2 });

    const breaker = { max: 1, windowMs: 60_000, cooldownMs: 60_000 };
    await a.admit('s2', undefined, breaker, holder(1), 1);
    expect((await a.admit('s2', undefined, breaker, holder(1), 2)).kind).toBe('declined');
    expect((await b.admit('s2', undefined, breaker, holder(2), 3)).kind, "alpha's tripped breaker is not beta's").toBe('leader');
    expect(await b.isTripped('s2')).toBe(false);

    await a.deleteSession('s1');
    expect(await a.items('s1')).toEqual([]);
    expect((await b.items('s1')).map((item) => item.eventId)).toEqual(['e1']);
    expect((await a.sessions()).map((s) => s.sessionId)).toEqual(['s2']);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`lists which agents have sessions on the store, and opens each agent's stores${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('agents_listing');
    await (await journalFor(url, 'alpha')).ensureSession('s1');
    await (await wakesFor(url, 'beta')).admit('s9', { id: 'e', text: 'x' }, OFF, holder(1));
    expect(await postgresAgentIds(url)).toEqual(['alpha', 'beta']);
    const { journal, wakes } = await openPostgresStores(url, 'beta');
    closers.push(async () => {
      await journal.close();
      await wakes.close();
    });
    expect(await journal.listSessions()).toEqual([]);
    expect((await wakes.sessions()).map((s) => s.sessionId)).toEqual(['s9']);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`moves sessions written before agents were told apart to the agent 'default'${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('agents_upgrade');
    // The schema as the first acx on PostgreSQL left it (migration 1 of each store), with a session in it.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const { migratePostgres } = await import('../../src/store/postgres-migrations.ts');
      const { JOURNAL_MIGRATIONS } = await import('../../src/store/postgres-journal-schema.ts');
      const { WAKE_MIGRATIONS } = await import('../../src/store/postgres-wake-store.ts');
      await migratePostgres(pool, JOURNAL_MIGRATIONS.slice(0, 2), 'acx_journal_migrations');
      await migratePostgres(pool, WAKE_MIGRATIONS.slice(0, 1), 'acx_wake_migrations');
      await pool.query("INSERT INTO acx_sessions (id, created_at, updated_at) VALUES ('old', 'x', 'x')");
      await pool.query("INSERT INTO acx_turns (id, session_id, status, started_at) VALUES ('t-old', 'old', 'running', 'x')");
      await pool.query("INSERT INTO acx_wake_inbox (session_id, event_id, seq, text, state, received_at) VALUES ('old', 'e', 1, 'hi', 'pending', 'x')");
    } finally {
      await pool.end();
    }
    const journal = await journalFor(url, 'default');
    expect((await journal.unfinishedTurn('old'))?.id).toBe('t-old');
    expect((await (await journalFor(url, 'alpha')).listSessions()).map((s) => s.id)).toEqual([]);
    expect((await (await wakesFor(url, 'default')).pending('old')).map((item) => item.text)).toEqual(['hi']);
  });
});
