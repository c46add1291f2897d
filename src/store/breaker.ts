import type { StatementSync } from 'node:sqlite';
import type { Database } from './database.ts';

/**
 * The wake circuit breaker's rule, over two tables of whoever keeps it (the session wake store
 * per session, the channel state per timeline; on SQLite or PostgreSQL): a table of recent
 * wakes' times and a table of trips. One rule for all, so a session and a timeline trip and
 * reset the same way.
 */
export interface BreakerSettings {
  /** Most wakes a session (or timeline) may take within the window; 0 or less disables the breaker. */
  max: number;
  windowMs: number;
  /** After a trip, how long until it may reset (once the burst has also cleared). */
  cooldownMs: number;
}

/** What the circuit breaker did on this wake: tripped now, stayed tripped, reset itself, or nothing. */
export type BreakerChange = 'tripped' | 'still-tripped' | 'reset' | 'none';

/**
 * Where a keeper stores the breaker: `wakes(<key>, at_ms)` and `trips(<key>, tripped_at_ms)`. The
 * key is one column, or several (a store shared by agents keys a timeline's breaker by agent too):
 * then the key's value is as many values, in the same order.
 */
export interface BreakerTables {
  wakes: string;
  trips: string;
  key: string | readonly string[];
}

/** A breaker key's value: one per key column. */
export type BreakerKey = string | readonly string[];

export interface BreakerAdmission {
  wakesInWindow: number;
  change: BreakerChange;
  /** When this wake was counted: what `retractFromBreaker` takes back. */
  atMs: number;
}

/** The rule's statements, with `?` placeholders (the PostgreSQL keeper numbers them). */
function statements({ wakes, trips, key }: BreakerTables) {
  const columns = typeof key === 'string' ? [key] : key;
  const where = columns.map((column) => `${column} = ?`).join(' AND ');
  const placeholders = columns.map(() => '?').join(', ');
  return {
    prune: `DELETE FROM ${wakes} WHERE ${where} AND at_ms <= ?`,
    record: `INSERT INTO ${wakes} (${columns.join(', ')}, at_ms) VALUES (${placeholders}, ?)`,
    count: `SELECT COUNT(*) AS n FROM ${wakes} WHERE ${where}`,
    trippedAt: `SELECT tripped_at_ms FROM ${trips} WHERE ${where}`,
    reset: `DELETE FROM ${trips} WHERE ${where}`,
    trip: `INSERT INTO ${trips} (${columns.join(', ')}, tripped_at_ms) VALUES (${placeholders}, ?)`,
    /**
     * prune, record, count and trippedAt in one statement (PostgreSQL: one round trip). Its
     * SELECT sees the table as it was before the statement, so the count is the wakes since the
     * cut (the ones prune keeps) plus this one. Values: key, cut, key, now, key, cut, key.
     */
    admit:
      `WITH pruned AS (DELETE FROM ${wakes} WHERE ${where} AND at_ms <= ? RETURNING 1), ` +
      `recorded AS (INSERT INTO ${wakes} (${columns.join(', ')}, at_ms) VALUES (${placeholders}, ?) RETURNING 1) ` +
      `SELECT (SELECT COUNT(*) FROM ${wakes} WHERE ${where} AND at_ms > ?) + 1 AS n, (SELECT tripped_at_ms FROM ${trips} WHERE ${where}) AS tripped_at_ms`,
    // One row of this wake's time (two wakes counted in the same millisecond are interchangeable).
    retract: (rowId: string) => `DELETE FROM ${wakes} WHERE ${rowId} IN (SELECT ${rowId} FROM ${wakes} WHERE ${where} AND at_ms = ? LIMIT 1)`,
  };
}

const keyValues = (key: BreakerKey): string[] => (typeof key === 'string' ? [key] : [...key]);

/**
 * The rule itself, once this wake is counted. Over the cap within the window, the breaker trips
 * and every wake declines until the cooldown has passed *and* the burst has cleared; then it
 * resets by itself.
 */
function decide(settings: BreakerSettings, nowMs: number, wakesInWindow: number, trippedAtMs: number | undefined): BreakerChange {
  if (settings.max <= 0) return 'none';
  if (trippedAtMs !== undefined) {
    return nowMs - trippedAtMs >= settings.cooldownMs && wakesInWindow <= settings.max ? 'reset' : 'still-tripped';
  }
  return wakesInWindow <= settings.max ? 'none' : 'tripped';
}

/** Records this wake and decides, on SQLite. Run it inside the caller's write transaction. */
export function admitToBreaker(
  db: Database,
  tables: BreakerTables,
  key: BreakerKey,
  settings: BreakerSettings,
  nowMs: number,
  prepare: (sql: string) => StatementSync = (sql) => db.prepare(sql),
): BreakerAdmission {
  const sql = statements(tables);
  const values = keyValues(key);
  prepare(sql.prune).run(...values, nowMs - settings.windowMs);
  prepare(sql.record).run(...values, nowMs);
  const wakesInWindow = Number((prepare(sql.count).get(...values) as { n: number }).n);
  const trip = prepare(sql.trippedAt).get(...values) as { tripped_at_ms: number } | undefined;
  const change = decide(settings, nowMs, wakesInWindow, trip ? Number(trip.tripped_at_ms) : undefined);
  if (change === 'reset') prepare(sql.reset).run(...values);
  if (change === 'tripped') prepare(sql.trip).run(...values, nowMs);
  return { wakesInWindow, change, atMs: nowMs };
}

/**
 * Takes back a wake the breaker counted at `atMs`, on SQLite: a wake that found all its work in
 * another wake's hands did nothing that could feed a loop, so it must not bring the breaker closer
 * to tripping. A trip it did not cause stands.
 */
export function retractFromBreaker(db: Database, tables: BreakerTables, key: BreakerKey, atMs: number): void {
  db.prepare(statements(tables).retract('rowid')).run(...keyValues(key), atMs);
}

/** A query on the caller's open transaction, `?` placeholders in order. */
export type BreakerQuery = (sql: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Records this wake and decides, on an asynchronous store (PostgreSQL). Run it inside the caller's transaction. */
export async function admitToBreakerAsync(query: BreakerQuery, tables: BreakerTables, key: BreakerKey, settings: BreakerSettings, nowMs: number): Promise<BreakerAdmission> {
  const sql = statements(tables);
  const values = keyValues(key);
  const cut = nowMs - settings.windowMs;
  const [counted] = await query(sql.admit, [...values, cut, ...values, nowMs, ...values, cut, ...values]);
  const wakesInWindow = Number(counted!.n);
  const change = decide(settings, nowMs, wakesInWindow, counted!.tripped_at_ms === null ? undefined : Number(counted!.tripped_at_ms));
  if (change === 'reset') await query(sql.reset, values);
  if (change === 'tripped') await query(sql.trip, [...values, nowMs]);
  return { wakesInWindow, change, atMs: nowMs };
}

/** `retractFromBreaker` on PostgreSQL (a row's `ctid` names it, as SQLite's `rowid` does). */
export async function retractFromBreakerAsync(query: BreakerQuery, tables: BreakerTables, key: BreakerKey, atMs: number): Promise<void> {
  await query(statements(tables).retract('ctid'), [...keyValues(key), atMs]);
}

/** A BreakerQuery over a PostgreSQL client's `query`: the rule's `?` placeholders numbered `$1, $2, …`. */
export function postgresBreakerQuery(run: (sql: string, values: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>): BreakerQuery {
  return async (sql, values) => {
    let n = 0;
    return (await run(sql.replace(/\?/g, () => `$${++n}`), values)).rows;
  };
}
