import type { ModelMessage } from 'ai';
import type { StoredMessage } from './journal.ts';

/** A row of acx_messages as a transcript read selects it. */
export interface MessageRow {
  seq: number;
  turn_id: string | null;
  kind: StoredMessage['kind'];
  body: string;
}

export function storedMessage(row: MessageRow): StoredMessage {
  return { seq: row.seq, turnId: row.turn_id, kind: row.kind, message: JSON.parse(row.body) as ModelMessage };
}

/**
 * A session's transcript epoch (postgres-journal-schema.ts) with its messages after `$2`, in one
 * statement and so in one snapshot. No row at all: there is no such session. One row with a null
 * seq: the session, with nothing after `$2`.
 */
const TRANSCRIPT_SINCE =
  'SELECT s.transcript_epoch AS epoch, m.seq, m.turn_id, m.kind, m.body FROM acx_sessions s ' +
  'LEFT JOIN acx_messages m ON m.agent_id = s.agent_id AND m.session_id = s.id AND m.seq > $2 ' +
  'WHERE s.agent_id = $agent AND s.id = $1 ORDER BY m.seq';

/** Gives session `$1` a new transcript epoch: for a write below its last message that no trigger sees (see PostgresTranscripts). */
export const RENEW_TRANSCRIPT_EPOCH = "UPDATE acx_sessions SET transcript_epoch = nextval('acx_transcript_epochs') WHERE agent_id = $agent AND id = $1";

type SinceRow = { epoch: string } & ({ seq: null } | MessageRow);

type Query = <R extends object>(sql: string, values: unknown[]) => Promise<R[]>;

interface Kept {
  epoch: string;
  messages: readonly StoredMessage[];
  /** JSON characters of the messages, what the cache's size is counted in. */
  chars: number;
}

/**
 * The transcripts of the sessions one PostgreSQL journal read last, so that a long session's next
 * turn reads only the messages added since: a worker answering an event on a session of 4,000
 * messages otherwise fetches and parses all of them before the model is asked.
 *
 * What is kept is what the server holds, because every change to a session's messages other than
 * an append after its last one gives the session a new transcript epoch from a sequence, in the
 * same transaction: an UPDATE or DELETE by whoever makes it (a replaced message, a rewind, a
 * cleared or deleted session, a hand edit: a trigger, postgres-journal-schema.ts), and the one
 * insert acx makes below the last message, a compaction's summary, by RENEW_TRANSCRIPT_EPOCH (its
 * DELETE may remove nothing when another compaction got there first). A re-created session gets
 * a new epoch too. A read fetches the epoch and the messages after the last one kept in one
 * statement; when the epoch differs, or what came after does not continue the kept messages seq
 * by seq, it reads the whole transcript instead. Appends become visible in seq order: a message's
 * seq is only taken once the one before it committed (the primary key refuses two writers the
 * same number). A row inserted by hand below the last message is not seen by a reader that kept
 * the session until its epoch changes.
 *
 * The messages handed out are shared between reads: a caller must never mutate one. Bounded by
 * sessions and by JSON size: a worker serving many long sessions keeps the most recently read.
 */
export class PostgresTranscripts {
  private readonly sessions = new Map<string, Kept>();
  private chars = 0;
  private readonly maxSessions: number;
  private readonly maxChars: number;

  constructor(limits: { sessions?: number; chars?: number } = {}) {
    this.maxSessions = limits.sessions ?? 64;
    this.maxChars = limits.chars ?? 32 * 1024 * 1024;
  }

  async read(sessionId: string, query: Query): Promise<readonly StoredMessage[]> {
    const kept = this.take(sessionId);
    const last = kept?.messages.at(-1)?.seq;
    let rows = await query<SinceRow>(TRANSCRIPT_SINCE, [sessionId, last ?? -1]);
    let base: readonly StoredMessage[] = [];
    if (kept && rows.length > 0) {
      const first = rows[0]!.seq;
      const continues = rows[0]!.epoch === kept.epoch && (first === null || last === undefined || first === last + 1);
      if (continues) base = kept.messages;
      else rows = await query<SinceRow>(TRANSCRIPT_SINCE, [sessionId, -1]);
    }
    if (rows.length === 0) return []; // no such session (kept: nothing)
    let chars = kept && base === kept.messages ? kept.chars : 0;
    const added: StoredMessage[] = [];
    for (const row of rows) {
      if (row.seq === null) continue;
      added.push(storedMessage(row));
      chars += row.body.length;
    }
    // A new array when anything was added: one handed out earlier never changes under its reader.
    const messages = added.length > 0 ? base.concat(added) : base;
    this.keep(sessionId, { epoch: rows[0]!.epoch, messages, chars });
    return messages;
  }

  /** Removes and returns what is kept of a session (a read puts it back as the most recent). */
  private take(sessionId: string): Kept | undefined {
    const kept = this.sessions.get(sessionId);
    if (kept) {
      this.sessions.delete(sessionId);
      this.chars -= kept.chars;
    }
    return kept;
  }

  private keep(sessionId: string, kept: Kept): void {
    this.take(sessionId); // what an overlapping read of the session kept meanwhile
    if (kept.chars > this.maxChars) return;
    this.sessions.set(sessionId, kept);
    this.chars += kept.chars;
    for (const [oldest, other] of this.sessions) {
      if (this.sessions.size <= this.maxSessions && this.chars <= this.maxChars) break;
      this.sessions.delete(oldest);
      this.chars -= other.chars;
    }
  }
}
