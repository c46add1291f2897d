import type { StatementSync } from 'node:sqlite';
import { scrubSecrets } from '../util/scrub.ts';
import { admitToBreaker, type BreakerSettings, type BreakerTables } from './breaker.ts';
import { type Database, openDatabase, transaction } from './database.ts';
import { currentHolder, holderIsAlive, type LeaseHolder, sameHolder } from './lease-holder.ts';
import { type Admission, type InboxItem, openBatchIn, type WakeEvent, type WakeStore } from './wake-store.ts';

/**
 * The wake store in the agent's wake.db (SQLite), for wakes on one host. Its statements run
 * synchronously inside node:sqlite write transactions, so `admit` and `release` each see and
 * change the inbox and the lease as one step; a lease holder is a pid and start time, checked
 * against this host's processes.
 */
const MIGRATIONS = [
  `CREATE TABLE inbox (
     session_id TEXT NOT NULL,
     event_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     text TEXT NOT NULL,
     sender TEXT,
     sender_kind TEXT,
     batch_id TEXT,
     state TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     received_at TEXT NOT NULL,
     done_at TEXT,
     reply TEXT,
     error TEXT,
     PRIMARY KEY (session_id, event_id)
   ) WITHOUT ROWID;
   CREATE INDEX inbox_pending ON inbox(session_id, state, seq);
   CREATE TABLE leases (
     session_id TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     acquired_at TEXT NOT NULL
   );
   CREATE TABLE wakes (
     session_id TEXT NOT NULL,
     at_ms INTEGER NOT NULL
   );
   CREATE INDEX wakes_by_session ON wakes(session_id, at_ms);
   CREATE TABLE breaker_trips (
     session_id TEXT PRIMARY KEY,
     tripped_at_ms INTEGER NOT NULL
   );`,
  // Which build of its batch's turn an event joined: 1 when the batch was fixed, then one more
  // each time messages that arrived during generation were folded in (pacing's second loop).
  `ALTER TABLE inbox ADD COLUMN build INTEGER NOT NULL DEFAULT 1;`,
  // Whether an event calls for a reply (a mention, a one-on-one) or is ambient (a heartbeat).
  `ALTER TABLE inbox ADD COLUMN addressed INTEGER NOT NULL DEFAULT 1;`,
];

const SESSION_BREAKER: BreakerTables = { wakes: 'wakes', trips: 'breaker_trips', key: 'session_id' };

export class SqliteWakeStore implements WakeStore {
  readonly kind = 'sqlite' as const;
  readonly db: Database;
  private readonly statements = new Map<string, StatementSync>();
  private readonly isAlive: (holder: LeaseHolder) => boolean;

  constructor(path: string, options: { isAlive?: (holder: LeaseHolder) => boolean } = {}) {
    this.db = openDatabase(path, { migrations: MIGRATIONS });
    this.isAlive = options.isAlive ?? holderIsAlive;
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  async admit(
    sessionId: string,
    event: WakeEvent | undefined,
    breaker: BreakerSettings,
    holder: LeaseHolder = currentHolder(),
    nowMs: number = Date.now(),
  ): Promise<Admission> {
    return transaction(this.db, (): Admission => {
      const eventIsNew = event ? this.record(sessionId, event, nowMs) : false;
      // The lease before the breaker: a busy wake is not counted (see WakeStore.admit).
      const current = this.holderOf(sessionId);
      if (current && !sameHolder(current, holder) && this.isAlive(current)) return { kind: 'busy', eventIsNew, holder: current, breaker: 'none' };
      const { wakesInWindow, change } = admitToBreaker(this.db, SESSION_BREAKER, sessionId, breaker, nowMs, (sql) => this.prepare(sql));
      if (change === 'tripped' || change === 'still-tripped') return { kind: 'declined', eventIsNew, wakesInWindow, breaker: change };
      this
        .prepare(
          'INSERT INTO leases (session_id, holder, acquired_at) VALUES (?, ?, ?) ' +
            'ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at',
        )
        .run(sessionId, JSON.stringify(holder), new Date(nowMs).toISOString());
      return { kind: 'leader', eventIsNew, breaker: change };
    });
  }

  private record(sessionId: string, event: WakeEvent, nowMs: number): boolean {
    const next = (
      this.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM inbox WHERE session_id = ?').get(sessionId) as { next: number }
    ).next;
    const at = new Date(nowMs).toISOString();
    const inserted = this
      .prepare(
        'INSERT INTO inbox (session_id, event_id, seq, text, sender, sender_kind, addressed, state, received_at, done_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (session_id, event_id) DO NOTHING',
      )
      .run(sessionId, event.id, next, event.text, event.sender ?? null, event.senderKind ?? null, event.addressed === false ? 0 : 1, event.own ? 'done' : 'pending', at, event.own ? at : null);
    return Number(inserted.changes) > 0;
  }

  async isTripped(sessionId: string): Promise<boolean> {
    return this.prepare('SELECT 1 FROM breaker_trips WHERE session_id = ?').get(sessionId) !== undefined;
  }

  async nextPending(sessionId: string): Promise<InboxItem | undefined> {
    return this.firstPending(sessionId);
  }

  private firstPending(sessionId: string): InboxItem | undefined {
    const row = this
      .prepare("SELECT * FROM inbox WHERE session_id = ? AND state = 'pending' ORDER BY seq LIMIT 1")
      .get(sessionId) as InboxRow | undefined;
    return row ? toItem(row) : undefined;
  }

  async pending(sessionId: string): Promise<InboxItem[]> {
    return (
      this.prepare("SELECT * FROM inbox WHERE session_id = ? AND state = 'pending' ORDER BY seq").all(sessionId) as unknown as InboxRow[]
    ).map(toItem);
  }

  async openBatch(sessionId: string): Promise<InboxItem[] | undefined> {
    return openBatchIn(await this.pending(sessionId));
  }

  async fixBatch(sessionId: string, eventIds: readonly string[]): Promise<string> {
    const batchId = eventIds[0]!;
    transaction(this.db, () => {
      for (const eventId of eventIds) {
        this.prepare('UPDATE inbox SET batch_id = ? WHERE session_id = ? AND event_id = ? AND batch_id IS NULL').run(batchId, sessionId, eventId);
      }
    });
    return batchId;
  }

  async growBatch(sessionId: string, batchId: string, eventIds: readonly string[]): Promise<number> {
    return transaction(this.db, () => {
      const { build } = this
        .prepare('SELECT MAX(build) AS build FROM inbox WHERE session_id = ? AND batch_id = ?')
        .get(sessionId, batchId) as { build: number };
      for (const eventId of eventIds) {
        this
          .prepare("UPDATE inbox SET batch_id = ?, build = ? WHERE session_id = ? AND event_id = ? AND batch_id IS NULL AND state = 'pending'")
          .run(batchId, build + 1, sessionId, eventId);
      }
      return build + 1;
    });
  }

  async item(sessionId: string, eventId: string): Promise<InboxItem | undefined> {
    return this.itemNow(sessionId, eventId);
  }

  private itemNow(sessionId: string, eventId: string): InboxItem | undefined {
    const row = this.prepare('SELECT * FROM inbox WHERE session_id = ? AND event_id = ?').get(sessionId, eventId) as
      | InboxRow
      | undefined;
    return row ? toItem(row) : undefined;
  }

  async items(sessionId: string): Promise<InboxItem[]> {
    return (this.prepare('SELECT * FROM inbox WHERE session_id = ? ORDER BY seq').all(sessionId) as unknown as InboxRow[]).map(toItem);
  }

  async markAttempt(sessionId: string, eventIds: readonly string[]): Promise<number> {
    return transaction(this.db, () => {
      let most = 0;
      for (const eventId of eventIds) {
        this.prepare('UPDATE inbox SET attempts = attempts + 1 WHERE session_id = ? AND event_id = ?').run(sessionId, eventId);
        most = Math.max(most, this.itemNow(sessionId, eventId)?.attempts ?? 0);
      }
      return most;
    });
  }

  async markDone(sessionId: string, eventIds: readonly string[], reply: string): Promise<void> {
    this.settle(sessionId, eventIds, "state = 'done', reply = ?, error = NULL", reply);
  }

  async markFailed(sessionId: string, eventIds: readonly string[], error: string): Promise<void> {
    this.settle(sessionId, eventIds, "state = 'failed', error = ?", scrubSecrets(error));
  }

  private settle(sessionId: string, eventIds: readonly string[], set: string, value: string): void {
    const doneAt = new Date().toISOString();
    transaction(this.db, () => {
      for (const eventId of eventIds) {
        this.prepare(`UPDATE inbox SET ${set}, done_at = ? WHERE session_id = ? AND event_id = ?`).run(value, doneAt, sessionId, eventId);
      }
    });
  }

  async recordError(sessionId: string, eventIds: readonly string[], error: string): Promise<void> {
    const scrubbed = scrubSecrets(error);
    for (const eventId of eventIds) {
      this.prepare('UPDATE inbox SET error = ? WHERE session_id = ? AND event_id = ?').run(scrubbed, sessionId, eventId);
    }
  }

  /** One write transaction: an event recorded by `admit` either came before (and is seen here) or after (and finds the lease free). */
  async release(sessionId: string, holder: LeaseHolder = currentHolder()): Promise<boolean> {
    return transaction(this.db, () => {
      if (this.firstPending(sessionId)) return false;
      this.dropLease(sessionId, holder);
      return true;
    });
  }

  async abandon(sessionId: string, holder: LeaseHolder = currentHolder()): Promise<void> {
    this.dropLease(sessionId, holder);
  }

  /** Never aborts: the lease is a pid and start time on this host, and a live holder's is never taken. */
  leaseLost(_sessionId: string): AbortSignal {
    return new AbortController().signal;
  }

  private dropLease(sessionId: string, holder: LeaseHolder): void {
    const current = this.holderOf(sessionId);
    if (current && sameHolder(current, holder)) {
      this.prepare('DELETE FROM leases WHERE session_id = ?').run(sessionId);
    }
  }

  private holderOf(sessionId: string): LeaseHolder | undefined {
    const lease = this.prepare('SELECT holder FROM leases WHERE session_id = ?').get(sessionId) as { holder: string } | undefined;
    return lease ? (JSON.parse(lease.holder) as LeaseHolder) : undefined;
  }

  async liveLeaseHolder(sessionId: string): Promise<LeaseHolder | undefined> {
    const holder = this.holderOf(sessionId);
    return holder && this.isAlive(holder) ? holder : undefined;
  }

  async sessions(): Promise<Array<{ sessionId: string; lastEventAt: string | null }>> {
    return (
      this
        .prepare(
          'SELECT session_id, MAX(received_at) AS last FROM inbox GROUP BY session_id ' +
            'UNION SELECT session_id, NULL FROM wakes WHERE session_id NOT IN (SELECT session_id FROM inbox) GROUP BY session_id',
        )
        .all() as Array<{ session_id: string; last: string | null }>
    ).map((row) => ({ sessionId: row.session_id, lastEventAt: row.last }));
  }

  async deleteSession(sessionId: string): Promise<void> {
    transaction(this.db, () => {
      for (const table of ['inbox', 'leases', 'wakes', 'breaker_trips']) {
        this.prepare(`DELETE FROM ${table} WHERE session_id = ?`).run(sessionId);
      }
    });
  }
}

/** An inbox row as both stores read it. */
export interface InboxRow {
  session_id: string;
  event_id: string;
  seq: number;
  text: string;
  sender: string | null;
  sender_kind: InboxItem['senderKind'];
  batch_id: string | null;
  build: number;
  addressed: number | boolean;
  state: InboxItem['state'];
  attempts: number;
  received_at: string;
  done_at: string | null;
  reply: string | null;
  error: string | null;
}

export function toItem(row: InboxRow): InboxItem {
  return {
    sessionId: row.session_id,
    eventId: row.event_id,
    seq: row.seq,
    text: row.text,
    sender: row.sender,
    senderKind: row.sender_kind,
    batchId: row.batch_id,
    build: row.build,
    addressed: row.addressed !== 0 && row.addressed !== false,
    state: row.state,
    attempts: row.attempts,
    receivedAt: row.received_at,
    doneAt: row.done_at,
    reply: row.reply,
    error: row.error,
  };
}
