import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { currentHolder, holderIsGone, machineId } from '../../src/store/lease-holder.ts';

/** The pid of a process that has exited (and been reaped). */
function exitedPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid!;
}

const linux = process.platform === 'linux';

describe('a lease holder recorded in a store many hosts share', () => {
  it.skipIf(!linux)('names its machine by boot and pid namespace, not by hostname (skipped off Linux: no /proc)', () => {
    expect(machineId()).toMatch(/^[0-9a-f-]{36}\/pid:\[\d+\]$/);
    expect(currentHolder().machine).toBe(machineId());
  });

  it.skipIf(!linux)('is gone once its process has exited, when it ran on this machine (skipped off Linux: no /proc)', () => {
    expect(holderIsGone(currentHolder())).toBe(false);
    expect(holderIsGone({ ...currentHolder(), pid: exitedPid() })).toBe(true);
    // Its pid now runs another process (reused): the start time says so.
    expect(holderIsGone({ ...currentHolder(), started: (currentHolder().started ?? 0) + 1 })).toBe(true);
  });

  it('is never known to be gone when it ran elsewhere, or did not say where', () => {
    const dead = exitedPid();
    expect(holderIsGone({ pid: dead, host: 'this-host-name', started: null, machine: '00000000-0000-4000-8000-000000000000/pid:[1]' })).toBe(false);
    expect(holderIsGone({ pid: dead, host: currentHolder().host, started: null })).toBe(false);
    expect(holderIsGone({ ...currentHolder(), pid: Number.NaN })).toBe(false);
    expect(holderIsGone({ ...currentHolder(), pid: 0 })).toBe(false);
  });
});
