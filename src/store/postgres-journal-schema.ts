import { POSTGRES_FILE_CHANGES_MIGRATION } from './file-changes-schema.ts';
import { agentScopeMigration } from './postgres-migrations.ts';

/**
 * The journal's tables on PostgreSQL, forward only (migratePostgres): the same tables and the
 * same invariants as the SQLite journal (journal-schema.ts), every row scoped by its agent.
 */
export const JOURNAL_MIGRATIONS = [
  `CREATE TABLE acx_sessions (
     id TEXT PRIMARY KEY,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE acx_messages (
     session_id TEXT NOT NULL REFERENCES acx_sessions(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     turn_id TEXT,
     kind TEXT NOT NULL,
     body TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (session_id, seq)
   );
   CREATE TABLE acx_turns (
     id TEXT PRIMARY KEY,
     ord BIGSERIAL,
     session_id TEXT NOT NULL REFERENCES acx_sessions(id) ON DELETE CASCADE,
     status TEXT NOT NULL,
     steps INTEGER NOT NULL DEFAULT 0,
     tools_ran INTEGER NOT NULL DEFAULT 0,
     nudged BOOLEAN NOT NULL DEFAULT FALSE,
     final_text TEXT,
     error TEXT,
     started_at TEXT NOT NULL,
     ended_at TEXT
   );
   CREATE INDEX acx_turns_by_session ON acx_turns(session_id, started_at);
   CREATE TABLE acx_tool_calls (
     turn_id TEXT NOT NULL REFERENCES acx_turns(id) ON DELETE CASCADE,
     step INTEGER NOT NULL,
     call_id TEXT NOT NULL,
     ordinal INTEGER NOT NULL,
     tool_name TEXT NOT NULL,
     input TEXT NOT NULL,
     status TEXT NOT NULL,
     result TEXT,
     approval TEXT,
     PRIMARY KEY (turn_id, step, call_id)
   );
   CREATE TABLE acx_session_attributes (
     session_id TEXT NOT NULL REFERENCES acx_sessions(id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (session_id, name)
   );`,
  // Who runs each session's turn now (SessionLeases); expiry by the server's clock.
  `CREATE TABLE acx_session_leases (
     session_id TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   );`,
  // Agents apart: many agents share one database, so every row names its agent (see DEFAULT_AGENT_ID).
  agentScopeMigration({
    tables: ['acx_sessions', 'acx_messages', 'acx_turns', 'acx_tool_calls', 'acx_session_attributes', 'acx_session_leases'],
    foreignKeys: {
      acx_messages: 'acx_messages_session_id_fkey',
      acx_turns: 'acx_turns_session_id_fkey',
      acx_tool_calls: 'acx_tool_calls_turn_id_fkey',
      acx_session_attributes: 'acx_session_attributes_session_id_fkey',
    },
    primaryKeys: {
      acx_sessions: 'id',
      acx_messages: 'session_id, seq',
      acx_turns: 'id',
      acx_tool_calls: 'turn_id, step, call_id',
      acx_session_attributes: 'session_id, name',
      acx_session_leases: 'session_id',
    },
  }) +
    `ALTER TABLE acx_messages ADD FOREIGN KEY (agent_id, session_id) REFERENCES acx_sessions(agent_id, id) ON DELETE CASCADE;
     ALTER TABLE acx_turns ADD FOREIGN KEY (agent_id, session_id) REFERENCES acx_sessions(agent_id, id) ON DELETE CASCADE;
     ALTER TABLE acx_tool_calls ADD FOREIGN KEY (agent_id, turn_id) REFERENCES acx_turns(agent_id, id) ON DELETE CASCADE;
     ALTER TABLE acx_session_attributes ADD FOREIGN KEY (agent_id, session_id) REFERENCES acx_sessions(agent_id, id) ON DELETE CASCADE;
     DROP INDEX acx_turns_by_session;
     CREATE INDEX acx_turns_by_session ON acx_turns(agent_id, session_id, started_at);
     CREATE INDEX acx_turns_suspended ON acx_turns(agent_id, status);`,
  // The hooks' and tool guardrails' decision about a call (harness/guards.ts): asked once, read on resume.
  `ALTER TABLE acx_tool_calls ADD COLUMN decision TEXT;`,
  POSTGRES_FILE_CHANGES_MIGRATION,
  // A session's unfinished turn (asked before every turn) found among its few unfinished turns,
  // not by walking back through every turn it has finished.
  `CREATE INDEX acx_turns_unfinished ON acx_turns(agent_id, session_id, started_at) WHERE status IN ('running', 'suspended');`,
  // A session's transcript epoch (postgres-transcripts.ts): what a reader kept of its messages is
  // still what the server holds while the epoch is unchanged. Appends keep it; an UPDATE or
  // DELETE of its messages (by any statement, cascades included) takes a new one from the
  // sequence in the same transaction, and a new session starts with a new one.
  `CREATE SEQUENCE acx_transcript_epochs;
   ALTER TABLE acx_sessions ADD COLUMN transcript_epoch BIGINT NOT NULL DEFAULT nextval('acx_transcript_epochs');
   CREATE FUNCTION acx_transcript_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE acx_sessions s SET transcript_epoch = nextval('acx_transcript_epochs')
       FROM (SELECT DISTINCT agent_id, session_id FROM rewritten) r
       WHERE s.agent_id = r.agent_id AND s.id = r.session_id;
     RETURN NULL;
   END $$;
   CREATE TRIGGER acx_messages_deleted AFTER DELETE ON acx_messages
     REFERENCING OLD TABLE AS rewritten FOR EACH STATEMENT EXECUTE FUNCTION acx_transcript_rewritten();
   CREATE TRIGGER acx_messages_updated AFTER UPDATE ON acx_messages
     REFERENCING OLD TABLE AS rewritten FOR EACH STATEMENT EXECUTE FUNCTION acx_transcript_rewritten();
   -- A row an UPDATE moves to another session changes that one too.
   CREATE TRIGGER acx_messages_moved AFTER UPDATE ON acx_messages
     REFERENCING NEW TABLE AS rewritten FOR EACH STATEMENT EXECUTE FUNCTION acx_transcript_rewritten();`,
];
