import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { processExists } from '../util/process-exists.ts';

/**
 * A process as the holder of a lease or claim on one host: its pid and start time, enough to
 * tell whether it still runs. Only meaningful on the host that wrote it — the shared PostgreSQL
 * stores judge a holder by the expiry it keeps renewing instead.
 */
export interface LeaseHolder {
  pid: number;
  host: string;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for it. */
  started: number | null;
}

/** This process, as a lease holder. */
export function currentHolder(): LeaseHolder {
  return { pid: process.pid, host: hostname(), started: processStart(process.pid) };
}

/** Whether two holders are the same process (the start time is left to `holderIsAlive`). */
export function sameHolder(a: LeaseHolder, b: LeaseHolder): boolean {
  return a.pid === b.pid && a.host === b.host;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return null;
  }
}

/**
 * Whether a lease holder is still running. A holder on another host cannot be checked from here
 * and counts as alive (never steal a live claim); on this host, the pid must exist and, where
 * the start time can be read, be the same process.
 */
export function holderIsAlive(holder: LeaseHolder): boolean {
  if (holder.host !== hostname()) return true;
  if (!processExists(holder.pid)) return false;
  const started = processStart(holder.pid);
  return holder.started === null || started === null || started === holder.started;
}
