import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { scaled } from './time-scale.ts';

/**
 * A throwaway PostgreSQL cluster for tests: initdb + pg_ctl in a temp dir, listening only on a
 * unix socket in that dir (no TCP port at all), stopped and removed by stop(). initdb refuses to
 * run as root, so when the tests run as root the cluster runs as `nobody`.
 *
 * `postgresBinaries()` is undefined when Debian's postgresql package is not installed: callers
 * skip with that reason in the test's name (see `POSTGRES_SKIP`).
 */
export interface PostgresCluster {
  /** A postgres:// URL for the cluster's `postgres` database over its socket. */
  readonly url: string;
  /** A fresh, empty database on the cluster (one per test keeps tests apart). */
  createDatabase(name: string): string;
  /** `pg_ctl restart -m immediate`: the server dies without a checkpoint (a crash) and comes back. */
  crashRestart(): Promise<void>;
  /** Stops the server as a crash would (`-m immediate`), keeping its data; `start()` brings it back. */
  halt(): Promise<void>;
  start(): Promise<void>;
  /** `pg_amcheck` over every database (B-tree and heap checks): its report, empty when all is sound. */
  integrityReport(): string;
  stop(): void;
}

export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

export const POSTGRES_SKIP = postgresBinaries() ? '' : ' (skipped: PostgreSQL binaries not found under /usr/lib/postgresql/*/bin; install Debian\'s postgresql)';

const asRoot = process.getuid?.() === 0;

function run(bin: string, args: string[]): string {
  const command = asRoot ? 'setpriv' : bin;
  const argv = asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', bin, ...args] : args;
  return execFileSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function runAsync(bin: string, args: string[]): Promise<void> {
  const command = asRoot ? 'setpriv' : bin;
  const argv = asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', bin, ...args] : args;
  return new Promise((resolve, reject) => execFile(command, argv, (error, _stdout, stderr) => (error ? reject(new Error(`${bin} ${args.at(-1)}: ${stderr || error.message}`)) : resolve())));
}

export function startPostgres(): PostgresCluster {
  const bin = postgresBinaries();
  if (!bin) throw new Error('PostgreSQL binaries not found');
  const dir = mkdtempSync(join(tmpdir(), 'acx-pg-'));
  // The unprivileged server must own its dir; the socket dir is the same one.
  chmodSync(dir, 0o777);
  if (asRoot) execFileSync('chown', ['nobody:nogroup', dir]);
  const data = join(dir, 'data');
  run(join(bin, 'initdb'), ['-D', data, '-U', 'acx', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const serverOptions = `-c listen_addresses='' -c unix_socket_directories='${dir}' -c fsync=off -c max_connections=200`;
  const pgCtlArgs = (...args: string[]) => ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', serverOptions, ...args];
  run(join(bin, 'pg_ctl'), pgCtlArgs('start'));
  // Asynchronous, so a process that also serves (a chaos run's model server) keeps serving meanwhile.
  const pgCtl = (...args: string[]) => runAsync(join(bin, 'pg_ctl'), pgCtlArgs(...args));
  const psql = join(bin, 'psql');
  const url = (db: string) => `postgres://acx@/${db}?host=${encodeURIComponent(dir)}`;
  return {
    url: url('postgres'),
    createDatabase(name) {
      run(psql, ['-h', dir, '-U', 'acx', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE "${name}"`]);
      return url(name);
    },
    crashRestart: () => pgCtl('-m', 'immediate', 'restart'),
    halt: () => pgCtl('-m', 'immediate', 'stop'),
    start: () => pgCtl('start'),
    integrityReport() {
      const found = spawnSync(asRoot ? 'setpriv' : join(bin, 'pg_amcheck'), [
        ...(asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', join(bin, 'pg_amcheck')] : []),
        '-h', dir, '-U', 'acx', '--all', '--install-missing', '--heapallindexed',
      ], { encoding: 'utf8' });
      return `${found.stdout}${found.stderr}`.trim() + (found.status === 0 ? '' : `\n(pg_amcheck exited ${found.status})`);
    },
    stop() {
      spawnSync(asRoot ? 'setpriv' : join(bin, 'pg_ctl'), asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop'] : ['-D', data, '-m', 'immediate', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * One throwaway cluster for the enclosing test file or describe block, started before its tests
 * when the binaries are there (nothing otherwise: the tests skip with POSTGRES_SKIP) and stopped
 * after them. `database(prefix)` gives each test a fresh, empty database's URL.
 */
export function postgresForSuite(): { database(prefix: string): string } {
  let cluster: PostgresCluster | undefined;
  let databases = 0;
  beforeAll(() => {
    if (!POSTGRES_SKIP) cluster = startPostgres();
  }, scaled(120_000));
  afterAll(() => cluster?.stop());
  return { database: (prefix) => cluster!.createDatabase(`${prefix}_${++databases}`) };
}
