// Wake mode's state, on both stores (the SQLite wake.db and a real throwaway PostgreSQL cluster,
// skipped saying why when the binaries are missing): events recorded once by id, one live wake
// per session (a dead one's lease is taken over, a live one's never), a lease given back only
// when nothing is pending, and a circuit breaker that trips over its cap and resets after its
// cooldown once the burst cleared. Liveness differs by store: a pid on one host (SQLite), a
// lease expiry its holder keeps renewing (PostgreSQL, tested with real processes killed).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { AcxError } from '../../src/core/errors.ts';
import { PostgresWakeStore } from '../../src/store/postgres-wake-store.ts';
import { openWakeStore } from '../../src/store/open-wake-store.ts';
import { SqliteWakeStore } from '../../src/store/sqlite-wake-store.ts';
import { currentHolder, holderIsAlive, type LeaseHolder, type WakeStore } from '../../src/store/wake-store.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { watchQueries } from '../support/postgres-queries.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const other = (pid: number): LeaseHolder => ({ pid, host: 'this-host', started: 1 });
const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };

const postgres = postgresForSuite();
const dirs: string[] = [];
let opened: WakeStore[] = [];
/** SQLite: which pids count as alive. */
let alive = new Set<number>();

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const store of opened) await store.close();
  opened = [];
  alive = new Set();
});

const track = <S extends WakeStore>(store: S): S => (opened.push(store), store);
const freshDatabase = () => postgres.database('wake');

const stores: Array<[name: string, open: () => Promise<WakeStore>, skip: string]> = [
  [
    'sqlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'acx-wake-store-'));
      dirs.push(dir);
      return track(new SqliteWakeStore(join(dir, 'wake.db'), { isAlive: (holder) => alive.has(holder.pid) }));
    },
    '',
  ],
  ['postgres', async () => track(await PostgresWakeStore.open(freshDatabase(), { agentId: 'default' })), POSTGRES_SKIP],
];

describe.each(stores)('WakeStore on %s', (_name, open, skip) => {
  it.skipIf(skip !== '')(`records an event once by its id and hands out pending events in arrival order${skip}`, async () => {
    const store = await open();
    expect(await store.admit('s', { id: 'b', text: 'second?' }, OFF, other(1))).toEqual({ kind: 'leader', eventIsNew: true, breaker: 'none' });
    expect((await store.admit('s', { id: 'a', text: 'first?' }, OFF, other(1))).eventIsNew).toBe(true);
    expect((await store.admit('s', { id: 'b', text: 'again' }, OFF, other(1))).eventIsNew).toBe(false);
    expect(await store.nextPending('s')).toMatchObject({ eventId: 'b', text: 'second?', seq: 1, addressed: true });
    await store.markDone('s', ['b'], 'ok');
    expect(await store.nextPending('s')).toMatchObject({ eventId: 'a', seq: 2 });
    expect(await store.item('s', 'b')).toMatchObject({ state: 'done', reply: 'ok' });
  });

  it.skipIf(skip !== '')(`gives the lease back only when nothing is pending, so a late event is never stranded${skip}`, async () => {
    const store = await open();
    alive.add(1);
    await store.admit('s', { id: 'x', text: 'x' }, OFF, other(1));
    await store.markDone('s', ['x'], 'done');
    expect((await store.admit('s', { id: 'late', text: 'late' }, OFF, other(2))).kind, 'recorded for the leader').toBe('busy');
    expect(await store.liveLeaseHolder('s')).toMatchObject({ pid: 1 });
    expect(await store.release('s', other(1)), 'the leader must answer the late event first').toBe(false);
    await store.markDone('s', ['late'], 'done');
    expect(await store.release('s', other(1))).toBe(true);
    expect(await store.liveLeaseHolder('s')).toBeUndefined();
    expect((await store.admit('s', undefined, OFF, other(2))).kind).toBe('leader');
  });

  it.skipIf(skip !== '')(`a session id, an event id and a text with quotes, backslashes and a semicolon are locked, leased, recorded and released like any other${skip}`, async () => {
    const store = await open();
    alive.add(1);
    const odd = String.raw`it's \'; SELECT pg_sleep(30); --`;
    // The event's own fields too: its id, text and sender as written, whatever they hold.
    const text = String.raw`a "quote", it's \n a backslash; DROP TABLE acx_wake_inbox; -- ünïcødé 🎉` + '\nsecond line';
    expect(await store.admit(odd, { id: "q'1", text, sender: "o'brien\\", senderKind: 'human' }, OFF, other(1))).toEqual({ kind: 'leader', eventIsNew: true, breaker: 'none' });
    expect((await store.admit(odd, { id: 'r', text: 'r' }, OFF, other(2))).kind).toBe('busy');
    await store.markDone(odd, ["q'1", 'r'], 'done');
    expect(await store.release(odd, other(1))).toBe(true);
    expect(await store.liveLeaseHolder(odd)).toBeUndefined();
    expect(await store.items(odd)).toMatchObject([{ eventId: "q'1", sessionId: odd, text, sender: "o'brien\\" }, { eventId: 'r', sessionId: odd }]);
  });

  it.skipIf(skip !== '')(`trips the breaker over its cap and resets it after the cooldown once the burst cleared${skip}`, async () => {
    const store = await open();
    const breaker = { max: 2, windowMs: 10_000, cooldownMs: 5_000 };
    const at = (seconds: number) => store.admit('s', undefined, breaker, other(1), seconds * 1000);
    expect((await at(0)).kind).toBe('leader');
    expect((await at(1)).kind).toBe('leader');
    expect(await at(2)).toEqual({ kind: 'declined', eventIsNew: false, wakesInWindow: 3, breaker: 'tripped' });
    expect(await store.isTripped('s')).toBe(true);
    expect(await at(8), 'cooldown passed, but the burst is still in the window').toMatchObject({ kind: 'declined', breaker: 'still-tripped' });
    expect(await at(25), 'the window holds only this wake now').toMatchObject({ kind: 'leader', breaker: 'reset' });
    expect(await at(26)).toMatchObject({ kind: 'leader', breaker: 'none' });
    expect(await store.isTripped('s')).toBe(false);
  });

  it.skipIf(skip !== '')(`busy wakes while a leader holds the lease are not counted, so they never trip the breaker${skip}`, async () => {
    // A live leader's long turn while events keep arriving, each job retried by the worker: not a wake storm.
    const store = await open();
    alive.add(1);
    const breaker = { max: 2, windowMs: 60_000, cooldownMs: 60_000 };
    expect((await store.admit('s', { id: 'first', text: 'first' }, breaker, other(1), 0)).kind).toBe('leader');
    for (let i = 0; i < 12; i++) {
      expect(await store.admit('s', { id: `e${i % 3}`, text: `event ${i % 3}` }, breaker, other(2), 1000 + i), `busy admission ${i + 1}`).toEqual({
        kind: 'busy',
        eventIsNew: i < 3,
        holder: expect.objectContaining({ pid: 1 }),
        breaker: 'none',
      });
    }
    expect(await store.isTripped('s')).toBe(false);
    expect((await store.pending('s')).map((item) => item.eventId), 'every event waits for the leader').toEqual(['first', 'e0', 'e1', 'e2']);
    // The leader's own next wake is the second counted: still under the cap.
    expect(await store.admit('s', undefined, breaker, other(1), 2000)).toEqual({ kind: 'leader', eventIsNew: false, breaker: 'none' });
  });

  it.skipIf(skip !== '')(`keeps the event of a declined wake${skip}`, async () => {
    const store = await open();
    const breaker = { max: 1, windowMs: 60_000, cooldownMs: 60_000 };
    await store.admit('s', { id: 'a', text: 'a' }, breaker, other(1), 0);
    expect((await store.admit('s', { id: 'b', text: 'b' }, breaker, other(1), 1)).kind).toBe('declined');
    expect((await store.items('s')).map((item) => [item.eventId, item.state])).toEqual([
      ['a', 'pending'],
      ['b', 'pending'],
    ]);
  });

  it.skipIf(skip !== '')(`fixes a batch, grows it by build, counts attempts, stores errors scrubbed, and forgets a session${skip}`, async () => {
    const store = await open();
    for (const id of ['e1', 'e2', 'e3']) await store.admit('s', { id, text: id, sender: 'ann', senderKind: 'ai', addressed: id !== 'e2' }, OFF, other(1));
    await store.admit('s', { id: 'mine', text: 'routed back', own: true }, OFF, other(1));
    expect(await store.openBatch('s')).toBeUndefined();
    expect(await store.fixBatch('s', ['e1', 'e2'])).toBe('e1');
    expect((await store.openBatch('s'))?.map((item) => [item.eventId, item.batchId, item.build])).toEqual([
      ['e1', 'e1', 1],
      ['e2', 'e1', 1],
    ]);
    expect(await store.growBatch('s', 'e1', ['e3', 'e1'])).toBe(2);
    expect((await store.openBatch('s'))?.map((item) => [item.eventId, item.build, item.addressed, item.senderKind])).toEqual([
      ['e1', 1, true, 'ai'],
      ['e2', 1, false, 'ai'],
      ['e3', 2, true, 'ai'],
    ]);
    expect(await store.markAttempt('s', ['e1', 'e2', 'e3'])).toBe(1);
    await store.markAttempt('s', ['e1']);
    expect(await store.markAttempt('s', ['e2', 'e1'])).toBe(3);
    const key = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    await store.recordError('s', ['e1'], `HTTP 401 for ${key}`);
    expect((await store.item('s', 'e1'))?.error).not.toContain(key);
    await store.markFailed('s', ['e1', 'e2'], `still ${key}`);
    await store.markDone('s', ['e3'], 'answered');
    expect((await store.items('s')).map((item) => [item.eventId, item.state, item.error?.includes(key) ?? null, item.doneAt !== null])).toEqual([
      ['e1', 'failed', false, true],
      ['e2', 'failed', false, true],
      ['e3', 'done', null, true],
      ['mine', 'done', null, true],
    ]);
    expect(await store.pending('s')).toEqual([]);
    await store.admit('only-woken', undefined, OFF, other(1));
    expect((await store.sessions()).map((s) => [s.sessionId, s.lastEventAt !== null]).sort()).toEqual([
      ['only-woken', false],
      ['s', true],
    ]);
    await store.deleteSession('s');
    expect(await store.items('s')).toEqual([]);
    expect((await store.sessions()).map((s) => s.sessionId)).toEqual(['only-woken']);
  });
});

describe('WakeStore on sqlite: a lease holder is a process on this host', () => {
  it("never takes a live wake's lease, and takes over a dead one's", async () => {
    const [, open] = stores[0]!;
    const store = await open();
    alive.add(1);
    expect((await store.admit('s', { id: 'x', text: 'x' }, OFF, other(1))).kind).toBe('leader');
    expect(await store.admit('s', { id: 'y', text: 'y' }, OFF, other(2))).toMatchObject({ kind: 'busy', holder: { pid: 1 } });
    alive.delete(1);
    expect(await store.liveLeaseHolder('s')).toBeUndefined();
    expect((await store.admit('s', undefined, OFF, other(3))).kind).toBe('leader');
  });
});

/** A wake in another process that takes the session's lease on `url`, says so, and runs until killed. */
function holderProcess(url: string, ttlMs: number): Promise<{ pid: number; kill: () => Promise<void> }> {
  const source = `
const { PostgresWakeStore } = await import(${JSON.stringify(join(ROOT, 'src/store/postgres-wake-store.ts'))});
const store = await PostgresWakeStore.open(process.argv[1], { agentId: 'default', leaseTtlMs: Number(process.argv[2]) });
const admission = await store.admit('s', { id: 'held', text: 'mine' }, { max: 0, windowMs: 1, cooldownMs: 1 });
console.log(admission.kind);
setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source, url, String(ttlMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').once('data', (line: string) => {
      if (line.trim() !== 'leader') reject(new Error(`the holder process did not lead: ${line} ${stderr}`));
      resolve({ pid: child.pid!, kill: () => (child.kill('SIGKILL'), exited) });
    });
    child.on('exit', (code) => reject(new Error(`the holder process exited (${code}): ${stderr}`)));
  });
}

/** Admits as `holder` until it leads, up to `boundMs`; how many busy answers it got first. */
async function admitUntilLeader(store: WakeStore, holder: LeaseHolder, boundMs: number): Promise<number> {
  const deadline = Date.now() + boundMs;
  for (let busy = 0; ; busy++) {
    const admission = await store.admit('s', undefined, OFF, holder);
    if (admission.kind === 'leader') return busy;
    if (Date.now() > deadline) throw new Error(`still ${admission.kind} after ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether `signal` aborts within `boundMs` (a bound on the wait only: the answer is what matters). */
function abortsWithin(signal: AbortSignal, boundMs: number): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const bound = setTimeout(() => resolve(false), boundMs);
    signal.addEventListener('abort', () => (clearTimeout(bound), resolve(true)), { once: true });
  });
}

describe('WakeStore on postgres: a lease is a row with an expiry its holder renews', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`admission and release each take few round trips: the lease is written, or dropped, with the COMMIT; each reads with its lock${POSTGRES_SKIP}`, async () => {
    const store = track(await PostgresWakeStore.open(freshDatabase(), { agentId: 'default' }));
    const sent: string[] = [];
    watchQueries(store.pool, (text) => sent.push(text));
    expect(await store.admit('s', { id: 'e', text: 'e' }, OFF, other(1))).toEqual({ kind: 'leader', eventIsNew: true, breaker: 'none' });
    // The lock, the event recorded and the lease read; the breaker's count; the lease taken with the COMMIT.
    expect(sent).toEqual([
      expect.stringMatching(/^BEGIN; SELECT pg_advisory_xact_lock\(.*; WITH recorded AS \(INSERT INTO acx_wake_inbox .*'s', 'e', COALESCE\(MAX\(seq\), 0\) \+ 1, 'e', .* AS holder$/),
      expect.stringMatching(/^WITH pruned AS \(DELETE FROM acx_wake_wakes /),
      expect.stringMatching(/^INSERT INTO acx_wake_leases [^;]*'\{"pid":1,"host":"this-host","started":1\}'[^;]*;\nCOMMIT$/),
    ]);
    const [event] = await store.pending('s');
    expect(event, 'recorded at the server\'s time, as an ISO string').toMatchObject({ eventId: 'e', text: 'e', receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    expect(Math.abs(Date.parse(event!.receivedAt) - Date.now())).toBeLessThan(60_000);
    expect((await store.admit('s', undefined, OFF, other(2))).kind, 'the lease stands').toBe('busy');
    await store.markDone('s', ['e'], 'done');
    const before = sent.length;
    expect(await store.release('s', other(1))).toBe(true);
    expect(sent.slice(before)).toEqual([
      expect.stringMatching(/^BEGIN; SELECT pg_advisory_xact_lock\(.*; SELECT EXISTS \(SELECT 1 FROM acx_wake_inbox WHERE agent_id = 'default' AND session_id = 's' AND state = 'pending'\) AS waiting, /),
      expect.stringMatching(/^DELETE FROM acx_wake_leases [^;]*;\nCOMMIT$/),
    ]);
    expect((await store.admit('s', undefined, OFF, other(2))).kind, 'released: the next wake leads').toBe('leader');
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a holder whose lease lapsed and was taken over is told by its loss signal; a live holder's never aborts${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    // Leases a loaded machine still renews in time (ACX_TEST_TIME_SCALE): the loss here is the test's doing.
    const ttlMs = scaled(300);
    const liveTtlMs = scaled(1000);
    const told: string[] = [];
    const stalled = track(await PostgresWakeStore.open(url, { agentId: 'default', leaseTtlMs: ttlMs, onLeaseLost: (session) => told.push(session) }));
    const live = track(await PostgresWakeStore.open(url, { agentId: 'default', leaseTtlMs: liveTtlMs }));
    const taker = track(await PostgresWakeStore.open(url, { agentId: 'default' }));
    expect((await stalled.admit('s', undefined, OFF, other(1))).kind).toBe('leader');
    expect((await live.admit('t', undefined, OFF, other(3))).kind).toBe('leader');
    const lost = stalled.leaseLost('s');
    const liveLost = live.leaseLost('t');
    expect(lost.aborted).toBe(false);

    // As if the holder stalled past its TTL: the lease lapses on the server and another wake takes
    // it. (Expired again should a renewal of the holder land between the two.)
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      for (let tries = 0; ; tries++) {
        await check.query("UPDATE acx_wake_leases SET expires_at = now() - interval '1 second' WHERE session_id = 's'");
        if ((await taker.admit('s', undefined, OFF, other(2))).kind === 'leader') break;
        expect(tries).toBeLessThan(20);
      }
    } finally {
      await check.end();
    }
    expect(await abortsWithin(lost, 20 * ttlMs), "the stalled holder's next renewal finds the lease gone").toBe(true);
    expect(AcxError.hasCode(lost.reason, 'lease-lost')).toBe(true);
    expect((lost.reason as Error).message).toMatch(/the lease on session s lapsed/);
    expect(told, 'onLeaseLost is still told').toEqual(['s']);
    expect(await taker.liveLeaseHolder('s')).toMatchObject({ pid: 2 });

    // Meanwhile the live holder renewed through many TTLs, refusing every other wake, and was never told it lost anything.
    for (let tries = 0; tries < 10; tries++) {
      expect((await taker.admit('t', undefined, OFF, other(4))).kind, `try ${tries + 1}`).toBe('busy');
      await new Promise((resolve) => setTimeout(resolve, (3 * liveTtlMs) / 10));
    }
    expect(liveLost.aborted).toBe(false);
    // Given back, the lease cannot be lost; taken again, it has a signal of its own.
    expect(await live.release('t', other(3))).toBe(true);
    expect(live.leaseLost('t').aborted).toBe(false);
    expect(await taker.release('s', other(2))).toBe(true);
    expect((await stalled.admit('s', undefined, OFF, other(1))).kind).toBe('leader');
    expect(stalled.leaseLost('s').aborted, 'a new signal after the new admit').toBe(false);
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`a SIGKILLed holder on this machine: a wake here leads at once, its lease still running${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const holder = await holderProcess(url, 600_000); // no lapse within the test: only the exit frees it
    const store = track(await PostgresWakeStore.open(url, { agentId: 'default' }));
    expect(await store.admit('s', undefined, OFF), 'the holder is alive: its lease stands').toMatchObject({ kind: 'busy', holder: { pid: holder.pid } });
    await holder.kill();
    // A wake that says it runs on another host cannot check the pid, and waits for the lease.
    expect(await store.admit('s', undefined, OFF, other(2))).toMatchObject({ kind: 'busy', holder: { pid: holder.pid } });
    expect(await store.admit('s', undefined, OFF)).toMatchObject({ kind: 'leader' });
    expect(await store.liveLeaseHolder('s')).toMatchObject({ pid: process.pid });
    expect((await store.pending('s')).map((item) => item.eventId), "the dead wake's event waits for the new leader").toEqual(['held']);
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`a SIGKILLed holder's lease is taken over by a wake on another host once it expires, not before${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const ttlMs = scaled(1500);
    const holder = await holderProcess(url, ttlMs);
    const store = track(await PostgresWakeStore.open(url, { agentId: 'default' }));
    const busy = await store.admit('s', undefined, OFF, other(2));
    expect(busy, 'the holder is alive: its lease stands').toMatchObject({ kind: 'busy', holder: { pid: holder.pid } });
    await holder.kill();
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      // The dead holder renews no more: this is when its lease ends, by the server's clock.
      const { rows } = await check.query<{ expires_at: Date }>("SELECT expires_at FROM acx_wake_leases WHERE session_id = 's'");
      const expiry = rows[0]!.expires_at;
      await admitUntilLeader(store, other(2), ttlMs + scaled(20_000));
      const { rows: at } = await check.query<{ now: Date }>('SELECT now()');
      expect(at[0]!.now.getTime(), 'taken over only after the expiry').toBeGreaterThanOrEqual(expiry.getTime());
      expect(await store.liveLeaseHolder('s')).toMatchObject({ pid: 2 });
      expect((await store.pending('s')).map((item) => item.eventId), "the dead wake's event waits for the new leader").toEqual(['held']);
    } finally {
      await check.end();
    }
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`a live holder's lease is never taken, however long it runs past its ttl${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const ttlMs = scaled(1000);
    const holder = await holderProcess(url, ttlMs);
    const store = track(await PostgresWakeStore.open(url, { agentId: 'default' }));
    try {
      // Five lease lifetimes: only renewals keep it, and every admission in between is refused.
      const until = Date.now() + 5 * ttlMs;
      let tries = 0;
      while (Date.now() < until) {
        expect(await store.admit('s', undefined, OFF, other(2)), `try ${++tries}`).toMatchObject({ kind: 'busy', holder: { pid: holder.pid } });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(tries).toBeGreaterThan(5);
    } finally {
      await holder.kill();
    }
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`a host whose clock jumps hours ahead counts its wakes on the server's clock: the breaker neither forgets nor misdates them${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const [steady, jumped] = [track(await PostgresWakeStore.open(url, { agentId: 'default' })), track(await PostgresWakeStore.open(url, { agentId: 'default' }))];
    const breaker = { max: 2, windowMs: 60_000, cooldownMs: 60_000 };
    expect(await steady.admit('s', undefined, breaker, other(1))).toMatchObject({ kind: 'leader', breaker: 'none' });
    await steady.release('s', other(1));
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 8 * 3_600_000 });
    try {
      expect(await jumped.admit('s', { id: 'e1', text: 'its own message, routed back', own: true }, breaker, other(2))).toMatchObject({ kind: 'leader', breaker: 'none' });
      await jumped.release('s', other(2));
    } finally {
      vi.useRealTimers();
    }
    // The third wake within one minute of the server's clock trips the breaker, whichever host counted the others.
    expect(await steady.admit('s', undefined, breaker, other(3))).toMatchObject({ kind: 'declined', breaker: 'tripped' });
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      const { rows } = await check.query<{ ahead: boolean }>("SELECT received_at::timestamptz > now() + interval '1 hour' AS ahead FROM acx_wake_inbox WHERE event_id = 'e1'");
      expect(rows[0]!.ahead, 'the event carries the server time').toBe(false);
    } finally {
      await check.end();
    }
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`wakes racing on one session from separate connections: one leader, every event numbered apart${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const racers = await Promise.all(Array.from({ length: 8 }, () => PostgresWakeStore.open(url, { agentId: 'default' }).then(track)));
    const admissions = await Promise.all(racers.map((store, i) => store.admit('s', { id: `e${i}`, text: `event ${i}` }, OFF, other(100 + i))));
    expect(admissions.filter((a) => a.kind === 'leader')).toHaveLength(1);
    const seqs = (await racers[0]!.items('s')).map((item) => item.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`a release racing an arriving event never strands it: either the leader sees it or the event's wake leads${POSTGRES_SKIP}`, async () => {
    const url = freshDatabase();
    const [leader, arriving] = [track(await PostgresWakeStore.open(url, { agentId: 'default' })), track(await PostgresWakeStore.open(url, { agentId: 'default' }))];
    for (let round = 0; round < 40; round++) {
      expect((await leader.admit('s', undefined, OFF, other(1))).kind).toBe('leader');
      const [released, admission] = await Promise.all([leader.release('s', other(1)), arriving.admit('s', { id: `late-${round}`, text: 'late' }, OFF, other(2))]);
      if (released) expect(admission.kind, `round ${round}: the lease was given back, so the late event's wake must lead`).toBe('leader');
      else expect(admission.kind, `round ${round}`).toBe('busy');
      // Whoever leads answers it, and gives the lease back.
      await arriving.markDone('s', [`late-${round}`], 'ok');
      const owner = released ? other(2) : other(1);
      expect(await (released ? arriving : leader).release('s', owner)).toBe(true);
    }
  }, scaled(60_000));

  it.skipIf(POSTGRES_SKIP !== '')(`openWakeStore picks the store by URL, and a wrong one fails clearly without the password${POSTGRES_SKIP}`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-wake-open-'));
    dirs.push(dir);
    expect(track(await openWakeStore({ stateDir: dir })).kind).toBe('sqlite');
    expect(track(await openWakeStore({ stateDir: dir, storeUrl: freshDatabase() })).kind).toBe('postgres');
    const wrong = `postgres://acx:hunter2secret@/nodb_here?host=${encodeURIComponent(join(dir, 'no-socket'))}`;
    const error = await openWakeStore({ stateDir: dir, storeUrl: wrong }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/Cannot connect to the PostgreSQL store/);
    expect(error?.message).not.toContain('hunter2secret');
  });
});

describe('holderIsAlive', () => {
  it('this process is alive; an exited process is not; a holder on another host counts as alive', () => {
    expect(holderIsAlive(currentHolder())).toBe(true);
    const exited = spawnSync(process.execPath, ['-e', '0']);
    expect(holderIsAlive({ pid: exited.pid!, host: currentHolder().host, started: null })).toBe(false);
    expect(holderIsAlive({ pid: 1, host: 'elsewhere.example', started: null })).toBe(true);
  });

  it('a reused pid with another start time is not the holder', () => {
    expect(holderIsAlive({ ...currentHolder(), started: (currentHolder().started ?? 0) + 12345 })).toBe(currentHolder().started === null);
  });
});
