import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * CPU time (ms) a PostgreSQL server on this machine has spent so far: its postmaster and every
 * process it started (the backends serving the bench's connections, the WAL writer, ...), from
 * each one's /proc/<pid>/schedstat (nanoseconds on the CPU). A bench's own CPU leaves this out,
 * and on a busy machine it is the figure that shows what a round trip costs the server rather
 * than how long the server waited for a core. Backends that exit are not counted, so read it
 * around work whose connections stay open (a pool's).
 *
 * Returns undefined when the server is not a local one this process may read (not Linux, not a
 * superuser connection that can SHOW data_directory, another machine's server).
 */
export async function postgresServerCpu(url: string): Promise<(() => number) | undefined> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
    const postmaster = Number(readFileSync(join(rows[0]!.data_directory, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!Number.isInteger(postmaster) || onCpuNs(postmaster) === undefined) return undefined;
    return () => serverCpuMs(postmaster);
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

function serverCpuMs(postmaster: number): number {
  let ns = onCpuNs(postmaster) ?? 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (parentOf(Number(entry)) === postmaster) ns += onCpuNs(Number(entry)) ?? 0;
  }
  return ns / 1e6;
}

function onCpuNs(pid: number): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The field after the command name (in parentheses, which may hold spaces) is the state, then the parent.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}
