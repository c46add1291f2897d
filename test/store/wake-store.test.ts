// Wake mode's state: events recorded once by id, one live wake per session (a dead one's lease is
// taken over, a live one's never), a lease given back only when nothing is pending, and a
// circuit breaker that trips over its cap and resets after its cooldown once the burst cleared.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentHolder, holderIsAlive, type LeaseHolder, SqliteWakeStore, type WakeStore } from '../../src/store/wake-store.ts';

let dir: string;
let alive: Set<number>;
let store: WakeStore;
const other = (pid: number): LeaseHolder => ({ pid, host: 'this-host', started: 1 });
const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-wake-store-'));
  alive = new Set();
  store = new SqliteWakeStore(join(dir, 'wake.db'), { isAlive: (holder) => alive.has(holder.pid) });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('WakeStore', () => {
  it('records an event once by its id and hands out pending events in arrival order', async () => {
    expect(await store.admit('s', { id: 'b', text: 'second?' }, OFF, other(1))).toEqual({ kind: 'leader', eventIsNew: true, breaker: 'none' });
    expect((await store.admit('s', { id: 'a', text: 'first?' }, OFF, other(1))).eventIsNew).toBe(true);
    expect((await store.admit('s', { id: 'b', text: 'again' }, OFF, other(1))).eventIsNew).toBe(false);
    expect(await store.nextPending('s')).toMatchObject({ eventId: 'b', text: 'second?', seq: 1 });
    await store.markDone('s', ['b'], 'ok');
    expect(await store.nextPending('s')).toMatchObject({ eventId: 'a', seq: 2 });
    expect(await store.item('s', 'b')).toMatchObject({ state: 'done', reply: 'ok' });
  });

  it("never takes a live wake's lease, and takes over a dead one's", async () => {
    alive.add(1);
    expect((await store.admit('s', { id: 'x', text: 'x' }, OFF, other(1))).kind).toBe('leader');
    expect(await store.admit('s', { id: 'y', text: 'y' }, OFF, other(2))).toMatchObject({ kind: 'busy', holder: { pid: 1 } });
    alive.delete(1);
    expect((await store.admit('s', undefined, OFF, other(3))).kind).toBe('leader');
  });

  it('gives the lease back only when nothing is pending, so a late event is never stranded', async () => {
    alive.add(1);
    await store.admit('s', { id: 'x', text: 'x' }, OFF, other(1));
    await store.markDone('s', ['x'], 'done');
    await store.admit('s', { id: 'late', text: 'late' }, OFF, other(2)); // busy: recorded for the leader
    expect(await store.release('s', other(1)), 'the leader must answer the late event first').toBe(false);
    await store.markDone('s', ['late'], 'done');
    expect(await store.release('s', other(1))).toBe(true);
    expect((await store.admit('s', undefined, OFF, other(2))).kind).toBe('leader');
  });

  it('trips the breaker over its cap and resets it after the cooldown once the burst cleared', async () => {
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

  it('keeps the event of a declined wake', async () => {
    const breaker = { max: 1, windowMs: 60_000, cooldownMs: 60_000 };
    await store.admit('s', { id: 'a', text: 'a' }, breaker, other(1), 0);
    expect((await store.admit('s', { id: 'b', text: 'b' }, breaker, other(1), 1)).kind).toBe('declined');
    expect((await store.items('s')).map((item) => [item.eventId, item.state])).toEqual([
      ['a', 'pending'],
      ['b', 'pending'],
    ]);
  });
});

describe('holderIsAlive', () => {
  it('this process is alive; an exited process is not; a holder on another host counts as alive', async () => {
    expect(holderIsAlive(currentHolder())).toBe(true);
    const exited = spawnSync(process.execPath, ['-e', '0']);
    expect(holderIsAlive({ pid: exited.pid!, host: currentHolder().host, started: null })).toBe(false);
    expect(holderIsAlive({ pid: 1, host: 'elsewhere.example', started: null })).toBe(true);
  });

  it('a reused pid with another start time is not the holder', async () => {
    expect(holderIsAlive({ ...currentHolder(), started: (currentHolder().started ?? 0) + 12345 })).toBe(currentHolder().started === null);
  });
});
