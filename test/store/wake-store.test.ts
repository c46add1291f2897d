// Wake mode's state: events recorded once by id, one live wake per session (a dead one's lease is
// taken over, a live one's never), a lease given back only when nothing is pending, and a
// circuit breaker that trips over its cap and resets after its cooldown once the burst cleared.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentHolder, holderIsAlive, type LeaseHolder, WakeStore } from '../../src/store/wake-store.ts';

let dir: string;
let alive: Set<number>;
let store: WakeStore;
const other = (pid: number): LeaseHolder => ({ pid, host: 'this-host', started: 1 });
const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-wake-store-'));
  alive = new Set();
  store = new WakeStore(join(dir, 'wake.db'), { isAlive: (holder) => alive.has(holder.pid) });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('WakeStore', () => {
  it('records an event once by its id and hands out pending events in arrival order', () => {
    expect(store.admit('s', { id: 'b', text: 'second?' }, OFF, other(1))).toEqual({ kind: 'leader', eventIsNew: true, breaker: 'none' });
    expect(store.admit('s', { id: 'a', text: 'first?' }, OFF, other(1)).eventIsNew).toBe(true);
    expect(store.admit('s', { id: 'b', text: 'again' }, OFF, other(1)).eventIsNew).toBe(false);
    expect(store.nextPending('s')).toMatchObject({ eventId: 'b', text: 'second?', seq: 1 });
    store.markDone('s', ['b'], 'ok');
    expect(store.nextPending('s')).toMatchObject({ eventId: 'a', seq: 2 });
    expect(store.item('s', 'b')).toMatchObject({ state: 'done', reply: 'ok' });
  });

  it("never takes a live wake's lease, and takes over a dead one's", () => {
    alive.add(1);
    expect(store.admit('s', { id: 'x', text: 'x' }, OFF, other(1)).kind).toBe('leader');
    expect(store.admit('s', { id: 'y', text: 'y' }, OFF, other(2))).toMatchObject({ kind: 'busy', holder: { pid: 1 } });
    alive.delete(1);
    expect(store.admit('s', undefined, OFF, other(3)).kind).toBe('leader');
  });

  it('gives the lease back only when nothing is pending, so a late event is never stranded', () => {
    alive.add(1);
    store.admit('s', { id: 'x', text: 'x' }, OFF, other(1));
    store.markDone('s', ['x'], 'done');
    store.admit('s', { id: 'late', text: 'late' }, OFF, other(2)); // busy: recorded for the leader
    expect(store.release('s', other(1)), 'the leader must answer the late event first').toBe(false);
    store.markDone('s', ['late'], 'done');
    expect(store.release('s', other(1))).toBe(true);
    expect(store.admit('s', undefined, OFF, other(2)).kind).toBe('leader');
  });

  it('trips the breaker over its cap and resets it after the cooldown once the burst cleared', () => {
    const breaker = { max: 2, windowMs: 10_000, cooldownMs: 5_000 };
    const at = (seconds: number) => store.admit('s', undefined, breaker, other(1), seconds * 1000);
    expect(at(0).kind).toBe('leader');
    expect(at(1).kind).toBe('leader');
    expect(at(2)).toEqual({ kind: 'declined', eventIsNew: false, wakesInWindow: 3, breaker: 'tripped' });
    expect(store.isTripped('s')).toBe(true);
    expect(at(8), 'cooldown passed, but the burst is still in the window').toMatchObject({ kind: 'declined', breaker: 'still-tripped' });
    expect(at(25), 'the window holds only this wake now').toMatchObject({ kind: 'leader', breaker: 'reset' });
    expect(at(26)).toMatchObject({ kind: 'leader', breaker: 'none' });
    expect(store.isTripped('s')).toBe(false);
  });

  it('keeps the event of a declined wake', () => {
    const breaker = { max: 1, windowMs: 60_000, cooldownMs: 60_000 };
    store.admit('s', { id: 'a', text: 'a' }, breaker, other(1), 0);
    expect(store.admit('s', { id: 'b', text: 'b' }, breaker, other(1), 1).kind).toBe('declined');
    expect(store.items('s').map((item) => [item.eventId, item.state])).toEqual([
      ['a', 'pending'],
      ['b', 'pending'],
    ]);
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
