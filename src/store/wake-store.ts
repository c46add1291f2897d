import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StatementSync } from 'node:sqlite';
import { scrubSecrets } from '../util/scrub.ts';
import { admitToBreaker, type BreakerSettings, type BreakerTables } from './breaker.ts';
import { type Database, openDatabase, transaction } from './database.ts';

export type { BreakerChange, BreakerSettings } from './breaker.ts';

/**
 * What wake mode keeps between its per-event processes, beside the journal: the inbox of events
 * per session (each recorded once by its id, pending until its turn completed), the session's
 * lease (which live wake is answering it), and the circuit breaker's record of recent wakes.
 *
 * Everything a wake decides on arrival happens in one write transaction (`admit`), and a wake
 * gives the lease back only in a transaction that finds no pending event (`release`): so an
 * event that arrives while another wake is busy is either seen by that wake or finds the lease
 * free — it is never left behind.
 */
export interface WakeEvent {
  id: string;
  text: string;
  /** Who wrote it (a handle, shown to the model with the message). */
  sender?: string | undefined;
  /** A peer AI's message is read at human speed before it is answered (read-speed pacing). */
  senderKind?: 'human' | 'ai' | undefined;
  /** Whether the message calls for a reply (default true); arms the reply nudge in tool speech mode. */
  addressed?: boolean | undefined;
  /** The agent's own message, routed back to it: recorded, never answered. */
  own?: boolean | undefined;
}

export interface InboxItem {
  sessionId: string;
  eventId: string;
  seq: number;
  text: string;
  sender: string | null;
  senderKind: 'human' | 'ai' | null;
  /** The batch (one turn) the event is answered in, once a wake has fixed it: the first event's id. */
  batchId: string | null;
  /** The build of the batch's turn the event joined (1, or more once late messages were folded in). */
  build: number;
  addressed: boolean;
  state: 'pending' | 'done' | 'failed';
  attempts: number;
  receivedAt: string;
  doneAt: string | null;
  reply: string | null;
  error: string | null;
}

/** Who holds a session's lease: enough to tell whether that process is still alive. */
export interface LeaseHolder {
  pid: number;
  host: string;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for it. */
  started: number | null;
}

export type Admission =
  | { kind: 'leader'; eventIsNew: boolean; breaker: 'reset' | 'none' }
  | { kind: 'busy'; eventIsNew: boolean; holder: LeaseHolder; breaker: 'reset' | 'none' }
  | { kind: 'declined'; eventIsNew: boolean; wakesInWindow: number; breaker: 'tripped' | 'still-tripped' };

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

/** Where an agent's wake state lives: beside its journal, in its state directory. */
export function wakeStorePath(stateDir: string): string {
  return join(stateDir, 'wake.db');
}

/** This process, as a lease holder. */
export function currentHolder(): LeaseHolder {
  return { pid: process.pid, host: hostname(), started: processStart(process.pid) };
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return null;
  }
}

/**
 * Whether a lease holder is still running. A holder on another host cannot be checked from here
 * and counts as alive (never steal a live claim); on this host, the pid must exist and, where
 * the start time can be read, be the same process.
 */
export function holderIsAlive(holder: LeaseHolder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const started = processStart(holder.pid);
  return holder.started === null || started === null || started === holder.started;
}

export class WakeStore {
  readonly db: Database;
  private readonly statements = new Map<string, StatementSync>();
  private readonly isAlive: (holder: LeaseHolder) => boolean;

  constructor(path: string, options: { isAlive?: (holder: LeaseHolder) => boolean } = {}) {
    this.db = openDatabase(path, { migrations: MIGRATIONS });
    this.isAlive = options.isAlive ?? holderIsAlive;
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  /**
   * A wake arrives: record its event (once per id), count the wake for the circuit breaker, and
   * take the session's lease unless a live wake holds it. One transaction.
   */
  admit(
    sessionId: string,
    event: WakeEvent | undefined,
    breaker: BreakerSettings,
    holder: LeaseHolder = currentHolder(),
    nowMs: number = Date.now(),
  ): Admission {
    return transaction(this.db, () => {
      const eventIsNew = event ? this.record(sessionId, event, nowMs) : false;
      const { wakesInWindow, change } = admitToBreaker(this.db, SESSION_BREAKER, sessionId, breaker, nowMs, (sql) => this.prepare(sql));
      if (change === 'tripped' || change === 'still-tripped') return { kind: 'declined', eventIsNew, wakesInWindow, breaker: change };
      const current = this.leaseHolder(sessionId);
      if (current) {
        const mine = current.pid === holder.pid && current.host === holder.host;
        if (!mine && this.isAlive(current)) return { kind: 'busy', eventIsNew, holder: current, breaker: change };
      }
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

  isTripped(sessionId: string): boolean {
    return this.prepare('SELECT 1 FROM breaker_trips WHERE session_id = ?').get(sessionId) !== undefined;
  }

  /** The oldest event of the session still waiting for its turn to complete. */
  nextPending(sessionId: string): InboxItem | undefined {
    const row = this
      .prepare("SELECT * FROM inbox WHERE session_id = ? AND state = 'pending' ORDER BY seq LIMIT 1")
      .get(sessionId) as InboxRow | undefined;
    return row ? toItem(row) : undefined;
  }

  /** Every event of the session still waiting, oldest first. */
  pending(sessionId: string): InboxItem[] {
    return (
      this.prepare("SELECT * FROM inbox WHERE session_id = ? AND state = 'pending' ORDER BY seq").all(sessionId) as unknown as InboxRow[]
    ).map(toItem);
  }

  /**
   * The events of a batch fixed by an earlier wake whose turn has not completed (it died or
   * failed mid-turn): they are answered together again, in the same turn.
   */
  openBatch(sessionId: string): InboxItem[] | undefined {
    const first = this
      .prepare("SELECT batch_id FROM inbox WHERE session_id = ? AND state = 'pending' AND batch_id IS NOT NULL ORDER BY seq LIMIT 1")
      .get(sessionId) as { batch_id: string } | undefined;
    if (!first) return undefined;
    return (
      this
        .prepare("SELECT * FROM inbox WHERE session_id = ? AND batch_id = ? AND state = 'pending' ORDER BY seq")
        .all(sessionId, first.batch_id) as unknown as InboxRow[]
    ).map(toItem);
  }

  /** Fixes which events one turn answers, before the turn starts; the batch id is the first event's. */
  fixBatch(sessionId: string, eventIds: readonly string[]): string {
    const batchId = eventIds[0]!;
    transaction(this.db, () => {
      for (const eventId of eventIds) {
        this.prepare('UPDATE inbox SET batch_id = ? WHERE session_id = ? AND event_id = ? AND batch_id IS NULL').run(batchId, sessionId, eventId);
      }
    });
    return batchId;
  }

  /**
   * Folds events that arrived while a batch's turn was generating into the batch, as its next
   * build (one transaction); returns that build's number. Only events in no batch yet are taken.
   */
  growBatch(sessionId: string, batchId: string, eventIds: readonly string[]): number {
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

  item(sessionId: string, eventId: string): InboxItem | undefined {
    const row = this.prepare('SELECT * FROM inbox WHERE session_id = ? AND event_id = ?').get(sessionId, eventId) as
      | InboxRow
      | undefined;
    return row ? toItem(row) : undefined;
  }

  items(sessionId: string): InboxItem[] {
    return (this.prepare('SELECT * FROM inbox WHERE session_id = ? ORDER BY seq').all(sessionId) as unknown as InboxRow[]).map(toItem);
  }

  /** Counts an attempt before the events' turn runs, so a message that always fails is noticed; returns the most any has had. */
  markAttempt(sessionId: string, eventIds: readonly string[]): number {
    return transaction(this.db, () => {
      let most = 0;
      for (const eventId of eventIds) {
        this.prepare('UPDATE inbox SET attempts = attempts + 1 WHERE session_id = ? AND event_id = ?').run(sessionId, eventId);
        most = Math.max(most, this.item(sessionId, eventId)?.attempts ?? 0);
      }
      return most;
    });
  }

  markDone(sessionId: string, eventIds: readonly string[], reply: string): void {
    this.settle(sessionId, eventIds, "state = 'done', reply = ?, error = NULL", reply);
  }

  /** Gives up on events after too many failed attempts: kept for inspection, no longer blocking the inbox. */
  markFailed(sessionId: string, eventIds: readonly string[], error: string): void {
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

  /** Errors are stored scrubbed: one can quote a provider's reply, which can echo the key it was sent. */
  recordError(sessionId: string, eventIds: readonly string[], error: string): void {
    const scrubbed = scrubSecrets(error);
    for (const eventId of eventIds) {
      this.prepare('UPDATE inbox SET error = ? WHERE session_id = ? AND event_id = ?').run(scrubbed, sessionId, eventId);
    }
  }

  /**
   * Gives the lease back, unless an event arrived meanwhile: then the lease is kept and false
   * returned, and the caller answers it (the wake that recorded it saw the lease held).
   */
  release(sessionId: string, holder: LeaseHolder = currentHolder()): boolean {
    return transaction(this.db, () => {
      if (this.nextPending(sessionId)) return false;
      this.dropLease(sessionId, holder);
      return true;
    });
  }

  /** Gives the lease back whatever is pending (after a failure): the next wake picks the events up. */
  abandon(sessionId: string, holder: LeaseHolder = currentHolder()): void {
    this.dropLease(sessionId, holder);
  }

  private dropLease(sessionId: string, holder: LeaseHolder): void {
    const current = this.leaseHolder(sessionId);
    if (current && current.pid === holder.pid && current.host === holder.host) {
      this.prepare('DELETE FROM leases WHERE session_id = ?').run(sessionId);
    }
  }

  leaseHolder(sessionId: string): LeaseHolder | undefined {
    const lease = this.prepare('SELECT holder FROM leases WHERE session_id = ?').get(sessionId) as { holder: string } | undefined;
    return lease ? (JSON.parse(lease.holder) as LeaseHolder) : undefined;
  }

  /** Every session wake mode knows, with when it last received an event. */
  sessions(): Array<{ sessionId: string; lastEventAt: string | null }> {
    return (
      this
        .prepare(
          'SELECT session_id, MAX(received_at) AS last FROM inbox GROUP BY session_id ' +
            'UNION SELECT session_id, NULL FROM wakes WHERE session_id NOT IN (SELECT session_id FROM inbox) GROUP BY session_id',
        )
        .all() as Array<{ session_id: string; last: string | null }>
    ).map((row) => ({ sessionId: row.session_id, lastEventAt: row.last }));
  }

  deleteSession(sessionId: string): void {
    transaction(this.db, () => {
      for (const table of ['inbox', 'leases', 'wakes', 'breaker_trips']) {
        this.prepare(`DELETE FROM ${table} WHERE session_id = ?`).run(sessionId);
      }
    });
  }
}

interface InboxRow {
  session_id: string;
  event_id: string;
  seq: number;
  text: string;
  sender: string | null;
  sender_kind: InboxItem['senderKind'];
  batch_id: string | null;
  build: number;
  addressed: number;
  state: InboxItem['state'];
  attempts: number;
  received_at: string;
  done_at: string | null;
  reply: string | null;
  error: string | null;
}

function toItem(row: InboxRow): InboxItem {
  return {
    sessionId: row.session_id,
    eventId: row.event_id,
    seq: row.seq,
    text: row.text,
    sender: row.sender,
    senderKind: row.sender_kind,
    batchId: row.batch_id,
    build: row.build,
    addressed: row.addressed !== 0,
    state: row.state,
    attempts: row.attempts,
    receivedAt: row.received_at,
    doneAt: row.done_at,
    reply: row.reply,
    error: row.error,
  };
}
