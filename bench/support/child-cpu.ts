import { readFileSync } from 'node:fs';

/**
 * CPU time (user + system, ms) used so far by this process's waited-for children, from
 * /proc/self/stat (cutime + cstime). Linux only: undefined elsewhere. The kernel counts in clock
 * ticks (10 ms), so one short child reads coarsely; sums and means over many runs are accurate.
 */
const TICK_MS = 10; // USER_HZ is 100 on every mainstream Linux build

export function childCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); cutime and cstime are fields 16 and 17.
    const cutime = Number(fields[13]);
    const cstime = Number(fields[14]);
    if (!Number.isFinite(cutime) || !Number.isFinite(cstime)) return undefined;
    return (cutime + cstime) * TICK_MS;
  } catch {
    return undefined;
  }
}
