import type { StatementSync } from 'node:sqlite';
import type { Database } from './database.ts';

/**
 * The wake circuit breaker's rule, over two tables of whoever keeps it (the session wake store
 * per session, the channel state per timeline): a table of recent wakes' times and a table of
 * trips. One rule for both, so a session and a timeline trip and reset the same way.
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

/**
 * Records this wake and decides. Over the cap within the window, the breaker trips and every
 * wake declines until the cooldown has passed *and* the burst has cleared; then it resets by
 * itself. Run it inside the caller's write transaction.
 */
export function admitToBreaker(
  db: Database,
  tables: BreakerTables,
  key: string,
  settings: BreakerSettings,
  nowMs: number,
  prepare: (sql: string) => StatementSync = (sql) => db.prepare(sql),
): { wakesInWindow: number; change: BreakerChange } {
  const { wakes, trips, key: column } = tables;
  prepare(`DELETE FROM ${wakes} WHERE ${column} = ? AND at_ms <= ?`).run(key, nowMs - settings.windowMs);
  prepare(`INSERT INTO ${wakes} (${column}, at_ms) VALUES (?, ?)`).run(key, nowMs);
  const wakesInWindow = (prepare(`SELECT COUNT(*) AS n FROM ${wakes} WHERE ${column} = ?`).get(key) as { n: number }).n;
  if (settings.max <= 0) return { wakesInWindow, change: 'none' };
  const trip = prepare(`SELECT tripped_at_ms FROM ${trips} WHERE ${column} = ?`).get(key) as { tripped_at_ms: number } | undefined;
  if (trip) {
    if (nowMs - trip.tripped_at_ms >= settings.cooldownMs && wakesInWindow <= settings.max) {
      prepare(`DELETE FROM ${trips} WHERE ${column} = ?`).run(key);
      return { wakesInWindow, change: 'reset' };
    }
    return { wakesInWindow, change: 'still-tripped' };
  }
  if (wakesInWindow <= settings.max) return { wakesInWindow, change: 'none' };
  prepare(`INSERT INTO ${trips} (${column}, tripped_at_ms) VALUES (?, ?)`).run(key, nowMs);
  return { wakesInWindow, change: 'tripped' };
}
