import { SQLITE_FILE_CHANGES_MIGRATION } from './file-changes-schema.ts';

/** The SQLite journal's tables (journal.ts), one migration per step: additive only, as database.ts checks. */
// messages and tool_calls are WITHOUT ROWID: keyed by their primary key alone, each write touches
// one b-tree instead of two, which is most of a journal commit.
export const JOURNAL_MIGRATIONS = [
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE messages (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     turn_id TEXT,
     kind TEXT NOT NULL,
     body TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (session_id, seq)
   ) WITHOUT ROWID;
   CREATE TABLE turns (
     id TEXT PRIMARY KEY,
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     status TEXT NOT NULL,
     steps INTEGER NOT NULL DEFAULT 0,
     tools_ran INTEGER NOT NULL DEFAULT 0,
     nudged INTEGER NOT NULL DEFAULT 0,
     final_text TEXT,
     error TEXT,
     started_at TEXT NOT NULL,
     ended_at TEXT
   );
   CREATE INDEX turns_by_session ON turns(session_id, started_at);
   CREATE TABLE tool_calls (
     turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
     step INTEGER NOT NULL,
     call_id TEXT NOT NULL,
     ordinal INTEGER NOT NULL,
     tool_name TEXT NOT NULL,
     input TEXT NOT NULL,
     status TEXT NOT NULL,
     result TEXT,
     approval TEXT,
     PRIMARY KEY (turn_id, step, call_id)
   ) WITHOUT ROWID;`,
  // What a front end keeps about a session besides its messages (an ACP session's cwd, its roots).
  `CREATE TABLE session_attributes (
     session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (session_id, name)
   ) WITHOUT ROWID;`,
  // The hooks' and tool guardrails' decision about a call (harness/guards.ts): asked once, read on resume.
  `ALTER TABLE tool_calls ADD COLUMN decision TEXT;`,
  SQLITE_FILE_CHANGES_MIGRATION,
  // A session's unfinished turn (asked before every turn) found among its few unfinished turns,
  // not by walking back through every turn it has finished.
  `CREATE INDEX turns_unfinished ON turns(session_id, started_at) WHERE status IN ('running', 'suspended');`,
];
