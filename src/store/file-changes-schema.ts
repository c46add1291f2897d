/**
 * The journal's record of workspace files the agent's own tools changed (fs_write, execute's
 * detected changes): what each change left, and what was there before when the tool knew it. It
 * is what `session.rewind({ files: true })` restores from and checks against. Rows belong to a
 * turn and go with it (a rewind that drops a turn drops its records).
 *
 * `before_state`: 'missing' (the file did not exist), 'content' (`before` holds it) or 'unknown'
 * (the tool could not know it, or it was over the recording limit). `after_sha256` is null when
 * the change deleted the file; `after` holds the content when it was within the limit.
 *
 * Kept here, apart from either journal, so both journals' migration lists can name it without
 * importing the modules that query it.
 */
export const SQLITE_FILE_CHANGES_MIGRATION = `CREATE TABLE file_changes (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
     call_id TEXT NOT NULL,
     tool_name TEXT NOT NULL,
     path TEXT NOT NULL,
     location TEXT NOT NULL,
     before_state TEXT NOT NULL,
     before BLOB,
     after_sha256 TEXT,
     after BLOB,
     created_at TEXT NOT NULL
   );
   CREATE INDEX file_changes_by_turn ON file_changes(turn_id);`;

export const POSTGRES_FILE_CHANGES_MIGRATION = `CREATE TABLE acx_file_changes (
     id BIGSERIAL PRIMARY KEY,
     agent_id TEXT NOT NULL,
     turn_id TEXT NOT NULL,
     call_id TEXT NOT NULL,
     tool_name TEXT NOT NULL,
     path TEXT NOT NULL,
     location TEXT NOT NULL,
     before_state TEXT NOT NULL,
     before BYTEA,
     after_sha256 TEXT,
     after BYTEA,
     created_at TEXT NOT NULL,
     FOREIGN KEY (agent_id, turn_id) REFERENCES acx_turns(agent_id, id) ON DELETE CASCADE
   );
   CREATE INDEX acx_file_changes_by_turn ON acx_file_changes(agent_id, turn_id);`;
