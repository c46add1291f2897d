// processRunning: a process that has exited but is not yet reaped (a zombie) is not running,
// though it still exists; the MCP client relies on this to see a dead server before its pipes close.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { processExists, processRunning } from '../../src/util/process-exists.ts';
import { waitFor } from '../support/wait.ts';

const isZombie = (pid: number) => {
  try {
    return /^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('processRunning', () => {
  // Zombies are told apart through Linux's /proc; elsewhere there is nothing to test here.
  it.skipIf(!existsSync('/proc/self/stat'))('is true for a live process, false for a zombie (which still exists) and for a reaped one', async () => {
    expect(processRunning(process.pid)).toBe(true);
    // The shell starts `sleep 0` and replaces itself with `sleep 30`, which never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
      const zombie = Number(line.toString().trim());
      await waitFor('the child to become a zombie', () => isZombie(zombie), { withinMs: 20_000, everyMs: 10 });
      expect(processExists(zombie)).toBe(true);
      expect(processRunning(zombie)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
      await once(parent, 'exit');
    }
    expect(processRunning(parent.pid!)).toBe(false);
  });
});
