import type { StatementSync } from 'node:sqlite';
import type { Database } from './database.ts';
import type { StoredMessage } from './journal.ts';

/**
 * The parsed messages of the sessions one SQLite connection read last, so a long session's next
 * turn reads and parses only what was written since its last (a session of 4,000 messages
 * otherwise parses all of them again at every turn's start).
 *
 * What is kept is always what the file holds, because:
 * - another connection's commit (another process, another Journal on the file) changes
 *   `PRAGMA data_version`, and then everything kept is dropped;
 * - this connection's own writes go through the Journal, which calls `forget` for every write to a
 *   session's messages other than an append after the last one kept; appends are read back, by
 *   sequence number, at the next read;
 * - nothing read inside an open transaction is kept (it could still be rolled back).
 *
 * The messages handed out are shared between reads: a caller must never mutate one.
 */
export class MessageCache {
  private readonly sessions = new Map<string, readonly StoredMessage[]>();
  private version: unknown;
  private versionStatement: StatementSync | undefined;

  private readonly limit: number;
  constructor(limit = 8) {
    this.limit = limit;
  }

  /**
   * The session's messages, oldest first: those kept, and those after them (`readAfter(seq)`
   * gives the rows after sequence number `seq`, or every row when `seq` is undefined).
   */
  read(db: Database, sessionId: string, readAfter: (seq: number | undefined) => StoredMessage[]): readonly StoredMessage[] {
    if (db.isTransaction) return readAfter(undefined);
    this.versionStatement ??= db.prepare('PRAGMA data_version');
    const version = (this.versionStatement.get() as { data_version: number }).data_version;
    if (version !== this.version) {
      this.sessions.clear();
      this.version = version;
    }
    const kept = this.sessions.get(sessionId) ?? [];
    const added = readAfter(kept.at(-1)?.seq);
    // A new array when anything was added: one handed out earlier never changes under its reader.
    const messages = added.length > 0 ? kept.concat(added) : kept;
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, messages);
    if (this.sessions.size > this.limit) this.sessions.delete(this.sessions.keys().next().value!);
    return messages;
  }

  /** A message was appended at `seq`: kept messages stay valid only when it comes after them. */
  appended(sessionId: string, seq: number): void {
    const last = this.sessions.get(sessionId)?.at(-1);
    if (last && seq <= last.seq) this.sessions.delete(sessionId);
  }

  /** A session's messages were changed other than by an append: read them afresh next time. */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }
}
