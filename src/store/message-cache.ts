import type { StatementSync } from 'node:sqlite';
import type { Database } from './database.ts';
import type { StoredMessage } from './journal.ts';

/** What is kept of one session: the messages read, and those this connection appended after them. */
interface Kept {
  /** Read from the file (or appended and committed before the last read), oldest first. */
  messages: readonly StoredMessage[];
  /** Appended by this connection after `messages` and committed, not yet handed out. */
  committed: StoredMessage[];
  /** Appended inside the transaction now open: kept once it commits, dropped if it rolls back. */
  pending: StoredMessage[];
  /** False once an append left a gap after what is kept: the next read asks the file for the rest. */
  contiguous: boolean;
}

/**
 * The messages of the sessions one SQLite connection read last, so a long session's next turn
 * neither reads nor parses what it already has: a session of 4,000 messages otherwise parses them
 * all again at every turn's start, and the last turn's again even when only those are new.
 *
 * What is kept is always what the file holds, because:
 * - another connection's commit (another process, another Journal on the file) changes
 *   `PRAGMA data_version`, and then everything kept is dropped;
 * - this connection's own writes go through the Journal, which calls `forget` for every write to a
 *   session's messages other than an append after the last one kept, and `appended` for those;
 * - an append is kept only once its transaction commits (`committed`; `rolledBack` drops it),
 *   and only right after what is kept (a gap makes the next read ask the file);
 * - nothing read inside an open transaction is kept (it could still be rolled back).
 *
 * An appended message is kept as the object the writer gave when its JSON reads back as the same
 * value (isPlainJson), else as read back from its JSON: the writer must never mutate it afterwards
 * (the engine replaces a message through the journal, which forgets the session). The messages handed out are shared between reads: a caller must
 * never mutate one.
 */
export class MessageCache {
  private readonly sessions = new Map<string, Kept>();
  private version: unknown;
  private versionStatement: StatementSync | undefined;
  private pendingIn = new Set<Kept>();

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
    this.forgetUnheard();
    this.versionStatement ??= db.prepare('PRAGMA data_version');
    const version = (this.versionStatement.get() as { data_version: number }).data_version;
    if (version !== this.version) {
      this.sessions.clear();
      this.version = version;
    }
    const kept = this.sessions.get(sessionId);
    const added = kept?.contiguous ? kept.committed : readAfter(kept?.messages.at(-1)?.seq);
    const before = kept?.messages ?? [];
    // A new array when anything was added: one handed out earlier never changes under its reader.
    const messages = added.length > 0 ? before.concat(added) : before;
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, { messages, committed: [], pending: [], contiguous: true });
    if (this.sessions.size > this.limit) this.forget(this.sessions.keys().next().value!);
    return messages;
  }

  /**
   * `stored` was appended, its message written as `body` (its JSON); `inTransaction`: inside a
   * transaction still open.
   */
  appended(sessionId: string, stored: StoredMessage, body: string, inTransaction: boolean): void {
    const kept = this.sessions.get(sessionId);
    if (!kept) return;
    // Kept as given only when its JSON reads back as the same value; otherwise as the file has it
    // (bytes become an object of indices, a Date a string, an undefined key disappears).
    if (!isPlainJson(stored.message)) stored = { ...stored, message: JSON.parse(body) as StoredMessage['message'] };
    const lastSeq = (kept.pending.at(-1) ?? kept.committed.at(-1) ?? kept.messages.at(-1))?.seq;
    if (lastSeq !== undefined && stored.seq <= lastSeq) {
      // Below what is kept (after a history was cleared elsewhere, say): read it all afresh.
      this.forget(sessionId);
      return;
    }
    if (!kept.contiguous) return;
    // The first message of a session the file held none of is its first row whatever its number.
    if (lastSeq !== undefined && stored.seq !== lastSeq + 1) {
      kept.contiguous = false;
      return;
    }
    if (inTransaction) {
      kept.pending.push(stored);
      this.pendingIn.add(kept);
    } else kept.committed.push(stored);
  }

  /**
   * A transaction begins: appends still pending belong to one that ended without this cache
   * hearing how, so whether they are in the file is unknown; the next read asks it.
   */
  forgetUnheard(): void {
    for (const kept of this.pendingIn) {
      kept.pending = [];
      kept.contiguous = false;
    }
    this.pendingIn.clear();
  }

  /** The transaction open on the connection committed: what was appended in it is in the file. */
  committed(): void {
    for (const kept of this.pendingIn) {
      kept.committed.push(...kept.pending);
      kept.pending = [];
    }
    this.pendingIn.clear();
  }

  /** The transaction open on the connection rolled back: what was appended in it never was. */
  rolledBack(): void {
    for (const kept of this.pendingIn) kept.pending = [];
    this.pendingIn.clear();
  }

  /** A session's messages were changed other than by an append: read them afresh next time. */
  forget(sessionId: string): void {
    const kept = this.sessions.get(sessionId);
    if (kept) this.pendingIn.delete(kept);
    this.sessions.delete(sessionId);
  }
}

/**
 * Whether JSON.parse(JSON.stringify(value)) gives back an equal value: only plain objects, dense
 * arrays, strings, booleans, null and finite numbers (not -0), all the way down.
 */
export function isPlainJson(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !isPlainJson(value[i])) return false;
        return true;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) return false;
      for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key])) return false;
      return true;
    }
    default:
      return false;
  }
}
