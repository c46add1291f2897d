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
  /**
   * On a database many agents share: the column naming whose rows these are (`agent_id`). The
   * key is then given as [agent id, key], and one agent's breaker never counts another's wakes.
   */
  scope?: string;
}

/** A breaker's key: the session (or timeline), or [agent id, it] for tables with a scope. */
export type BreakerKey = string | readonly [scope: string, key: string];

export interface BreakerAdmission {
  wakesInWindow: number;
  change: BreakerChange;
}

/** The rule's statements, with `?` placeholders (the PostgreSQL keeper numbers them). */
function statements({ wakes, trips, key, scope }: BreakerTables) {
  const where = scope ? `${scope} = ? AND ${key} = ?` : `${key} = ?`;
  const columns = scope ? `${scope}, ${key}` : key;
  const marks = scope ? '?, ?' : '?';
  return {
    prune: `DELETE FROM ${wakes} WHERE ${where} AND at_ms <= ?`,
    record: `INSERT INTO ${wakes} (${columns}, at_ms) VALUES (${marks}, ?)`,
    count: `SELECT COUNT(*) AS n FROM ${wakes} WHERE ${where}`,
    trippedAt: `SELECT tripped_at_ms FROM ${trips} WHERE ${where}`,
    reset: `DELETE FROM ${trips} WHERE ${where}`,
    trip: `INSERT INTO ${trips} (${columns}, tripped_at_ms) VALUES (${marks}, ?)`,
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
  const k = keyValues(key);
  prepare(sql.prune).run(...k, nowMs - settings.windowMs);
  prepare(sql.record).run(...k, nowMs);
  const wakesInWindow = Number((prepare(sql.count).get(...k) as { n: number }).n);
  const trip = prepare(sql.trippedAt).get(...k) as { tripped_at_ms: number } | undefined;
  const change = decide(settings, nowMs, wakesInWindow, trip ? Number(trip.tripped_at_ms) : undefined);
  if (change === 'reset') prepare(sql.reset).run(...k);
  if (change === 'tripped') prepare(sql.trip).run(...k, nowMs);
  return { wakesInWindow, change };
}

/** A query on the caller's open transaction, `?` placeholders in order. */
export type BreakerQuery = (sql: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Records this wake and decides, on an asynchronous store (PostgreSQL). Run it inside the caller's transaction. */
export async function admitToBreakerAsync(query: BreakerQuery, tables: BreakerTables, key: BreakerKey, settings: BreakerSettings, nowMs: number): Promise<BreakerAdmission> {
  const sql = statements(tables);
  const k = keyValues(key);
  await query(sql.prune, [...k, nowMs - settings.windowMs]);
  await query(sql.record, [...k, nowMs]);
  const wakesInWindow = Number((await query(sql.count, k))[0]!.n);
  const trip = (await query(sql.trippedAt, k))[0];
  const change = decide(settings, nowMs, wakesInWindow, trip ? Number(trip.tripped_at_ms) : undefined);
  if (change === 'reset') await query(sql.reset, k);
  if (change === 'tripped') await query(sql.trip, [...k, nowMs]);
  return { wakesInWindow, change };
}
