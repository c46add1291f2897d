import { openDatabase, type Database } from '../../store/database.ts';
import type { ItemKind } from './events.ts';

/**
 * router.db: each delivery the router took (keyed by the id it dedupes on) and what came of it,
 * each platform item it woke an agent for, and how far its poll has read.
 *
 * - A delivery row is what makes a second copy of a delivery a duplicate, and a copy is refused
 *   anyway once its occurred_at has left the replay window (admission.ts); so a row older than the
 *   window plus the clock skew allowed guards nothing and is pruned, and the file stops growing.
 * - An item row (agent, item uuid) is what makes an item woken once whichever way it arrived: a
 *   webhook delivery and the poll (poll.ts) both claim the item before waking, and the second to
 *   come is a duplicate. A row is pruned with the deliveries, except while the agent's poll mark
 *   for its kind has not passed it (the poll would otherwise list it again as unseen).
 * - A poll mark (agent, kind) is the newest item time the poll has read, so a restarted router
 *   reads on from there. It only moves forward, whichever router process moves it.
 */
const MIGRATIONS = [
  `CREATE TABLE deliveries (
     delivery TEXT PRIMARY KEY, agent TEXT NOT NULL, event TEXT NOT NULL, timeline TEXT NOT NULL,
     state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, received_at TEXT NOT NULL, finished_at TEXT)`,
  // A delivery folded into a wake already queued for the same agent and timeline: that wake's delivery.
  `ALTER TABLE deliveries ADD COLUMN covered_by TEXT`,
  // Pruning reads rows by age.
  `CREATE INDEX deliveries_received_at ON deliveries (received_at)`,
  `CREATE TABLE items (
     agent TEXT NOT NULL, item TEXT NOT NULL, kind TEXT NOT NULL, timeline TEXT NOT NULL, at_ms INTEGER NOT NULL,
     via TEXT NOT NULL, delivery TEXT NOT NULL, seen_at TEXT NOT NULL, PRIMARY KEY (agent, item))`,
  `CREATE INDEX items_seen_at ON items (seen_at)`,
  `CREATE TABLE poll_marks (agent TEXT NOT NULL, kind TEXT NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (agent, kind))`,
];

/** How often the old rows are swept (at most; on the next delivery after this long). */
const PRUNE_EVERY_MS = 10 * 60_000;

export type FinalState = 'done' | 'failed' | 'enqueued';

/** The platform item a delivery is about, and when it happened (ms). */
export interface ItemRef {
  kind: ItemKind;
  uuid: string;
  atMs: number;
}

export interface NewDelivery {
  id: string;
  agent: string;
  event: string;
  timeline: string;
  state: 'queued' | 'ignored';
  /** What it is about, for a waking event: claimed for the agent in the same transaction. */
  item?: ItemRef | undefined;
  via: 'webhook' | 'poll';
}

export type Admitted = { fresh: true } | { fresh: false; reason: 'seen-before' } | { fresh: false; reason: 'item-seen'; coveredBy: string };

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

  /**
   * Records a delivery the first time its id is seen, and claims its item for the agent. Not
   * fresh: a delivery seen before, or one whose item was already claimed (by the poll, or by
   * another delivery); a webhook delivery of that kind is recorded as a duplicate of the first,
   * the poll's look at it leaves no row.
   */
  admit(delivery: NewDelivery): Admitted {
    if (this.now() - this.lastPrune >= PRUNE_EVERY_MS) this.prune();
    const at = sqliteTime(this.now());
    const insert = (state: string, coveredBy: string | null) =>
      this.db
        .prepare('INSERT INTO deliveries (delivery, agent, event, timeline, state, received_at, covered_by, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(delivery.id, delivery.agent, delivery.event, delivery.timeline, state, at, coveredBy, coveredBy === null ? null : at);
    this.db.exec('BEGIN IMMEDIATE');
    try {
      let admitted: Admitted = { fresh: true };
      if (this.db.prepare('SELECT 1 FROM deliveries WHERE delivery = ?').get(delivery.id)) admitted = { fresh: false, reason: 'seen-before' };
      else if (delivery.item && !this.claim(delivery, delivery.item, at)) {
        const first = this.db.prepare('SELECT delivery FROM items WHERE agent = ? AND item = ?').get(delivery.agent, delivery.item.uuid) as { delivery: string };
        if (delivery.via === 'webhook') insert('duplicate', first.delivery);
        admitted = { fresh: false, reason: 'item-seen', coveredBy: first.delivery };
      } else insert(delivery.state, null);
      this.db.exec('COMMIT');
      return admitted;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Claims an item for an agent: false when it was claimed before. */
  private claim(delivery: NewDelivery, item: ItemRef, at: string): boolean {
    const claimed = this.db
      .prepare('INSERT OR IGNORE INTO items (agent, item, kind, timeline, at_ms, via, delivery, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(delivery.agent, item.uuid, item.kind, delivery.timeline, item.atMs, delivery.via, delivery.id, at);
    return claimed.changes > 0;
  }

  /** The newest item time (ms) the agent's poll has read for a kind; undefined before its first. */
  pollMark(agent: string, kind: ItemKind): number | undefined {
    const row = this.db.prepare('SELECT at_ms FROM poll_marks WHERE agent = ? AND kind = ?').get(agent, kind) as { at_ms: number } | undefined;
    return row?.at_ms;
  }

  /** Moves the mark to `atMs` unless it is already further on (two routers may share this file). */
  advancePollMark(agent: string, kind: ItemKind, atMs: number): void {
    this.db
      .prepare('INSERT INTO poll_marks (agent, kind, at_ms) VALUES (?, ?, ?) ON CONFLICT (agent, kind) DO UPDATE SET at_ms = MAX(at_ms, excluded.at_ms)')
      .run(agent, kind, atMs);
  }

  coalesced(id: string, into: string): void {
    this.db.prepare("UPDATE deliveries SET state = 'coalesced', covered_by = ? WHERE delivery = ?").run(into, id);
  }

  /**
   * The waking deliveries taken (state queued) and never finished, oldest first, with the item
   * each is about: what a router killed mid-way leaves behind for the next one to take up.
   */
  unfinished(): Array<{ delivery: string; agent: string; event: string; timeline: string; item: string }> {
    return this.db
      .prepare(
        `SELECT d.delivery, d.agent, d.event, d.timeline, i.item FROM deliveries d JOIN items i ON i.agent = d.agent AND i.delivery = d.delivery
         WHERE d.state = 'queued' AND d.finished_at IS NULL ORDER BY d.received_at, d.rowid`,
      )
      .all() as Array<{ delivery: string; agent: string; event: string; timeline: string; item: string }>;
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
    const cutoff = sqliteTime(this.lastPrune - this.keepMs);
    this.db.prepare('DELETE FROM deliveries WHERE received_at < ?').run(cutoff);
    this.db
      .prepare(
        `DELETE FROM items WHERE seen_at < ? AND NOT EXISTS
           (SELECT 1 FROM poll_marks m WHERE m.agent = items.agent AND m.kind = items.kind AND items.at_ms >= m.at_ms)`,
      )
      .run(cutoff);
  }
}
