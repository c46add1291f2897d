/**
 * What session fork and rewind need from a journal beyond the engine's own reads and writes: a
 * session copied up to a turn into a new one, a session cut back to a turn, and the record of the
 * workspace files the agent's tools changed (file-changes-schema.ts). Each store implements it in
 * its own SQL (sqlite-session-branches.ts, postgres-session-branches.ts); a JournalStore of the
 * caller's own may leave it out, and fork/rewind then say they are unsupported.
 */

/** What a file held at one moment: absent, its content, or not known to acx. */
export type FileContentState = { state: 'missing' } | { state: 'content'; content: Uint8Array } | { state: 'unknown' };

/** One change a tool call made to a workspace file, as the engine journals it. */
export interface FileChangeEntry {
  turnId: string;
  callId: string;
  toolName: string;
  /** The path as the tool showed it to the model. */
  path: string;
  /** The file's absolute path on the machine that ran the tool. */
  location: string;
  before: FileContentState;
  /** What the change left: null when it deleted the file; `content` absent when over the recording limit. */
  after: { sha256: string; content?: Uint8Array } | null;
}

export interface FileChangeRecord extends FileChangeEntry {
  /** The order changes were recorded in, across the session's turns. */
  id: number;
}

/** A session's turns kept by a fork or dropped by a rewind, and the first message seq that goes with them. */
export interface BranchCut {
  sessionId: string;
  /** The first message (by seq) not kept; undefined when every message is kept. */
  cutSeq: number | undefined;
}

export interface SessionBranches {
  /**
   * Creates session `to` with `cut.sessionId`'s messages before `cut.cutSeq`, its turns in `turns`
   * under their new ids (with their tool calls and file change records), and its attributes: one
   * transaction, so a failed fork leaves no half-made session.
   */
  copy(cut: BranchCut, to: string, turns: ReadonlyArray<{ from: string; to: string }>): Promise<void>;
  /** Deletes `dropTurns` (their tool calls and file change records go with them) and every message from `cut.cutSeq` on: one transaction. */
  truncate(cut: BranchCut, dropTurns: readonly string[]): Promise<void>;
  recordFileChanges(entries: readonly FileChangeEntry[]): Promise<void>;
  /** The file changes of these turns, in the order they were recorded. */
  fileChanges(turnIds: readonly string[]): Promise<FileChangeRecord[]>;
}

/** The row both stores keep a change in (file-changes-schema.ts). */
export interface FileChangeRow {
  id: number | string;
  turn_id: string;
  call_id: string;
  tool_name: string;
  path: string;
  location: string;
  before_state: 'missing' | 'content' | 'unknown';
  before: Uint8Array | null;
  after_sha256: string | null;
  after: Uint8Array | null;
}

/** A change as the columns both stores write, in file-changes-schema.ts's order after `turn_id`. */
export function fileChangeColumns(entry: FileChangeEntry): [string, string, string, string, string, string, Uint8Array | null, string | null, Uint8Array | null] {
  const before = entry.before.state === 'content' ? entry.before.content : null;
  return [entry.turnId, entry.callId, entry.toolName, entry.path, entry.location, entry.before.state, before, entry.after?.sha256 ?? null, entry.after?.content ?? null];
}

export function toFileChange(row: FileChangeRow): FileChangeRecord {
  const before: FileContentState = row.before_state === 'content' && row.before ? { state: 'content', content: new Uint8Array(row.before) } : row.before_state === 'missing' ? { state: 'missing' } : { state: 'unknown' };
  return {
    id: Number(row.id),
    turnId: row.turn_id,
    callId: row.call_id,
    toolName: row.tool_name,
    path: row.path,
    location: row.location,
    before,
    after: row.after_sha256 === null ? null : { sha256: row.after_sha256, ...(row.after ? { content: new Uint8Array(row.after) } : {}) },
  };
}
