import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from './sqlite.ts';
import { AcxError } from '../util/errors.ts';

/**
 * SQLite access shared by every store: one file, WAL journal so a SIGKILL at any instant
 * leaves a consistent database, forward-only migrations keyed by `PRAGMA user_version`.
 */
export type Database = DatabaseSync;

/** A migration is the SQL that takes the schema from version `index` to `index + 1`. */
export type Migration = string | ((db: Database) => void);

export interface OpenDatabaseOptions {
  /** Ordered migrations; entry i upgrades user_version i -> i+1. */
  migrations?: readonly Migration[];
  readOnly?: boolean;
}

const BUSY_TIMEOUT_MS = 5000;
const SQLITE_BUSY = 5;

/**
 * Switches the file to WAL. When several processes open a fresh file at once, the switch can
 * fail at once with "database is locked" (SQLite calls no busy handler there), so it is retried
 * within the busy timeout.
 */
function enableWal(db: Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      db.exec('PRAGMA journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== SQLITE_BUSY || Date.now() > deadline) throw error;
      Atomics.wait(nap, 0, 0, 5);
    }
  }
}

export function openDatabase(path: string, options: OpenDatabaseOptions = {}): Database {
  if (path !== ':memory:' && !options.readOnly) mkdirSync(dirname(path), { recursive: true });
  let db: Database;
  try {
    db = new DatabaseSync(path, { readOnly: options.readOnly ?? false });
  } catch (error) {
    throw new AcxError('store-open', `Cannot open the database at ${path}: ${(error as Error).message}`, {
      hint: 'Check that the directory exists and is writable, and that the file is a SQLite database.',
      cause: error,
    });
  }
  db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (!options.readOnly) {
    enableWal(db);
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
    if (options.migrations) migrate(db, options.migrations, path);
  }
  return db;
}

/**
 * Brings the schema up to date. Several processes may open a fresh store at the same instant, so
 * the version is read again inside the write lock (BEGIN IMMEDIATE) and only the steps still
 * missing then are run: a process that waited for another's migration finds it done. The read
 * outside the lock only spares an up-to-date store the write lock on every open.
 */
export function migrate(db: Database, migrations: readonly Migration[], label = 'database'): void {
  if (checkedVersion(db, migrations, label) === migrations.length) return;
  transaction(db, () => {
    for (let version = checkedVersion(db, migrations, label); version < migrations.length; version++) {
      const step = migrations[version]!;
      if (typeof step === 'string') db.exec(step);
      else step(db);
      db.exec(`PRAGMA user_version = ${version + 1}`);
    }
  });
}

function checkedVersion(db: Database, migrations: readonly Migration[], label: string): number {
  const current = userVersion(db);
  if (current > migrations.length) {
    throw new AcxError(
      'store-too-new',
      `${label} has schema version ${current}, newer than this acx understands (${migrations.length}).`,
      { hint: 'Upgrade acx; migrations only move forward.' },
    );
  }
  return current;
}

export function userVersion(db: Database): number {
  const row = db.prepare('PRAGMA user_version').get() as { user_version: number } | undefined;
  return row?.user_version ?? 0;
}

/**
 * Runs `fn` in a transaction. Nested calls join the outer transaction (savepoints would let an
 * inner failure half-commit an outer unit, which the journal never wants).
 */
const transactionStatements = new WeakMap<Database, { begin: StatementSync; commit: StatementSync }>();

export function transaction<T>(db: Database, fn: () => T): T {
  if (db.isTransaction) return fn();
  let statements = transactionStatements.get(db);
  if (!statements) {
    statements = { begin: db.prepare('BEGIN IMMEDIATE'), commit: db.prepare('COMMIT') };
    transactionStatements.set(db, statements);
  }
  statements.begin.run();
  try {
    const result = fn();
    statements.commit.run();
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
