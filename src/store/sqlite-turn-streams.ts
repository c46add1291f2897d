import type { StatementSync } from 'node:sqlite';
import { type Database, openDatabase, transaction } from './database.ts';
import { currentHolder, holderIsAlive, type LeaseHolder } from './lease-holder.ts';
import type { TurnStreamInfo, TurnStreamKey, TurnStreamPart, TurnStreamStore } from './turn-streams.ts';

/**
 * Turn streams in a SQLite file (`streams.db` beside the journal), for the processes of one host.
 * A writer is its token and its process (pid and start time): a writer whose process is gone is
 * gone at once, with no expiry to wait for. Writes are serialised by SQLite's write lock, so the
 * check that a writer still holds its stream and the write it guards are one step.
 */
const MIGRATIONS = [
  `CREATE TABLE turn_streams (
     session_id TEXT NOT NULL,
     turn_id TEXT NOT NULL,
     status TEXT NOT NULL,
     writer TEXT NOT NULL,
     holder TEXT NOT NULL,
     next_seq INTEGER NOT NULL DEFAULT 0,
     opened_at INTEGER NOT NULL,
     written_at INTEGER NOT NULL,
     finished_at INTEGER,
     PRIMARY KEY (session_id, turn_id)
   ) WITHOUT ROWID;
   CREATE INDEX turn_streams_by_session ON turn_streams(session_id, status, written_at);
   CREATE INDEX turn_streams_finished ON turn_streams(status, finished_at);
   CREATE TABLE turn_stream_parts (
     session_id TEXT NOT NULL,
     turn_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     body TEXT NOT NULL,
     PRIMARY KEY (session_id, turn_id, seq),
     FOREIGN KEY (session_id, turn_id) REFERENCES turn_streams(session_id, turn_id) ON DELETE CASCADE
   ) WITHOUT ROWID;`,
];

interface StreamRow {
  session_id: string;
  turn_id: string;
  status: string;
  writer: string;
  holder: string;
  next_seq: number;
}

export class SqliteTurnStreamStore implements TurnStreamStore {
  readonly kind = 'sqlite' as const;
  readonly renewEveryMs = undefined;
  readonly db: Database;
  private readonly statements = new Map<string, StatementSync>();
  private readonly holder: string;
  private readonly isAlive: (holder: LeaseHolder) => boolean;

  /** `isAlive` judges a writer's process (tests stand in for a process that died). */
  constructor(path: string, options: { isAlive?: (holder: LeaseHolder) => boolean; holder?: LeaseHolder } = {}) {
    this.db = openDatabase(path, { migrations: MIGRATIONS });
    this.holder = JSON.stringify(options.holder ?? currentHolder());
    this.isAlive = options.isAlive ?? holderIsAlive;
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  private row(key: TurnStreamKey): StreamRow | undefined {
    return this.prepare('SELECT * FROM turn_streams WHERE session_id = ? AND turn_id = ?').get(key.sessionId, key.turnId) as StreamRow | undefined;
  }

  private infoOf(row: StreamRow): TurnStreamInfo {
    return {
      sessionId: row.session_id,
      turnId: row.turn_id,
      status: row.status as TurnStreamInfo['status'],
      writer: row.writer,
      writerAlive: this.isAlive(JSON.parse(row.holder) as LeaseHolder),
      parts: row.next_seq,
    };
  }

  async open(key: TurnStreamKey, writer: string): Promise<void> {
    const now = Date.now();
    this.prepare(
      `INSERT INTO turn_streams (session_id, turn_id, status, writer, holder, opened_at, written_at) VALUES (?, ?, 'open', ?, ?, ?, ?)
       ON CONFLICT (session_id, turn_id) DO UPDATE SET status = 'open', writer = excluded.writer, holder = excluded.holder, written_at = excluded.written_at, finished_at = NULL`,
    ).run(key.sessionId, key.turnId, writer, this.holder, now, now);
  }

  async append(key: TurnStreamKey, writer: string, bodies: readonly string[]): Promise<boolean> {
    return transaction(this.db, () => {
      const row = this.row(key);
      if (!row || row.status !== 'open' || row.writer !== writer) return false;
      const insert = this.prepare('INSERT INTO turn_stream_parts (session_id, turn_id, seq, body) VALUES (?, ?, ?, ?)');
      bodies.forEach((body, i) => insert.run(key.sessionId, key.turnId, row.next_seq + i, body));
      this.prepare('UPDATE turn_streams SET next_seq = ?, written_at = ? WHERE session_id = ? AND turn_id = ?').run(row.next_seq + bodies.length, Date.now(), key.sessionId, key.turnId);
      return true;
    });
  }

  async renew(key: TurnStreamKey, writer: string): Promise<boolean> {
    const row = this.row(key);
    return row?.status === 'open' && row.writer === writer;
  }

  async finish(key: TurnStreamKey, writer: string): Promise<void> {
    this.prepare("UPDATE turn_streams SET status = 'done', finished_at = ? WHERE session_id = ? AND turn_id = ? AND writer = ? AND status = 'open'").run(Date.now(), key.sessionId, key.turnId, writer);
  }

  async takeOver(key: TurnStreamKey, writer: string): Promise<boolean> {
    return transaction(this.db, () => {
      const row = this.row(key);
      if (!row || row.status !== 'open' || this.infoOf(row).writerAlive) return false;
      this.prepare('UPDATE turn_streams SET writer = ?, holder = ?, written_at = ? WHERE session_id = ? AND turn_id = ?').run(writer, this.holder, Date.now(), key.sessionId, key.turnId);
      return true;
    });
  }

  async info(key: TurnStreamKey): Promise<TurnStreamInfo | undefined> {
    const row = this.row(key);
    return row ? this.infoOf(row) : undefined;
  }

  async active(sessionId: string): Promise<TurnStreamInfo | undefined> {
    const row = this.prepare("SELECT * FROM turn_streams WHERE session_id = ? AND status = 'open' ORDER BY written_at DESC LIMIT 1").get(sessionId) as StreamRow | undefined;
    return row ? this.infoOf(row) : undefined;
  }

  async parts(key: TurnStreamKey, afterSeq: number, limit: number): Promise<TurnStreamPart[]> {
    return this.prepare('SELECT seq, body FROM turn_stream_parts WHERE session_id = ? AND turn_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(key.sessionId, key.turnId, afterSeq, limit) as unknown as TurnStreamPart[];
  }

  async prune(keepFinishedMs: number): Promise<number> {
    const before = Date.now() - keepFinishedMs;
    return transaction(this.db, () => {
      const done = Number(this.prepare("DELETE FROM turn_streams WHERE status = 'done' AND finished_at < ?").run(before).changes);
      const stale = (this.prepare("SELECT * FROM turn_streams WHERE status = 'open' AND written_at < ?").all(before) as unknown as StreamRow[]).filter((row) => !this.infoOf(row).writerAlive);
      const remove = this.prepare('DELETE FROM turn_streams WHERE session_id = ? AND turn_id = ?');
      for (const row of stale) remove.run(row.session_id, row.turn_id);
      return done + stale.length;
    });
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.prepare('DELETE FROM turn_streams WHERE session_id = ?').run(sessionId);
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }
}
