import type { ModelMessage } from 'ai';
import type pg from 'pg';
import type { CallDecision } from '../core/hooks.ts';
import { scrubSecrets } from '../util/scrub.ts';
import type { CallIdentity, CallRecord, CallStatus, StoredMessage, TurnRecord } from './journal.ts';
import { type CallRow, openCallsOf, parsedRows, toCall, startedTurn, toolCallParts, toTurn, type TurnRow } from './journal-rows.ts';
import type { JournalStore, SessionLeases, SessionListing, TurnPatch } from './journal-store.ts';
import { recordedHolderGone } from './lease-holder.ts';
import { JOURNAL_MIGRATIONS } from './postgres-journal-schema.ts';
import { checkPostgres, migratePostgres } from './postgres-migrations.ts';
import { openPostgresPool } from './postgres-pool.ts';
import { type PreparedWrite, PostgresWriteBatches } from './postgres-write-batch.ts';
import type { SessionBranches } from './session-branches.ts';
import { PostgresSessionBranches } from './postgres-session-branches.ts';
import { type MessageRow, PostgresTranscripts, RENEW_TRANSCRIPT_EPOCH, storedMessage } from './postgres-transcripts.ts';

/**
 * The journal on PostgreSQL: the same tables and the same invariants as the SQLite journal
 * (postgres-journal-schema.ts), so sessions can be served from any host. Round trips, not the
 * server, are what a step pays on PostgreSQL: how a transaction's writes reach the server in as
 * few as it can is postgres-write-batch.ts.
 */

const now = () => new Date().toISOString();

const APPEND_AT_SEQ = 'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ($agent, $1, $2, $3, $4, $5, $6)';
/** A message appended after the session's last, numbered in one statement: the primary key refuses a number two writers picked at once. */
const APPEND_NEXT =
  'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) ' +
  'SELECT $agent, $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 FROM acx_messages WHERE agent_id = $agent AND session_id = $1';
/** The newest turn of session $1 that has not ended (running or suspended), if any. */
const UNFINISHED_TURN =
  "SELECT * FROM acx_turns WHERE agent_id = $agent AND session_id = $1 AND status IN ('running', 'suspended') ORDER BY started_at DESC, ord DESC LIMIT 1";
/** The turn of id $2 (flagged false) and session $1's unfinished turn (flagged true), in one statement. */
const TURN_AND_UNFINISHED = `(SELECT *, false AS unfinished FROM acx_turns WHERE agent_id = $agent AND id = $2) UNION ALL (${UNFINISHED_TURN.replace('SELECT *', 'SELECT *, true AS unfinished')})`;
const SETTLE_STEP = "UPDATE acx_tool_calls SET status = 'settled', result = NULL WHERE agent_id = $agent AND turn_id = $1 AND step = $2";

/**
 * An engine step's commit, the writes it holds in this order: the previous step's tool message,
 * its settlement, the new assistant message (persistence.ts: commit). As one statement: the
 * settlement and the two messages touch different tables, so running them in one snapshot
 * changes nothing they do.
 */
const STEP_COMMIT =
  "WITH settled AS (UPDATE acx_tool_calls SET status = 'settled', result = NULL WHERE agent_id = $agent AND turn_id = $7 AND step = $8) " +
  'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ($agent, $1, $2, $3, $4, $5, $6), ($agent, $9, $10, $11, $12, $13, $14)';

/** The writes every engine step makes (its messages and its settlement), prepared on each connection. */
const PREPARED_WRITES = new Map<string, PreparedWrite>([
  [APPEND_AT_SEQ, { name: 'acx_append_at_seq', arity: 6 }],
  [SETTLE_STEP, { name: 'acx_settle_step', arity: 2 }],
  [STEP_COMMIT, { name: 'acx_step_commit', arity: 14, fuses: [APPEND_AT_SEQ, SETTLE_STEP, APPEND_AT_SEQ] }],
]);

export interface PostgresJournalOptions {
  /**
   * The agent whose sessions the store holds. Required: agents share the database, and a store
   * opened for the wrong agent would read and write another agent's sessions.
   */
  agentId: string;
  maxConnections?: number;
}

export class PostgresJournalStore implements JournalStore {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly batches: PostgresWriteBatches;
  private ready: Promise<void> | undefined;
  private readonly url: string;
  /** Whose sessions these are (see DEFAULT_AGENT_ID): every statement reads and writes only this agent's rows. */
  readonly agentId: string;
  readonly branches: SessionBranches = new PostgresSessionBranches(this);
  private readonly transcripts = new PostgresTranscripts();

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, options: PostgresJournalOptions) {
    this.url = url;
    this.agentId = options.agentId;
    this.pool = openPostgresPool(url, options.maxConnections ?? 10);
    this.batches = new PostgresWriteBatches(this.pool, this.agentId, PREPARED_WRITES, () => this.migrated());
  }

  static async open(url: string, options: PostgresJournalOptions): Promise<PostgresJournalStore> {
    const store = new PostgresJournalStore(url, options);
    await store.migrated();
    return store;
  }

  /** Checks the server and applies the migrations, once (every query waits for it). */
  migrated(): Promise<void> {
    this.ready ??= checkPostgres(this.pool, this.url).then(() => migratePostgres(this.pool, JOURNAL_MIGRATIONS, 'acx_journal_migrations'));
    return this.ready;
  }

  private rows<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
    return this.batches.rows<R>(sql, values);
  }

  private run(sql: string, values: unknown[] = []): Promise<number> {
    return this.batches.run(sql, values);
  }

  /** A write nobody reads the result of: inside a transaction, held for the next round trip. */
  private write(sql: string, values: unknown[] = []): Promise<void> {
    return this.batches.write(sql, values);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  readonly leases: SessionLeases = {
    take: async (sessionId, holder, ttlMs) => {
      const taken =
        (await this.run(
          "INSERT INTO acx_session_leases (agent_id, session_id, holder, expires_at) VALUES ($agent, $1, $2, now() + $3 * interval '1 millisecond') " +
            'ON CONFLICT (agent_id, session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at ' +
            'WHERE acx_session_leases.expires_at < now() OR acx_session_leases.holder = excluded.holder',
          [sessionId, holder, ttlMs],
        )) === 1;
      if (taken) return true;
      // Held: by a process that exited on this machine, it is taken from that holder at once (recordedHolderGone).
      const [held] = await this.rows<{ holder: string }>('SELECT holder FROM acx_session_leases WHERE agent_id = $agent AND session_id = $1', [sessionId]);
      if (!held || !recordedHolderGone(held.holder)) return false;
      return (
        (await this.run("UPDATE acx_session_leases SET holder = $2, expires_at = now() + $4 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND holder = $3", [
          sessionId,
          holder,
          held.holder,
          ttlMs,
        ])) === 1
      );
    },
    renew: async (sessionId, holder, ttlMs) =>
      (await this.run("UPDATE acx_session_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND holder = $2", [sessionId, holder, ttlMs])) === 1,
    release: async (sessionId, holder) => {
      await this.run('DELETE FROM acx_session_leases WHERE agent_id = $agent AND session_id = $1 AND holder = $2', [sessionId, holder]);
    },
  };

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.batches.transaction(fn);
  }

  async ensureSession(sessionId: string): Promise<void> {
    const t = now();
    await this.write('INSERT INTO acx_sessions (agent_id, id, created_at, updated_at) VALUES ($agent, $1, $2, $2) ON CONFLICT (agent_id, id) DO NOTHING', [sessionId, t]);
  }

  async hasSession(sessionId: string): Promise<boolean> {
    return (await this.rows('SELECT 1 FROM acx_sessions WHERE agent_id = $agent AND id = $1', [sessionId])).length > 0;
  }

  async listSessions(): Promise<SessionListing[]> {
    const rows = await this.rows<{ id: string; created_at: string; updated_at: string }>('SELECT id, created_at, updated_at FROM acx_sessions WHERE agent_id = $agent ORDER BY updated_at DESC');
    return rows.map((row) => ({ id: row.id, createdAt: row.created_at, updatedAt: row.updated_at }));
  }

  async sessionsWithAttribute(name: string): Promise<Array<SessionListing & { value: string }>> {
    const rows = await this.rows<{ id: string; created_at: string; updated_at: string; value: string }>(
      'SELECT s.id, s.created_at, s.updated_at, a.value FROM acx_sessions s JOIN acx_session_attributes a ON a.agent_id = s.agent_id AND a.session_id = s.id AND a.name = $1 ' +
        'WHERE s.agent_id = $agent ORDER BY s.updated_at DESC, s.id',
      [name],
    );
    return rows.map((row) => ({ id: row.id, createdAt: row.created_at, updatedAt: row.updated_at, value: row.value }));
  }

  async clearHistory(sessionId: string): Promise<void> {
    await this.transaction(async () => {
      await this.write('DELETE FROM acx_tool_calls WHERE agent_id = $agent AND turn_id IN (SELECT id FROM acx_turns WHERE agent_id = $agent AND session_id = $1)', [sessionId]);
      await this.write('DELETE FROM acx_turns WHERE agent_id = $agent AND session_id = $1', [sessionId]);
      await this.write('DELETE FROM acx_messages WHERE agent_id = $agent AND session_id = $1', [sessionId]);
    });
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.transaction(async () => {
      await this.clearHistory(sessionId);
      await this.write('DELETE FROM acx_session_attributes WHERE agent_id = $agent AND session_id = $1', [sessionId]);
      await this.write('DELETE FROM acx_sessions WHERE agent_id = $agent AND id = $1', [sessionId]);
    });
  }

  async setSessionAttribute(sessionId: string, name: string, value: string): Promise<void> {
    await this.transaction(async () => {
      await this.ensureSession(sessionId);
      await this.write(
        'INSERT INTO acx_session_attributes (agent_id, session_id, name, value) VALUES ($agent, $1, $2, $3) ON CONFLICT (agent_id, session_id, name) DO UPDATE SET value = excluded.value',
        [sessionId, name, value],
      );
    });
  }

  async sessionAttribute(sessionId: string, name: string): Promise<string | undefined> {
    const rows = await this.rows<{ value: string }>('SELECT value FROM acx_session_attributes WHERE agent_id = $agent AND session_id = $1 AND name = $2', [sessionId, name]);
    return rows[0]?.value;
  }

  /** The session's messages for a turn to read, shared between reads (never mutate one): see PostgresTranscripts. */
  transcript(sessionId: string): Promise<readonly StoredMessage[]> {
    // Inside a transaction a read sees its own writes, which may still roll back: not kept.
    if (this.batches.inTransaction()) return this.messages(sessionId);
    return this.transcripts.read(sessionId, (sql, values) => this.rows(sql, values));
  }

  async messages(sessionId: string): Promise<StoredMessage[]> {
    const rows = await this.rows<MessageRow>('SELECT seq, turn_id, kind, body FROM acx_messages WHERE agent_id = $agent AND session_id = $1 ORDER BY seq', [sessionId]);
    return rows.map(storedMessage);
  }

  async appendMessage(sessionId: string, turnId: string | null, kind: StoredMessage['kind'], message: ModelMessage, seq?: number): Promise<number> {
    const body = JSON.stringify(message);
    if (seq !== undefined) {
      await this.write(APPEND_AT_SEQ, [sessionId, seq, turnId, kind, body, now()]);
      return seq;
    }
    const rows = await this.rows<{ seq: number }>(`${APPEND_NEXT} RETURNING seq`, [sessionId, turnId, kind, body, now()]);
    return rows[0]!.seq;
  }

  async replaceMessage(sessionId: string, seq: number, message: ModelMessage): Promise<void> {
    await this.write('UPDATE acx_messages SET body = $1 WHERE agent_id = $agent AND session_id = $2 AND seq = $3', [JSON.stringify(message), sessionId, seq]);
  }

  async compact(sessionId: string, cutSeq: number, summary: ModelMessage): Promise<void> {
    await this.transaction(async () => {
      await this.write('DELETE FROM acx_messages WHERE agent_id = $agent AND session_id = $1 AND seq < $2', [sessionId, cutSeq]);
      await this.write("INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ($agent, $1, $2, NULL, 'summary', $3, $4)", [sessionId, cutSeq - 1, JSON.stringify(summary), now()]);
      await this.write(RENEW_TRANSCRIPT_EPOCH, [sessionId]);
    });
  }

  async startTurn(turnId: string, sessionId: string, question?: ModelMessage): Promise<TurnRecord> {
    const t = now();
    // All writes, no read: in a transaction that makes nothing else wait on an answer (the
    // engine's start of a turn), they reach the server as one query with no BEGIN or COMMIT.
    await this.transaction(async () => {
      await this.write("INSERT INTO acx_turns (agent_id, id, session_id, status, started_at) VALUES ($agent, $1, $2, 'running', $3)", [turnId, sessionId, t]);
      await this.write('UPDATE acx_sessions SET updated_at = $1 WHERE agent_id = $agent AND id = $2', [t, sessionId]);
      if (question) await this.write(APPEND_NEXT, [sessionId, turnId, 'user', JSON.stringify(question), t]);
    });
    return startedTurn(turnId, sessionId, t);
  }

  async turn(turnId: string): Promise<TurnRecord | undefined> {
    const rows = await this.rows<TurnRow>('SELECT * FROM acx_turns WHERE agent_id = $agent AND id = $1', [turnId]);
    return rows[0] ? toTurn(rows[0]) : undefined;
  }

  async unfinishedTurn(sessionId: string): Promise<TurnRecord | undefined> {
    const rows = await this.rows<TurnRow>(UNFINISHED_TURN, [sessionId]);
    return rows[0] ? toTurn(rows[0]) : undefined;
  }

  async turnAndUnfinished(turnId: string, sessionId: string): Promise<{ turn: TurnRecord | undefined; unfinished: TurnRecord | undefined }> {
    const rows = await this.rows<TurnRow & { unfinished: boolean }>(
      TURN_AND_UNFINISHED,
      [sessionId, turnId],
    );
    const turn = rows.find((row) => !row.unfinished);
    const unfinished = rows.find((row) => row.unfinished);
    return { turn: turn ? toTurn(turn) : undefined, unfinished: unfinished ? toTurn(unfinished) : undefined };
  }

  async claimSuspended(turnId: string): Promise<boolean> {
    return (await this.run("UPDATE acx_turns SET status = 'running' WHERE agent_id = $agent AND id = $1 AND status = 'suspended'", [turnId])) === 1;
  }

  async suspendedTurns(): Promise<TurnRecord[]> {
    return (await this.rows<TurnRow>("SELECT * FROM acx_turns WHERE agent_id = $agent AND status = 'suspended' ORDER BY started_at, ord")).map(toTurn);
  }

  async turns(sessionId: string): Promise<TurnRecord[]> {
    return (await this.rows<TurnRow>('SELECT * FROM acx_turns WHERE agent_id = $agent AND session_id = $1 ORDER BY started_at, ord', [sessionId])).map(toTurn);
  }

  async updateTurn(turnId: string, patch: TurnPatch): Promise<void> {
    const column: Record<string, string> = { status: 'status', steps: 'steps', toolsRan: 'tools_ran', nudged: 'nudged', finalText: 'final_text', error: 'error' };
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      values.push(key === 'error' && typeof value === 'string' ? scrubSecrets(value) : value);
      sets.push(`${column[key]} = $${values.length}`);
    }
    if (patch.status && patch.status !== 'running' && patch.status !== 'suspended') {
      values.push(now());
      sets.push(`ended_at = $${values.length}`);
    }
    if (sets.length === 0) return;
    values.push(turnId);
    await this.write(`UPDATE acx_turns SET ${sets.join(', ')} WHERE agent_id = $agent AND id = $${values.length}`, values);
  }

  private async upsertCall(call: CallIdentity, status: CallStatus, written: { result?: string; approval?: string; decision?: string }, update: string): Promise<void> {
    await this.write(
      'INSERT INTO acx_tool_calls (agent_id, turn_id, step, call_id, ordinal, tool_name, input, status, result, approval, decision) VALUES ($agent, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ' +
        `ON CONFLICT (agent_id, turn_id, step, call_id) DO UPDATE SET ${update}`,
      [call.turnId, call.step, call.callId, call.ordinal, call.toolName, JSON.stringify(call.input ?? null), status, written.result ?? null, written.approval ?? null, written.decision ?? null],
    );
  }

  async setCallStatus(call: CallIdentity, status: CallStatus): Promise<void> {
    await this.upsertCall(call, status, {}, 'status = excluded.status');
  }

  async recordCallResult(call: CallIdentity, result: unknown): Promise<void> {
    await this.upsertCall(call, 'done', { result: JSON.stringify(result) }, "status = 'done', result = excluded.result");
  }

  async recordApproval(call: CallIdentity & { status: CallStatus }, approval: { approved: boolean; reason?: string }): Promise<void> {
    await this.upsertCall(call, call.status, { approval: JSON.stringify(approval) }, 'approval = excluded.approval');
  }

  async recordDecision(call: CallIdentity & { status: CallStatus }, decision: CallDecision): Promise<void> {
    await this.upsertCall(call, call.status, { decision: JSON.stringify(decision) }, 'decision = excluded.decision');
  }

  async settleStep(turnId: string, step: number): Promise<void> {
    await this.write(SETTLE_STEP, [turnId, step]);
  }

  async calls(turnId: string, step?: number): Promise<CallRecord[]> {
    const rows =
      step === undefined
        ? await this.rows<CallRow>('SELECT * FROM acx_tool_calls WHERE agent_id = $agent AND turn_id = $1 ORDER BY step, ordinal', [turnId])
        : await this.rows<CallRow>('SELECT * FROM acx_tool_calls WHERE agent_id = $agent AND turn_id = $1 AND step = $2 ORDER BY ordinal', [turnId, step]);
    return rows.map(toCall);
  }

  async turnCalls(turnId: string): Promise<Array<{ step: number; ordinal: number; toolName: string; input: unknown }>> {
    const rows = await this.rows<{ body: string }>(
      "SELECT m.body FROM acx_messages m JOIN acx_turns t ON t.agent_id = m.agent_id AND t.id = m.turn_id AND t.session_id = m.session_id " +
        "WHERE m.agent_id = $agent AND m.turn_id = $1 AND m.kind = 'assistant' ORDER BY m.seq",
      [turnId],
    );
    return rows.flatMap((row, index) =>
      toolCallParts(JSON.parse(row.body) as ModelMessage).map((part, ordinal) => ({ step: index + 1, ordinal, toolName: part.toolName, input: part.input })),
    );
  }

  async openCalls(turnId: string): Promise<CallRecord[]> {
    const turn = await this.turn(turnId);
    if (!turn) return [];
    const rows = await this.rows<{ kind: 'assistant' | 'tool'; body: string }>(
      "SELECT kind, body FROM acx_messages WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND kind IN ('assistant', 'tool') ORDER BY seq",
      [turn.sessionId, turnId],
    );
    return openCallsOf(turnId, parsedRows(rows), await this.calls(turnId));
  }
}
