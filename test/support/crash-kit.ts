import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Journal } from '../../src/store/journal.ts';
import { type JournalStore, SqliteJournalStore } from '../../src/store/journal-store.ts';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import pg from 'pg';
import { lapseSessionLease } from './lease-taker.ts';
import { POSTGRES_SKIP, postgresForSuite } from './postgres.ts';

/**
 * What the crash suites (the engine's and the ACP harness's) share: running a driver process to
 * its end or its SIGKILL, where a case's journal lives, and what the tools of
 * test/fixtures/crash-tools.ts did.
 */

export interface ChildRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a TypeScript driver script in a new Node process, to its exit or its death. */
export function runDriver(script: string, args: readonly string[], env: Record<string, string>): Promise<ChildRun> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', script, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
}

/**
 * Where a case's journal lives: the SQLite file under its home, or a fresh database on one
 * throwaway PostgreSQL cluster (ACX_TEST_STORE tells the driver).
 */
export interface CaseStore {
  env: Record<string, string>;
  open(): Promise<JournalStore>;
  /** After a SIGKILL: what the dead process held lapses, as it would once its lease ran out unrenewed. */
  lapse(): Promise<void>;
}

export type StoreCase = [name: string, skip: string, make: (home: string) => CaseStore];

/** The stores a crash suite runs on; `database` names the suite's PostgreSQL databases, `sessionId` the session its cases run. */
export function crashStores(database: string, sessionId = 'crash-session'): StoreCase[] {
  const postgres = postgresForSuite();
  return [
    // SQLite sees a dead process's lock go with it.
    ['sqlite', '', (home) => ({ env: {}, open: async () => new SqliteJournalStore(new Journal(join(home, 'journal.db'))), lapse: async () => {} })],
    [
      'postgres',
      POSTGRES_SKIP,
      () => {
        const url = postgres.database(database);
        return {
          env: { ACX_TEST_STORE: url },
          open: () => PostgresJournalStore.open(url, { agentId: 'default' }),
          // The session's lease, lapsed at once instead of a short one a live process on a loaded machine could lose.
          lapse: async () => {
            const client = new pg.Client({ connectionString: url });
            await client.connect();
            try {
              await lapseSessionLease((sql, values) => client.query(sql, values), sessionId);
            } finally {
              await client.end();
            }
          },
        };
      },
    ],
  ];
}

export function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** What the crash tools did, read from their logs: one line per run. */
export function effectsOf(effects: string) {
  return {
    send: lines(join(effects, 'send.log')),
    lookup: lines(join(effects, 'lookup.log')),
    save: lines(join(effects, 'save.log')),
    // The idempotent tool writes one file per idempotency key: a re-run must reuse the key.
    upserts: readdirSync(effects).filter((f) => f.startsWith('upsert-')).length,
  };
}
