// A small disk for the platform's home, which the `disk-full` fault fills: a tmpfs mounted in a
// mount namespace of its own (an unprivileged user namespace, so no root is needed), held by a
// process that does nothing else. The platform, and the commands that set its home up, run in
// that namespace (nsenter); this process reaches the mount through the holder's
// /proc/<pid>/root, to check the database and to fill and empty the disk.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';

export interface SmallDisk {
  /** The command line that runs `command args…` in the disk's namespace, where the mount is seen at its path. */
  inside(command: string, args: readonly string[]): [string, string[]];
  /**
   * The mount point's path as this process sees it: for plain file reads and writes. Not for
   * SQLite, which resolves the /proc link to this namespace's path: use `query`.
   */
  readonly outside: string;
  /** Runs `sql` on the SQLite file at `path` (as the disk's namespace sees it), read-only; the rows. */
  query(path: string, sql: string): unknown[];
  /** Takes every free byte (a file of that size); resolves to how many it took. */
  fill(): number;
  /** Gives the space back. */
  empty(): void;
  close(): void;
}

const FILLER = '.chaos-disk-filler';

/** Why this machine cannot have the small disk (no unshare, user namespaces off), or undefined when it can. */
export function smallDiskUnavailable(): string | undefined {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'true'], { encoding: 'utf8' });
  if (probe.error) return `unshare is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `unprivileged user and mount namespaces are not available (unshare: ${probe.stderr.trim() || `exit ${probe.status}`})`;
  return undefined;
}

/** Mounts a `sizeMb` tmpfs over the (empty) directory `mountPoint`, for as long as the returned disk is open. */
export async function mountSmallDisk(mountPoint: string, sizeMb: number): Promise<SmallDisk> {
  const holder: ChildProcess = spawn(
    'unshare',
    ['--user', '--map-root-user', '--mount', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${sizeMb}m,mode=0755 tmpfs "$1" && echo mounted && exec sleep 2147483647`, 'sh', mountPoint],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  holder.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.setEncoding('utf8').once('data', () => resolve());
    holder.once('close', (status) => reject(new Error(`the small disk could not be mounted (exit ${status}): ${stderr.trim()}`)));
  });
  const pid = holder.pid!;
  const outside = join(`/proc/${pid}/root`, mountPoint);
  const filler = join(outside, FILLER);
  // No --pid: nsenter then execs the command itself, so a signal to the child reaches it.
  const inside = (command: string, args: readonly string[]): [string, string[]] => ['nsenter', ['--target', String(pid), '--user', '--mount', '--preserve-credentials', '--', command, ...args]];
  return {
    inside,
    outside,
    fill() {
      const stat = statfsSync(outside);
      const free = stat.bavail * stat.bsize;
      // tmpfs allocates a fallocate'd file's pages at once: the disk is full when it returns.
      if (free > 0) execFileSync('fallocate', ['--length', String(free), filler]);
      return free;
    },
    empty: () => rmSync(filler, { force: true }),
    query(path, sql) {
      const script = `const { DatabaseSync } = await import('node:sqlite');
const db = new DatabaseSync(process.argv[1], { readOnly: true });
try { process.stdout.write(JSON.stringify(db.prepare(process.argv[2]).all())); } finally { db.close(); }`;
      const [command, args] = inside(process.execPath, ['--input-type=module', '-e', script, path, sql]);
      return JSON.parse(execFileSync(command, args, { encoding: 'utf8' })) as unknown[];
    },
    close: () => void holder.kill('SIGKILL'),
  };
}
