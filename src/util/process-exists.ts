import { readFileSync } from 'node:fs';

/** Whether a process with this pid exists on this host (another user's counts: EPERM says it is there). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the process is still running: it exists and has not exited. A child that exited stays
 * a zombie until Node reaps it on a later turn of the event loop; Linux's /proc says so at once
 * (elsewhere, existing is all there is to go by).
 */
export function processRunning(pid: number): boolean {
  if (!processExists(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
