// The channel seam's memory of each timeline: marks, the seen-set and two-phase claims, in a real
// SQLite file, with real processes as claim holders.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChannelState, CLAIM_STALE_MS } from '../../src/channel/state.ts';
import { currentHolder } from '../../src/store/wake-store.ts';

const path = () => join(mkdtempSync(join(tmpdir(), 'acx-channel-')), 'channel.db');
const T = '0190a5f2-0000-7000-8000-000000000001';
const item = (n: number) => ({ timeline: T, kind: 'message' as const, item: `0190a5f2-0000-7000-8000-00000000000${n}` });

describe('channel state', () => {
  it('the per-timeline breaker trips past max wakes in the window, stays tripped, resets after its cooldown once the burst cleared', () => {
    let now = Date.parse('2026-12-01T10:00:00Z');
    const file = path();
    const state = new ChannelState(file, { now: () => new Date(now) });
    const settings = { max: 3, windowMs: 10_000, cooldownMs: 5_000 };
    const other = '0190a5f2-0000-7000-8000-00000000000f';
    const changes = [1, 2, 3, 4, 5].map(() => state.admitWake(T, settings).change);
    expect(changes).toEqual(['none', 'none', 'none', 'tripped', 'still-tripped']);
    expect(state.isTripped(T)).toBe(true);
    // Per timeline: another timeline's wakes are their own.
    expect(state.admitWake(other, settings)).toEqual({ change: 'none', wakesInWindow: 1 });
    // Past the cooldown but the window still holds the burst: still tripped.
    now += 6_000;
    expect(state.admitWake(T, settings).change).toBe('still-tripped');
    state.close();
    // Kept across opens; once the window has cleared, the next wake resets it.
    now += 11_000;
    const again = new ChannelState(file, { now: () => new Date(now) });
    expect(again.isTripped(T)).toBe(true);
    expect(again.admitWake(T, settings)).toEqual({ change: 'reset', wakesInWindow: 1 });
    expect(again.isTripped(T)).toBe(false);
    again.purge(T);
    expect(again.timelines()).toEqual([]);
    expect(again.admitWake(T, { ...settings, max: 0 }).change).toBe('none');
  });

  it('marks and the seen-set persist across opens, per timeline and kind', () => {
    const file = path();
    const state = new ChannelState(file);
    expect(state.mark(T, 'message')).toBeUndefined();
    state.setMark(T, 'message', 'm1');
    state.setMark(T, 'asset', 'a1');
    state.markSeen({ timeline: T, kind: 'task', item: 't1' });
    state.close();
    const again = new ChannelState(file);
    expect(again.mark(T, 'message')).toBe('m1');
    expect(again.mark(T, 'asset')).toBe('a1');
    expect(again.mark(T, 'webhook_event')).toBeUndefined();
    expect(again.hasSeen({ timeline: T, kind: 'task', item: 't1' })).toBe(true);
    expect(again.hasSeen({ timeline: T, kind: 'task', item: 't2' })).toBe(false);
    expect(again.timelines()).toEqual([T]);
    again.purge(T);
    expect(again.mark(T, 'message')).toBeUndefined();
    expect(again.timelines()).toEqual([]);
  });

  it('a claim is in flight, then done or abandoned; a done item is never taken again', () => {
    const state = new ChannelState(path());
    expect(state.take(item(1), 'wake-a')).toBe('taken');
    expect(state.phase(item(1))).toBe('in-flight');
    state.commit([item(1)], 'wake-a');
    expect(state.take(item(1), 'wake-b')).toBe('done');
    expect(state.take(item(2), 'wake-a')).toBe('taken');
    state.abandon([item(2)], 'wake-a', 'turn compacted away');
    expect(state.take(item(2), 'wake-b')).toBe('abandoned');
  });

  it("a live wake's claim is held — by another process or another wake of this one; a dead process's is resumed", async () => {
    const file = path();
    // A real other process holds the claim while it sleeps.
    const holderScript = `import { ChannelState } from ${JSON.stringify(join(import.meta.dirname, '../../src/channel/state.ts'))};
const s = new ChannelState(${JSON.stringify(file)}); console.log(s.take(${JSON.stringify(item(1))}, 'other')); setTimeout(() => {}, 60_000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', holderScript], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const state = new ChannelState(file);
    expect(state.take(item(1), 'mine')).toBe('held');
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    expect(state.take(item(1), 'mine')).toBe('resumed');
    expect(state.resumes(item(1))).toBe(1);
    expect(state.take(item(1), 'mine')).toBe('taken'); // this wake already holds it
    expect(state.take(item(1), 'another-wake-here')).toBe('held');
  });

  it('a claim not refreshed for 6 hours is taken over even from a live holder; a heartbeat keeps it', () => {
    const file = path();
    let now = new Date('2026-12-01T00:00:00Z');
    const holder = new ChannelState(file, { now: () => now });
    const other = new ChannelState(file, { now: () => now, holder: { ...currentHolder(), pid: 1 }, isAlive: () => true });
    expect(holder.take(item(1), 'long')).toBe('taken');
    now = new Date(now.getTime() + CLAIM_STALE_MS - 1000);
    holder.heartbeat([item(1)], 'long');
    now = new Date(now.getTime() + CLAIM_STALE_MS - 1000);
    expect(other.take(item(1), 'late')).toBe('held');
    now = new Date(now.getTime() + 2000);
    expect(other.take(item(1), 'late')).toBe('resumed');
  });

  it('two processes racing for one item: exactly one takes it', () => {
    const file = path();
    new ChannelState(file).close();
    const script = `import { ChannelState } from ${JSON.stringify(join(import.meta.dirname, '../../src/channel/state.ts'))};
const s = new ChannelState(${JSON.stringify(file)}); const wake = String(process.pid); const at = Number(process.argv[1]);
while (Date.now() < at) {} console.log(s.take(${JSON.stringify(item(3))}, wake));`;
    const at = String(Date.now() + 1500);
    const runs = Array.from({ length: 6 }, () => spawn(process.execPath, ['--input-type=module', '-e', script, at], { stdio: ['ignore', 'pipe', 'inherit'] }));
    return Promise.all(
      runs.map((child) => new Promise<string>((resolve) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.on('close', () => resolve(out.trim()));
      })),
    ).then((outcomes) => {
      // The winner exits; the others saw its claim while it lived, or took over after it exited.
      expect(outcomes.filter((o) => o === 'taken')).toHaveLength(1);
      expect(outcomes.every((o) => ['taken', 'held', 'resumed'].includes(o))).toBe(true);
    });
  });
});
