import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from './sqlite.ts';
import { AcxError } from '../core/errors.ts';

/**
 * SQLite access shared by every store: one file, WAL journal so a SIGKILL at any instant
 * leaves a consistent database, forward-only additive migrations keyed by `PRAGMA user_version`
 * (the rule is stated at migrate() below).
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
 * The rule every store's schema history keeps, so that a file written by a newer acx still
 * opens in an older one (a downgrade, two versions sharing one home, a memory database carried
 * from another installation):
 *
 * - Migrations are additive. A step may add tables, columns, indexes, triggers and views; it
 *   never drops, renames or redefines one, and adds nothing that would refuse a write an older
 *   acx makes: no NOT NULL column without a default, no UNIQUE index over an existing table, no
 *   foreign key into an existing table that blocks deleting from it.
 * - A new meaning for existing data goes into new columns or tables, never into new values of
 *   an existing column that an older acx would misread.
 * - An older acx opening a newer file runs no migration and ignores what it does not know: its
 *   reads take the columns they name, its writes name their columns, and the defaults of the
 *   columns it does not know fill them.
 * - An entry that has shipped is never edited; the list only grows.
 *
 * migrate() checks the structural half of this on every step it runs (assertAdditive below) and
 * refuses a step that breaks it, rolling the whole upgrade back.
 *
 * Several processes may open a fresh store at the same instant, so the version is read again
 * inside the write lock (BEGIN IMMEDIATE) and only the steps still missing then are run: a
 * process that waited for another's migration finds it done. The read outside the lock only
 * spares an up-to-date store the write lock on every open.
 */
export function migrate(db: Database, migrations: readonly Migration[], label = 'database'): void {
  if (userVersion(db) >= migrations.length) return;
  transaction(db, () => {
    let version = userVersion(db);
    // A fresh file has nothing to keep until its first step has run.
    let before = version === 0 ? undefined : schemaOf(db);
    for (; version < migrations.length; version++) {
      const step = migrations[version]!;
      if (typeof step === 'string') db.exec(step);
      else step(db);
      const after = schemaOf(db);
      if (before) assertAdditive(before, after, `${label}: migration ${version + 1}`);
      before = after;
      db.exec(`PRAGMA user_version = ${version + 1}`);
    }
  });
}

interface SchemaObject {
  type: string;
  /** The table an index or trigger belongs to. */
  table: string;
  sql: string | null;
  /** Tables only. */
  columns: { name: string; required: boolean }[];
  /** Tables only: `table(columns) on delete ACTION`. */
  foreignKeys: { key: string; target: string; blocksDelete: boolean }[];
}

/** Every schema object by name, with the columns and foreign keys of tables. */
function schemaOf(db: Database): Map<string, SchemaObject> {
  const objects = new Map<string, SchemaObject>();
  const rows = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%'").all() as {
    type: string;
    name: string;
    tbl_name: string;
    sql: string | null;
  }[];
  for (const row of rows) objects.set(row.name, { type: row.type, table: row.tbl_name, sql: row.sql, columns: [], foreignKeys: [] });
  const columns = db
    .prepare(
      `SELECT m.name AS tbl, c.name, c."notnull", c.dflt_value, c.pk FROM sqlite_master m, pragma_table_xinfo(m.name) c
       WHERE m.type = 'table' ORDER BY m.name, c.cid`,
    )
    .all() as { tbl: string; name: string; notnull: number; dflt_value: string | null; pk: number }[];
  for (const c of columns) {
    // Required: an INSERT that does not name the column fails.
    objects.get(c.tbl)?.columns.push({ name: c.name, required: c.notnull === 1 && c.dflt_value === null && c.pk === 0 });
  }
  const keys = db
    .prepare(
      `SELECT m.name AS tbl, f.id, f."table" AS target, f."from", f.on_delete FROM sqlite_master m, pragma_foreign_key_list(m.name) f
       WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq`,
    )
    .all() as { tbl: string; id: number; target: string; from: string; on_delete: string }[];
  const byKey = new Map<string, { tbl: string; target: string; from: string[]; onDelete: string }>();
  for (const key of keys) {
    const id = `${key.tbl}#${key.id}`;
    const entry = byKey.get(id) ?? { tbl: key.tbl, target: key.target, from: [], onDelete: key.on_delete };
    entry.from.push(key.from);
    byKey.set(id, entry);
  }
  for (const k of byKey.values()) {
    objects.get(k.tbl)?.foreignKeys.push({
      key: `${k.target}(${k.from.join(', ')})`,
      target: k.target,
      blocksDelete: k.onDelete === 'NO ACTION' || k.onDelete === 'RESTRICT',
    });
  }
  return objects;
}

/**
 * Whether `now` is `old` with text inserted at one place, as ALTER TABLE ... ADD COLUMN rewrites
 * a table's SQL (after the last column definition, before table constraints and WITHOUT ROWID).
 */
function isInsertion(old: string, now: string): boolean {
  if (now.length <= old.length) return false;
  let head = 0;
  while (head < old.length && old[head] === now[head]) head++;
  let tail = 0;
  while (tail < old.length - head && old[old.length - 1 - tail] === now[now.length - 1 - tail]) tail++;
  return head + tail === old.length;
}

/** Throws when `after` is not `before` plus additions an older acx can live with (the rule above). */
function assertAdditive(before: Map<string, SchemaObject>, after: Map<string, SchemaObject>, step: string): void {
  const problems: string[] = [];
  for (const [name, old] of before) {
    const now = after.get(name);
    if (!now || now.type !== old.type) {
      problems.push(`it removes the ${old.type} ${name}`);
      continue;
    }
    if (now.sql === old.sql) continue;
    // Only added columns may change a table's SQL: the old text stays whole, its columns first.
    const grown =
      old.type === 'table' &&
      old.sql !== null &&
      now.sql !== null &&
      isInsertion(old.sql, now.sql) &&
      now.columns.length > old.columns.length &&
      old.columns.every((column, i) => now.columns[i]?.name === column.name);
    if (!grown) problems.push(`it redefines the ${old.type} ${name}`);
  }
  for (const [name, now] of after) {
    const old = before.get(name);
    for (const column of now.columns.slice(old?.columns.length ?? now.columns.length)) {
      if (column.required) problems.push(`it adds the column ${name}.${column.name} as NOT NULL without a default`);
    }
    if (!old && now.type === 'index' && before.has(now.table) && (now.sql === null || /^\s*CREATE\s+UNIQUE\b/i.test(now.sql))) {
      problems.push(`it adds the unique index ${name} over the existing table ${now.table}`);
    }
    for (const key of now.foreignKeys) {
      const existed = old?.foreignKeys.some((k) => k.key === key.key) ?? false;
      if (!existed && key.blocksDelete && before.has(key.target)) {
        problems.push(`its foreign key ${name} -> ${key.key} blocks deleting from the existing table ${key.target} (use ON DELETE CASCADE or SET NULL)`);
      }
    }
  }
  if (problems.length > 0) {
    throw new AcxError('store-migration-not-additive', `${step} is not additive: ${problems.join('; ')}.`, {
      hint: 'Migrations may only add (see migrate() in src/store/database.ts), so that an older acx still opens the file: put the new shape beside the old one.',
    });
  }
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
