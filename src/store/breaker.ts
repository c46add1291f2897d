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

/** Where a keeper stores the breaker: `wakes(<key>, at_ms)` and `trips(<key>, tripped_at_ms)`. */
export interface BreakerTables {
  wakes: string;
  trips: string;
  key: string;
}

export interface BreakerAdmission {
  wakesInWindow: number;
  change: BreakerChange;
}

/** The rule's statements, with `?` placeholders (the PostgreSQL keeper numbers them). */
function statements({ wakes, trips, key }: BreakerTables) {
  return {
    prune: `DELETE FROM ${wakes} WHERE ${key} = ? AND at_ms <= ?`,
    record: `INSERT INTO ${wakes} (${key}, at_ms) VALUES (?, ?)`,
    count: `SELECT COUNT(*) AS n FROM ${wakes} WHERE ${key} = ?`,
    trippedAt: `SELECT tripped_at_ms FROM ${trips} WHERE ${key} = ?`,
    reset: `DELETE FROM ${trips} WHERE ${key} = ?`,
    trip: `INSERT INTO ${trips} (${key}, tripped_at_ms) VALUES (?, ?)`,
  };
}

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
  key: string,
  settings: BreakerSettings,
  nowMs: number,
  prepare: (sql: string) => StatementSync = (sql) => db.prepare(sql),
): BreakerAdmission {
  const sql = statements(tables);
  prepare(sql.prune).run(key, nowMs - settings.windowMs);
  prepare(sql.record).run(key, nowMs);
  const wakesInWindow = Number((prepare(sql.count).get(key) as { n: number }).n);
  const trip = prepare(sql.trippedAt).get(key) as { tripped_at_ms: number } | undefined;
  const change = decide(settings, nowMs, wakesInWindow, trip ? Number(trip.tripped_at_ms) : undefined);
  if (change === 'reset') prepare(sql.reset).run(key);
  if (change === 'tripped') prepare(sql.trip).run(key, nowMs);
  return { wakesInWindow, change };
}

/** A query on the caller's open transaction, `?` placeholders in order. */
export type BreakerQuery = (sql: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Records this wake and decides, on an asynchronous store (PostgreSQL). Run it inside the caller's transaction. */
export async function admitToBreakerAsync(query: BreakerQuery, tables: BreakerTables, key: string, settings: BreakerSettings, nowMs: number): Promise<BreakerAdmission> {
  const sql = statements(tables);
  await query(sql.prune, [key, nowMs - settings.windowMs]);
  await query(sql.record, [key, nowMs]);
  const wakesInWindow = Number((await query(sql.count, [key]))[0]!.n);
  const trip = (await query(sql.trippedAt, [key]))[0];
  const change = decide(settings, nowMs, wakesInWindow, trip ? Number(trip.tripped_at_ms) : undefined);
  if (change === 'reset') await query(sql.reset, [key]);
  if (change === 'tripped') await query(sql.trip, [key, nowMs]);
  return { wakesInWindow, change };
}
