import type pg from 'pg';
import type { PostgresJournalStore } from './postgres-journal.ts';
import { agentScoped, inTransaction } from './postgres-sql.ts';
import { type BranchCut, type FileChangeEntry, type FileChangeRecord, type FileChangeRow, type SessionBranches, fileChangeColumns, toFileChange } from './session-branches.ts';

/**
 * Fork, rewind and the file change record on the PostgreSQL journal (session-branches.ts). Each
 * runs on a connection of its own, in a transaction of its own; every statement is scoped to the
 * store's agent as the journal's are (`$agent`).
 */
export class PostgresSessionBranches implements SessionBranches {
  readonly #store: PostgresJournalStore;

  constructor(store: PostgresJournalStore) {
    this.#store = store;
  }

  /** Runs `fn` in one transaction, with a query helper that binds the store's agent. */
  async #inTransaction<T>(fn: (query: (sql: string, values: unknown[]) => Promise<pg.QueryResult>) => Promise<T>): Promise<T> {
    await this.#store.migrated();
    return inTransaction(this.#store.pool, (client) => fn((sql, values) => client.query(...agentScoped(sql, values, this.#store.agentId))));
  }

  async copy(cut: BranchCut, to: string, turns: ReadonlyArray<{ from: string; to: string }>): Promise<void> {
    const from = cut.sessionId;
    const before = cut.cutSeq ?? 2 ** 31 - 1;
    await this.#inTransaction(async (query) => {
      const t = new Date().toISOString();
      await query('INSERT INTO acx_sessions (agent_id, id, created_at, updated_at) VALUES ($agent, $1, $2, $2)', [to, t]);
      await query('INSERT INTO acx_session_attributes (agent_id, session_id, name, value) SELECT agent_id, $1, name, value FROM acx_session_attributes WHERE agent_id = $agent AND session_id = $2', [to, from]);
      await query(
        'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) SELECT agent_id, $1, seq, NULL, kind, body, created_at FROM acx_messages ' +
          'WHERE agent_id = $agent AND session_id = $2 AND turn_id IS NULL AND seq < $3',
        [to, from, before],
      );
      for (const turn of turns) {
        await query(
          'INSERT INTO acx_turns (agent_id, id, session_id, status, steps, tools_ran, nudged, final_text, error, started_at, ended_at) ' +
            'SELECT agent_id, $1, $2, status, steps, tools_ran, nudged, final_text, error, started_at, ended_at FROM acx_turns WHERE agent_id = $agent AND id = $3',
          [turn.to, to, turn.from],
        );
        await query(
          'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) SELECT agent_id, $1, seq, $2, kind, body, created_at FROM acx_messages ' +
            'WHERE agent_id = $agent AND session_id = $3 AND turn_id = $4 AND seq < $5',
          [to, turn.to, from, turn.from, before],
        );
        await query(
          'INSERT INTO acx_tool_calls (agent_id, turn_id, step, call_id, ordinal, tool_name, input, status, result, approval, decision) ' +
            'SELECT agent_id, $1, step, call_id, ordinal, tool_name, input, status, result, approval, decision FROM acx_tool_calls WHERE agent_id = $agent AND turn_id = $2',
          [turn.to, turn.from],
        );
        await query(
          'INSERT INTO acx_file_changes (agent_id, turn_id, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at) ' +
            'SELECT agent_id, $1, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at FROM acx_file_changes WHERE agent_id = $agent AND turn_id = $2 ORDER BY id',
          [turn.to, turn.from],
        );
      }
    });
  }

  async truncate(cut: BranchCut, dropTurns: readonly string[]): Promise<void> {
    await this.#inTransaction(async (query) => {
      // acx_tool_calls and acx_file_changes go with their turn (ON DELETE CASCADE).
      if (dropTurns.length > 0) await query('DELETE FROM acx_turns WHERE agent_id = $agent AND session_id = $1 AND id = ANY($2::text[])', [cut.sessionId, [...dropTurns]]);
      if (cut.cutSeq !== undefined) await query('DELETE FROM acx_messages WHERE agent_id = $agent AND session_id = $1 AND seq >= $2', [cut.sessionId, cut.cutSeq]);
      await query('UPDATE acx_sessions SET updated_at = $1 WHERE agent_id = $agent AND id = $2', [new Date().toISOString(), cut.sessionId]);
    });
  }

  async recordFileChanges(entries: readonly FileChangeEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.#inTransaction(async (query) => {
      for (const entry of entries) {
        await query(
          'INSERT INTO acx_file_changes (agent_id, turn_id, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at) ' +
            'VALUES ($agent, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
          [...fileChangeColumns(entry).map((value) => (value instanceof Uint8Array ? Buffer.from(value) : value)), new Date().toISOString()],
        );
      }
    });
  }

  async fileChanges(turnIds: readonly string[]): Promise<FileChangeRecord[]> {
    if (turnIds.length === 0) return [];
    await this.#store.migrated();
    const { rows } = await this.#store.pool.query<FileChangeRow>(...agentScoped('SELECT * FROM acx_file_changes WHERE agent_id = $agent AND turn_id = ANY($1::text[]) ORDER BY id', [[...turnIds]], this.#store.agentId));
    return rows.map(toFileChange);
  }
}
