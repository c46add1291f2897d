import { hostname } from 'node:os';
import { readFileSync, readlinkSync } from 'node:fs';
import { processExists, processRunning } from '../util/process-exists.ts';

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
  /** Where its pid means it (machineId), when known: a store shared between hosts can then tell, on that machine, that it exited. */
  machine?: string;
}

/** This process, as a lease holder. */
export function currentHolder(): LeaseHolder {
  const machine = machineId();
  return { pid: process.pid, host: hostname(), started: processStart(process.pid), ...(machine ? { machine } : {}) };
}

let thisMachine: string | null | undefined;

/**
 * Where this process's pid names it: this boot of this machine and this pid namespace
 * (`<boot id>/pid:[<inode>]`, Linux; null elsewhere). Unlike a hostname, which two hosts (two
 * containers) may share, a boot id is drawn at random each boot; two containers on one host share
 * it, and their pid namespaces tell them apart unless they share pids too.
 */
export function machineId(): string | null {
  if (thisMachine !== undefined) return thisMachine;
  try {
    thisMachine = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    thisMachine = null;
  }
  return thisMachine;
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

/**
 * Whether a holder recorded in a store many hosts share (PostgreSQL) is known to have exited: it
 * ran where this process runs (the same machineId) and its pid no longer runs, or runs another
 * process. A holder elsewhere, or one that recorded no machine, is never known to be gone: its
 * claim is left to lapse, as a holder that is alive would have it.
 */
export function holderIsGone(holder: LeaseHolder): boolean {
  const here = machineId();
  if (here === null || holder.machine !== here || !Number.isInteger(holder.pid) || holder.pid <= 0) return false;
  if (!processRunning(holder.pid)) return true;
  const started = processStart(holder.pid);
  return holder.started !== null && started !== null && started !== holder.started;
}

/**
 * `holderIsGone`, asked by a store acting for `judge`: only a judge running where it says it runs
 * (a test may open a store as a holder on another host) can check the pids recorded there.
 */
export function holderGoneAsSeenBy(recorded: LeaseHolder, judge: LeaseHolder): boolean {
  return judge.machine !== undefined && judge.machine === machineId() && holderIsGone(recorded);
}

/**
 * `holderGoneAsSeenBy` for a holder as a store recorded it (JSON): a claim's or a wake lease's
 * LeaseHolder, or a session lease's call id with its process's (src/harness/session-lease.ts).
 * Anything acx did not write so is not judged.
 */
export function recordedHolderGone(recorded: string, judge: LeaseHolder = currentHolder()): boolean {
  let holder: unknown;
  try {
    holder = JSON.parse(recorded);
  } catch {
    return false;
  }
  return typeof holder === 'object' && holder !== null && holderGoneAsSeenBy(holder as LeaseHolder, judge);
}
