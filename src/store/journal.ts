import type { ModelMessage } from 'ai';
import type { StatementSync } from 'node:sqlite';
import type { CallDecision } from '../core/hooks.ts';
import { scrubSecrets } from '../util/scrub.ts';
import { type Database, openDatabase, transaction } from './database.ts';
import { type CallRow, openCallsOf, parsedRows, toCall, startedTurn, toolCallParts, toTurn, type TurnRow } from './journal-rows.ts';
import { JOURNAL_MIGRATIONS } from './journal-schema.ts';
import { MessageCache } from './message-cache.ts';

/**
 * The durable journal: one agent identity, many sessions keyed by id. A turn is written as it
 * runs — the assistant message naming tool calls is committed before any tool executes, each
 * result as it arrives — so a process killed at any instant leaves evidence of how far it got.
 */
export type TurnStatus = 'running' | 'suspended' | 'done' | 'failed' | 'cancelled';
export type CallStatus = 'pending' | 'awaiting-approval' | 'awaiting-result' | 'started' | 'done' | 'settled';

export interface StoredMessage {
  seq: number;
  turnId: string | null;
  kind: 'user' | 'assistant' | 'tool' | 'summary' | 'note';
  message: ModelMessage;
}

export interface TurnRecord {
  id: string;
  sessionId: string;
  status: TurnStatus;
  steps: number;
  toolsRan: number;
  nudged: boolean;
  finalText: string | null;
  error: string | null;
  startedAt: string;
  endedAt: string | null;
}

/** What identifies a call and what it was asked to do: enough to write its ledger row. */
export interface CallIdentity {
  turnId: string;
  step: number;
  callId: string;
  ordinal: number;
  toolName: string;
  input: unknown;
}

export interface CallRecord {
  turnId: string;
  step: number;
  callId: string;
  ordinal: number;
  toolName: string;
  input: unknown;
  status: CallStatus;
  /** The full result (a ToolResultOutput) until the step settles; then null. */
  result: unknown;
  approval: { approved: boolean; reason?: string } | null;
  /** What the hooks and tool guardrails decided, journaled before the call could run (null: not asked). */
  decision: CallDecision | null;
}

const now = () => new Date().toISOString();

/** The newest unfinished turn of a session (served by the index turns_unfinished, journal-schema.ts). */
export const UNFINISHED_TURN_SQL =
  "SELECT * FROM turns WHERE session_id = ? AND status IN ('running', 'suspended') ORDER BY started_at DESC, rowid DESC LIMIT 1";

export class Journal {
  readonly db: Database;
  readonly path: string;

  private readonly statements = new Map<string, StatementSync>();
  private readonly cache = new MessageCache();

  constructor(path: string) {
    this.path = path;
    this.db = openDatabase(path, { migrations: JOURNAL_MIGRATIONS });
  }

  /** Prepares each statement once: preparing costs more than running these small statements. */
  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  transaction<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    this.cache.forgetUnheard();
    let result: T;
    try {
      result = transaction(this.db, fn);
    } catch (error) {
      this.cache.rolledBack();
      throw error;
    }
    this.cache.committed();
    return result;
  }

  /**
   * Opens a transaction for a caller that awaits inside it (SqliteJournalStore.transaction); false
   * when one is already open, which the caller then joins. End it with commit() or rollback().
   */
  begin(): boolean {
    if (this.db.isTransaction) return false;
    this.cache.forgetUnheard();
    this.prepare('BEGIN IMMEDIATE').run();
    return true;
  }

  commit(): void {
    this.prepare('COMMIT').run();
    this.cache.committed();
  }

  rollback(): void {
    this.cache.rolledBack();
    if (this.db.isTransaction) this.db.exec('ROLLBACK');
  }

  ensureSession(sessionId: string): void {
    const t = now();
    this
      .prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING')
      .run(sessionId, t, t);
  }

  hasSession(sessionId: string): boolean {
    return this.prepare('SELECT 1 FROM sessions WHERE id = ?').get(sessionId) !== undefined;
  }

  listSessions(): Array<{ id: string; createdAt: string; updatedAt: string }> {
    return (
      this.prepare('SELECT id, created_at, updated_at FROM sessions ORDER BY updated_at DESC').all() as Array<{
        id: string;
        created_at: string;
        updated_at: string;
      }>
    ).map((row) => ({ id: row.id, createdAt: row.created_at, updatedAt: row.updated_at }));
  }

  /** The sessions that carry an attribute (e.g. those an ACP client opened), newest first, with its value. */
  sessionsWithAttribute(name: string): Array<{ id: string; createdAt: string; updatedAt: string; value: string }> {
    return (
      this
        .prepare(
          'SELECT s.id, s.created_at, s.updated_at, a.value FROM sessions s JOIN session_attributes a ON a.session_id = s.id AND a.name = ? ORDER BY s.updated_at DESC, s.id',
        )
        .all(name) as Array<{ id: string; created_at: string; updated_at: string; value: string }>
    ).map((row) => ({ id: row.id, createdAt: row.created_at, updatedAt: row.updated_at, value: row.value }));
  }

  /** Drops what the cache keeps of a session's transcript, after a write that did not go through this class. */
  forgetTranscript(sessionId: string): void {
    this.cache.forget(sessionId);
  }

  /** Forgets a session's conversation (messages, turns, tool calls) and keeps the session and its attributes. */
  clearHistory(sessionId: string): void {
    this.cache.forget(sessionId);
    this.transaction(() => {
      this.db
        .prepare('DELETE FROM tool_calls WHERE turn_id IN (SELECT id FROM turns WHERE session_id = ?)')
        .run(sessionId);
      this.prepare('DELETE FROM turns WHERE session_id = ?').run(sessionId);
      this.prepare('DELETE FROM messages WHERE session_id = ?').run(sessionId);
    });
  }

  deleteSession(sessionId: string): void {
    this.transaction(() => {
      this.clearHistory(sessionId);
      this.prepare('DELETE FROM session_attributes WHERE session_id = ?').run(sessionId);
      this.prepare('DELETE FROM sessions WHERE id = ?').run(sessionId);
    });
  }

  /** Keeps a named value for a session (creating the session row when it is new). */
  setSessionAttribute(sessionId: string, name: string, value: string): void {
    this.transaction(() => {
      this.ensureSession(sessionId);
      this
        .prepare('INSERT INTO session_attributes (session_id, name, value) VALUES (?, ?, ?) ON CONFLICT(session_id, name) DO UPDATE SET value = excluded.value')
        .run(sessionId, name, value);
    });
  }

  sessionAttribute(sessionId: string, name: string): string | undefined {
    const row = this.prepare('SELECT value FROM session_attributes WHERE session_id = ? AND name = ?').get(sessionId, name) as { value: string } | undefined;
    return row?.value;
  }

  // ---- messages -------------------------------------------------------------------------

  messages(sessionId: string): StoredMessage[] {
    return this.messagesAfter(sessionId, undefined);
  }

  /**
   * The session's messages for a turn to read: like messages(), but shared between reads
   * (MessageCache), so never mutate one; a message this connection appended is handed out as the
   * object given to appendMessage.
   */
  transcript(sessionId: string): readonly StoredMessage[] {
    return this.cache.read(this.db, sessionId, (seq) => this.messagesAfter(sessionId, seq));
  }

  private messagesAfter(sessionId: string, seq: number | undefined): StoredMessage[] {
    const rows = (
      seq === undefined
        ? this.prepare('SELECT seq, turn_id, kind, body FROM messages WHERE session_id = ? ORDER BY seq').all(sessionId)
        : this.prepare('SELECT seq, turn_id, kind, body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq').all(sessionId, seq)
    ) as Array<{ seq: number; turn_id: string | null; kind: StoredMessage['kind']; body: string }>;
    return rows.map((row) => ({
      seq: row.seq,
      turnId: row.turn_id,
      kind: row.kind,
      message: JSON.parse(row.body) as ModelMessage,
    }));
  }

  /**
   * Appends a message and returns its sequence number. A caller that keeps the transcript in
   * memory may pass the next number itself; the primary key still refuses a duplicate. The
   * message is kept for transcript() as given, so it must not be mutated afterwards (replace it
   * with replaceMessage).
   */
  appendMessage(
    sessionId: string,
    turnId: string | null,
    kind: StoredMessage['kind'],
    message: ModelMessage,
    seq?: number,
  ): number {
    const next =
      seq ??
      (
        this.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM messages WHERE session_id = ?').get(sessionId) as {
          next: number;
        }
      ).next;
    const body = JSON.stringify(message);
    this
      .prepare('INSERT INTO messages (session_id, seq, turn_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(sessionId, next, turnId, kind, body, now());
    this.cache.appended(sessionId, { seq: next, turnId, kind, message }, body, this.db.isTransaction);
    return next;
  }

  replaceMessage(sessionId: string, seq: number, message: ModelMessage): void {
    this.cache.forget(sessionId);
    this
      .prepare('UPDATE messages SET body = ? WHERE session_id = ? AND seq = ?')
      .run(JSON.stringify(message), sessionId, seq);
  }

  /** Replaces every message before `cutSeq` with one summary message (compaction). */
  compact(sessionId: string, cutSeq: number, summary: ModelMessage): void {
    this.cache.forget(sessionId);
    this.transaction(() => {
      this.prepare('DELETE FROM messages WHERE session_id = ? AND seq < ?').run(sessionId, cutSeq);
      this.db
        .prepare('INSERT INTO messages (session_id, seq, turn_id, kind, body, created_at) VALUES (?, ?, NULL, ?, ?, ?)')
        .run(sessionId, cutSeq - 1, 'summary', JSON.stringify(summary), now());
    });
  }

  // ---- turns ----------------------------------------------------------------------------

  startTurn(turnId: string, sessionId: string): TurnRecord {
    const t = now();
    this.prepare('INSERT INTO turns (id, session_id, status, started_at) VALUES (?, ?, ?, ?)').run(turnId, sessionId, 'running', t);
    this.prepare('UPDATE sessions SET updated_at = ? WHERE id = ?').run(t, sessionId);
    return startedTurn(turnId, sessionId, t);
  }

  turn(turnId: string): TurnRecord | undefined {
    const row = this.prepare('SELECT * FROM turns WHERE id = ?').get(turnId) as TurnRow | undefined;
    return row ? toTurn(row) : undefined;
  }

  /** The newest turn of the session that has not ended (running or suspended), if any. */
  unfinishedTurn(sessionId: string): TurnRecord | undefined {
    const row = this.prepare(UNFINISHED_TURN_SQL).get(sessionId) as TurnRow | undefined;
    return row ? toTurn(row) : undefined;
  }

  /**
   * Takes a suspended turn for one continuation: true for exactly one caller, whichever process
   * it is in (one conditional UPDATE), so a turn answered from two places runs once.
   */
  claimSuspended(turnId: string): boolean {
    return this.prepare("UPDATE turns SET status = 'running' WHERE id = ? AND status = 'suspended'").run(turnId).changes === 1;
  }

  /** Every turn paused and waiting for its caller (approvals, host tool results, a pause request), oldest first. */
  suspendedTurns(): TurnRecord[] {
    return (
      this.prepare("SELECT * FROM turns WHERE status = 'suspended' ORDER BY started_at, rowid").all() as unknown as TurnRow[]
    ).map(toTurn);
  }

  turns(sessionId: string): TurnRecord[] {
    return (
      this.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY started_at, rowid').all(sessionId) as unknown as TurnRow[]
    ).map(toTurn);
  }

  updateTurn(
    turnId: string,
    patch: Partial<Pick<TurnRecord, 'status' | 'steps' | 'toolsRan' | 'nudged' | 'finalText' | 'error'>>,
  ): void {
    const sets: string[] = [];
    const values: Array<string | number | null> = [];
    const column: Record<string, string> = {
      status: 'status',
      steps: 'steps',
      toolsRan: 'tools_ran',
      nudged: 'nudged',
      finalText: 'final_text',
      error: 'error',
    };
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      sets.push(`${column[key]} = ?`);
      // An error can quote a provider's reply, and a provider can echo the key it was sent.
      if (key === 'error' && typeof value === 'string') values.push(scrubSecrets(value));
      else values.push(typeof value === 'boolean' ? Number(value) : (value as string | number | null));
    }
    if (patch.status && patch.status !== 'running' && patch.status !== 'suspended') {
      sets.push('ended_at = ?');
      values.push(now());
    }
    if (sets.length === 0) return;
    this.prepare(`UPDATE turns SET ${sets.join(', ')} WHERE id = ?`).run(...values, turnId);
  }

  // ---- tool calls -----------------------------------------------------------------------
  //
  // The ledger holds a row for a call only once something is recorded of it (a status beyond
  // pending, a result, an approval). A call nothing is recorded of yet is still on record: the
  // assistant message naming it is committed before any call runs, and `openCalls` reads it from
  // there. That keeps a step of safe calls to one journal commit that touches no ledger row.

  private static readonly CALL_COLUMNS = 'turn_id, step, call_id, ordinal, tool_name, input, status, result, approval, decision';

  private upsertCall(call: CallIdentity, status: CallStatus, written: { result?: string; approval?: string; decision?: string }, update: string): void {
    this
      .prepare(
        `INSERT INTO tool_calls (${Journal.CALL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ` +
          `ON CONFLICT (turn_id, step, call_id) DO UPDATE SET ${update}`,
      )
      .run(call.turnId, call.step, call.callId, call.ordinal, call.toolName, JSON.stringify(call.input ?? null), status, written.result ?? null, written.approval ?? null, written.decision ?? null);
  }

  // Calls are addressed by (turn, step, call id): some models reuse call ids across steps.
  setCallStatus(call: CallIdentity, status: CallStatus): void {
    this.upsertCall(call, status, {}, 'status = excluded.status');
  }

  recordCallResult(call: CallIdentity, result: unknown): void {
    this.upsertCall(call, 'done', { result: JSON.stringify(result) }, "status = 'done', result = excluded.result");
  }

  recordApproval(call: CallIdentity & { status: CallStatus }, approval: { approved: boolean; reason?: string }): void {
    this.upsertCall(call, call.status, { approval: JSON.stringify(approval) }, 'approval = excluded.approval');
  }

  recordDecision(call: CallIdentity & { status: CallStatus }, decision: CallDecision): void {
    this.upsertCall(call, call.status, { decision: JSON.stringify(decision) }, 'decision = excluded.decision');
  }

  settleStep(turnId: string, step: number): void {
    this
      .prepare("UPDATE tool_calls SET status = 'settled', result = NULL WHERE turn_id = ? AND step = ?")
      .run(turnId, step);
  }

  calls(turnId: string, step?: number): CallRecord[] {
    const rows = (
      step === undefined
        ? this.prepare('SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY step, ordinal').all(turnId)
        : this.prepare('SELECT * FROM tool_calls WHERE turn_id = ? AND step = ? ORDER BY ordinal').all(turnId, step)
    ) as unknown as CallRow[];
    return rows.map(toCall);
  }

  /**
   * Every call the turn has made, in order (step, then place in the step), read from its
   * assistant messages: the record of what the model asked for, committed before any call ran.
   */
  turnCalls(turnId: string): Array<{ step: number; ordinal: number; toolName: string; input: unknown }> {
    const turn = this.turn(turnId);
    if (!turn) return [];
    const rows = this
      .prepare("SELECT body FROM messages WHERE session_id = ? AND turn_id = ? AND kind = 'assistant' ORDER BY seq")
      .all(turn.sessionId, turnId) as Array<{ body: string }>;
    return rows.flatMap((row, index) =>
      toolCallParts(JSON.parse(row.body) as ModelMessage).map((part, ordinal) => ({ step: index + 1, ordinal, toolName: part.toolName, input: part.input })),
    );
  }

  /**
   * The calls of the turn's newest step that has not settled: the step whose assistant message
   * names calls and has no tool message after it. Each call is its ledger row when it has one,
   * otherwise a pending call read from the assistant message (ordinal = its place there).
   */
  openCalls(turnId: string): CallRecord[] {
    const turn = this.turn(turnId);
    if (!turn) return [];
    const rows = this
      .prepare("SELECT kind, body FROM messages WHERE session_id = ? AND turn_id = ? AND kind IN ('assistant', 'tool') ORDER BY seq")
      .all(turn.sessionId, turnId) as Array<{ kind: 'assistant' | 'tool'; body: string }>;
    return openCallsOf(turnId, parsedRows(rows), this.calls(turnId));
  }
}

