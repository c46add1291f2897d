import { type Database, transaction } from './database.ts';
import { type BranchCut, type FileChangeEntry, type FileChangeRecord, type FileChangeRow, type SessionBranches, fileChangeColumns, toFileChange } from './session-branches.ts';

/** Fork, rewind and the file change record on the SQLite journal (session-branches.ts). */
export class SqliteSessionBranches implements SessionBranches {
  readonly #db: Database;
  /** Told of each session whose messages a rewind cut or a fork wrote: the journal's transcript cache must not serve them again. */
  readonly #cut: (sessionId: string) => void;

  constructor(db: Database, cut: (sessionId: string) => void) {
    this.#db = db;
    this.#cut = cut;
  }

  async copy(cut: BranchCut, to: string, turns: ReadonlyArray<{ from: string; to: string }>): Promise<void> {
    const db = this.#db;
    const from = cut.sessionId;
    const before = cut.cutSeq ?? Number.MAX_SAFE_INTEGER;
    // The new session's messages are written here, not appended through the journal.
    this.#cut(to);
    transaction(db, () => {
      const t = new Date().toISOString();
      db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?)').run(to, t, t);
      db.prepare('INSERT INTO session_attributes (session_id, name, value) SELECT ?, name, value FROM session_attributes WHERE session_id = ?').run(to, from);
      db.prepare('INSERT INTO messages (session_id, seq, turn_id, kind, body, created_at) SELECT ?, seq, NULL, kind, body, created_at FROM messages WHERE session_id = ? AND turn_id IS NULL AND seq < ?').run(to, from, before);
      for (const turn of turns) {
        db.prepare(
          'INSERT INTO turns (id, session_id, status, steps, tools_ran, nudged, final_text, error, started_at, ended_at) ' +
            'SELECT ?, ?, status, steps, tools_ran, nudged, final_text, error, started_at, ended_at FROM turns WHERE id = ?',
        ).run(turn.to, to, turn.from);
        db.prepare('INSERT INTO messages (session_id, seq, turn_id, kind, body, created_at) SELECT ?, seq, ?, kind, body, created_at FROM messages WHERE session_id = ? AND turn_id = ? AND seq < ?').run(to, turn.to, from, turn.from, before);
        db.prepare(
          'INSERT INTO tool_calls (turn_id, step, call_id, ordinal, tool_name, input, status, result, approval, decision) ' +
            'SELECT ?, step, call_id, ordinal, tool_name, input, status, result, approval, decision FROM tool_calls WHERE turn_id = ?',
        ).run(turn.to, turn.from);
        db.prepare(
          'INSERT INTO file_changes (turn_id, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at) ' +
            'SELECT ?, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at FROM file_changes WHERE turn_id = ? ORDER BY id',
        ).run(turn.to, turn.from);
      }
    });
  }

  async truncate(cut: BranchCut, dropTurns: readonly string[]): Promise<void> {
    const db = this.#db;
    transaction(db, () => {
      // tool_calls and file_changes go with their turn (ON DELETE CASCADE).
      for (const turnId of dropTurns) db.prepare('DELETE FROM turns WHERE id = ? AND session_id = ?').run(turnId, cut.sessionId);
      if (cut.cutSeq !== undefined) db.prepare('DELETE FROM messages WHERE session_id = ? AND seq >= ?').run(cut.sessionId, cut.cutSeq);
      db.prepare('UPDATE sessions SET updated_at = ? WHERE id = ?').run(new Date().toISOString(), cut.sessionId);
    });
    this.#cut(cut.sessionId);
  }

  async recordFileChanges(entries: readonly FileChangeEntry[]): Promise<void> {
    const db = this.#db;
    const insert = db.prepare(
      'INSERT INTO file_changes (turn_id, call_id, tool_name, path, location, before_state, before, after_sha256, after, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    transaction(db, () => {
      for (const entry of entries) insert.run(...fileChangeColumns(entry), new Date().toISOString());
    });
  }

  async fileChanges(turnIds: readonly string[]): Promise<FileChangeRecord[]> {
    if (turnIds.length === 0) return [];
    const rows = this.#db
      .prepare(`SELECT * FROM file_changes WHERE turn_id IN (${turnIds.map(() => '?').join(', ')}) ORDER BY id`)
      .all(...turnIds) as unknown as FileChangeRow[];
    return rows.map(toFileChange);
  }
}
