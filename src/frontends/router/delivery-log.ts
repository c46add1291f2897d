import { openDatabase, type Database } from '../../store/database.ts';

/**
 * router.db: each delivery the router took (keyed by the id it dedupes on) and what came of it.
 * A row is what makes a second copy of a delivery a duplicate, and a copy is refused anyway once
 * its occurred_at has left the replay window (admission.ts); so a row older than the window plus
 * the clock skew allowed guards nothing and is pruned, and the file stops growing.
 */
const MIGRATIONS = [
  `CREATE TABLE deliveries (
     delivery TEXT PRIMARY KEY, agent TEXT NOT NULL, event TEXT NOT NULL, timeline TEXT NOT NULL,
     state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, received_at TEXT NOT NULL, finished_at TEXT)`,
  // A delivery folded into a wake already queued for the same agent and timeline: that wake's delivery.
  `ALTER TABLE deliveries ADD COLUMN covered_by TEXT`,
  // Pruning reads rows by age.
  `CREATE INDEX deliveries_received_at ON deliveries (received_at)`,
];

/** How often the old rows are swept (at most; on the next delivery after this long). */
const PRUNE_EVERY_MS = 10 * 60_000;

export type FinalState = 'done' | 'failed' | 'enqueued';

/** SQLite's datetime('now') format, which rows written before the clock was injectable use too. */
const sqliteTime = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

export class DeliveryLog {
  private readonly db: Database;
  private readonly now: () => number;
  /** How long a row guards against a replay: the replay window plus the clock skew it allows. */
  private readonly keepMs: number;
  private lastPrune = Number.NEGATIVE_INFINITY;

  constructor(path: string, now: () => number, keepMs: number) {
    this.now = now;
    this.keepMs = keepMs;
    this.db = openDatabase(path, { migrations: MIGRATIONS });
    this.prune();
  }

  /** Records a delivery the first time its id is seen; false when it was seen before. */
  record(delivery: { id: string; agent: string; event: string; timeline: string; state: 'queued' | 'ignored' }): boolean {
    if (this.now() - this.lastPrune >= PRUNE_EVERY_MS) this.prune();
    const inserted = this.db
      .prepare('INSERT OR IGNORE INTO deliveries (delivery, agent, event, timeline, state, received_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(delivery.id, delivery.agent, delivery.event, delivery.timeline, delivery.state, sqliteTime(this.now()));
    return inserted.changes > 0;
  }

  coalesced(id: string, into: string): void {
    this.db.prepare("UPDATE deliveries SET state = 'coalesced', covered_by = ? WHERE delivery = ?").run(into, id);
  }

  attempted(id: string, attempts: number, exitCode: number): void {
    this.db.prepare('UPDATE deliveries SET attempts = ?, exit_code = ? WHERE delivery = ?').run(attempts, exitCode, id);
  }

  finished(id: string, state: FinalState): void {
    this.db.prepare('UPDATE deliveries SET state = ?, finished_at = ? WHERE delivery = ?').run(state, sqliteTime(this.now()), id);
  }

  close(): void {
    this.db.close();
  }

  private prune(): void {
    this.lastPrune = this.now();
    this.db.prepare('DELETE FROM deliveries WHERE received_at < ?').run(sqliteTime(this.lastPrune - this.keepMs));
  }
}
