import { AsyncLocalStorage } from 'node:async_hooks';
import type { ModelMessage } from 'ai';
import pg from 'pg';
import { AcxError } from '../core/errors.ts';
import type { CallDecision } from '../core/hooks.ts';
import { scrubSecrets } from '../util/scrub.ts';
import type { CallIdentity, CallRecord, CallStatus, StoredMessage, TurnRecord } from './journal.ts';
import { openCallsOf, toolCallParts } from './journal.ts';
import { type CallRow, toCall, toTurn, type TurnRow } from './journal-rows.ts';
import type { JournalStore, SessionLeases, SessionListing, TurnPatch } from './journal-store.ts';
import { agentScoped } from './postgres-sql.ts';
import { redactUrl } from './store-url.ts';
import { POSTGRES_FILE_CHANGES_MIGRATION } from './file-changes-schema.ts';
import type { SessionBranches } from './session-branches.ts';
import { PostgresSessionBranches } from './postgres-session-branches.ts';

import { DEFAULT_AGENT_ID } from './store-url.ts';
import { openPostgresPool } from './postgres-pool.ts';
export { DEFAULT_AGENT_ID };
export { agentScoped, inTransaction } from './postgres-sql.ts';

/**
 * The journal on PostgreSQL: the same tables and the same invariants as the SQLite journal, so
 * sessions can be served from any host. A transaction holds one pooled connection; every write
 * made inside it (found through AsyncLocalStorage, so the engine's calls need not change) runs
 * on that connection, and commits with it or not at all.
 *
 * Round trips, not the server, are what a step pays on Postgres: a write whose result nobody
 * reads is held inside its transaction and sent with the next statement that must go out (a read,
 * or the COMMIT), as one simple-protocol query — an engine step's commit (the previous step's
 * settlement + the new assistant message) is one round trip instead of five. See `Batch`. A
 * transaction whose writes all go out at its end is that one query alone, with no BEGIN/COMMIT:
 * the server runs a multi-statement query as one transaction and answers once it has committed.
 * The step's hot writes are prepared once per connection and sent as EXECUTE (`PREPARED_WRITES`),
 * so the server does not parse and plan them again every step.
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
];

/**
 * The forward step that scopes existing tables by agent: an `agent_id` column on each (existing
 * rows get DEFAULT_AGENT_ID; new rows must name theirs, so the default is dropped again), and each
 * primary key rebuilt with the agent first. The caller re-adds the foreign keys it dropped.
 */
export function agentScopeMigration(plan: { tables: readonly string[]; foreignKeys?: Readonly<Record<string, string>>; primaryKeys: Readonly<Record<string, string>> }): string {
  return [
    ...Object.entries(plan.foreignKeys ?? {}).map(([table, fk]) => `ALTER TABLE ${table} DROP CONSTRAINT ${fk};`),
    ...plan.tables.map((table) => `ALTER TABLE ${table} ADD COLUMN agent_id TEXT NOT NULL DEFAULT '${DEFAULT_AGENT_ID}';\nALTER TABLE ${table} ALTER COLUMN agent_id DROP DEFAULT;`),
    ...Object.entries(plan.primaryKeys).map(([table, key]) => `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD PRIMARY KEY (agent_id, ${key});`),
  ].join('\n') + '\n';
}

/** A fixed advisory-lock key: two processes migrating one database at once take turns. */
const MIGRATION_LOCK = 0x61637831;

const now = () => new Date().toISOString();

/** Applies the migrations not yet applied, forward only, each in its own transaction. */
export async function migratePostgres(pool: pg.Pool, migrations: readonly string[], table: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`);
    const { rows } = await client.query<{ v: number | null }>(`SELECT MAX(version) AS v FROM ${table}`);
    const applied = rows[0]?.v ?? 0;
    if (applied > migrations.length) {
      throw new AcxError('store-open', `The PostgreSQL schema (${table}) is at version ${applied}, newer than this acx knows (${migrations.length}).`, {
        hint: 'Upgrade acx on this host: migrations only go forward.',
      });
    }
    for (let version = applied + 1; version <= migrations.length; version++) {
      await client.query('BEGIN');
      try {
        await client.query(migrations[version - 1]!);
        await client.query(`INSERT INTO ${table} (version, applied_at) VALUES ($1, $2)`, [version, now()]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/** Checks a pool can connect, failing with what to check instead of a driver stack. */
export async function checkPostgres(pool: pg.Pool, url: string): Promise<void> {
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    throw new AcxError('store-open', `Cannot connect to the PostgreSQL store at ${redactUrl(url)}: ${(error as Error).message}`, {
      hint: 'Check the URL (host, port, database, user) and that the server accepts connections from here.',
      cause: error,
    });
  }
}

type Queryable = pg.Pool | pg.PoolClient;

/**
 * An open transaction: its connection, whether BEGIN has reached the server, and the writes held
 * for the next round trip. A held write's error surfaces from that round trip (at the latest the
 * COMMIT), so the transaction still fails whole; nothing inside one reads a held write's result.
 */
interface Batch {
  client: pg.PoolClient;
  begun: boolean;
  held: string[];
}

/**
 * A statement with its $n parameters written in as literals, for a multi-statement simple query
 * (which takes no parameters). Only the journal's own statements come here, with values of the
 * few types they bind; strings go through pg's own escapeLiteral, so a value is never SQL.
 */
function withLiterals(sql: string, values: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1], Number(n)));
}

/** One bound value as an SQL literal (see withLiterals); `n` names the parameter in the error. */
function literal(value: unknown, n: number): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number' && Number.isFinite(value)) return `(${value})`;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  throw new TypeError(`A journal write bound a ${typeof value} (parameter $${n}); only strings, finite numbers, booleans and null are written.`);
}

const APPEND_AT_SEQ = 'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ($agent, $1, $2, $3, $4, $5, $6)';
const SETTLE_STEP = "UPDATE acx_tool_calls SET status = 'settled', result = NULL WHERE agent_id = $agent AND turn_id = $1 AND step = $2";

/**
 * The writes every engine step makes (its messages and its settlement), by statement: the name
 * each is PREPAREd under on a connection, and how many values it binds before the agent's.
 */
const PREPARED_WRITES = new Map<string, { name: string; arity: number }>([
  [APPEND_AT_SEQ, { name: 'acx_append_at_seq', arity: 6 }],
  [SETTLE_STEP, { name: 'acx_settle_step', arity: 2 }],
]);

/** The PREPAREs for PREPARED_WRITES, sent once on each new connection before its first transaction. */
const PREPARE_WRITES = [...PREPARED_WRITES]
  .map(([sql, { name, arity }]) => `PREPARE ${name} AS ${agentScoped(sql, new Array(arity), '')[0]}`)
  .join(';\n');

/** SQLSTATE invalid_sql_statement_name: an EXECUTE of a name this connection has not prepared. */
const MISSING_PREPARED_STATEMENT = '26000';

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
  private readonly tx = new AsyncLocalStorage<Batch>();
  /** Connections that hold PREPARE_WRITES (a connection the pool replaces is a new object). */
  private readonly prepared = new WeakSet<pg.PoolClient>();
  private ready: Promise<void> | undefined;
  private readonly url: string;
  /** Whose sessions these are (see DEFAULT_AGENT_ID): every statement reads and writes only this agent's rows. */
  readonly agentId: string;
  readonly branches: SessionBranches = new PostgresSessionBranches(this);

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, options: PostgresJournalOptions) {
    this.url = url;
    this.agentId = options.agentId;
    this.pool = openPostgresPool(url, options.maxConnections ?? 10);
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

  private async db(): Promise<Queryable> {
    const batch = this.tx.getStore();
    if (batch) {
      await this.flush(batch);
      return batch.client;
    }
    await this.migrated();
    return this.pool;
  }

  /**
   * Sends the held writes in one round trip: after BEGIN (once) when the transaction goes on, or,
   * at its end with nothing sent before, alone — one multi-statement query is one transaction.
   */
  private async flush(batch: Batch, end?: 'COMMIT'): Promise<void> {
    const first = !batch.begun;
    const whole = end !== undefined && first;
    const statements = whole ? batch.held : [...(first ? ['BEGIN'] : []), ...batch.held, ...(end ? [end] : [])];
    batch.begun ||= !whole;
    batch.held = [];
    if (statements.length === 0) return;
    const text = statements.join(';\n');
    try {
      await batch.client.query(text);
    } catch (error) {
      // A connection can lose what it prepared (DISCARD ALL, a pooler handing it another server
      // session). When this was the transaction's first query, its failure left nothing written:
      // end the aborted transaction, prepare again and send it once more.
      if (!first || (error as { code?: unknown }).code !== MISSING_PREPARED_STATEMENT) throw error;
      await batch.client.query(`ROLLBACK;\nDEALLOCATE ALL;\n${PREPARE_WRITES}`);
      await batch.client.query(text);
    }
  }

  /** A write nobody reads the result of: inside a transaction, held for the next round trip. */
  private async write(sql: string, values: unknown[] = []): Promise<void> {
    const batch = this.tx.getStore();
    if (!batch) {
      await this.run(sql, values);
      return;
    }
    const prepared = PREPARED_WRITES.get(sql);
    // A prepared write binds the agent last (PREPARE_WRITES), so its values are written out in order.
    batch.held.push(
      prepared
        ? `EXECUTE ${prepared.name}(${[...values, this.agentId].map((value, i) => literal(value, i + 1)).join(', ')})`
        : withLiterals(...agentScoped(sql, values, this.agentId)),
    );
  }

  /** Takes a connection for a transaction, preparing PREPARE_WRITES on it the first time. */
  private async connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    if (this.prepared.has(client)) return client;
    try {
      await client.query(PREPARE_WRITES);
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    this.prepared.add(client);
    return client;
  }

  private async rows<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
    return (await (await this.db()).query<R>(...agentScoped(sql, values, this.agentId))).rows;
  }

  private async run(sql: string, values: unknown[] = []): Promise<number> {
    return (await (await this.db()).query(...agentScoped(sql, values, this.agentId))).rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  readonly leases: SessionLeases = {
    take: async (sessionId, holder, ttlMs) =>
      (await this.run(
        "INSERT INTO acx_session_leases (agent_id, session_id, holder, expires_at) VALUES ($agent, $1, $2, now() + $3 * interval '1 millisecond') " +
          'ON CONFLICT (agent_id, session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at ' +
          'WHERE acx_session_leases.expires_at < now() OR acx_session_leases.holder = excluded.holder',
        [sessionId, holder, ttlMs],
      )) === 1,
    renew: async (sessionId, holder, ttlMs) =>
      (await this.run("UPDATE acx_session_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND holder = $2", [sessionId, holder, ttlMs])) === 1,
    release: async (sessionId, holder) => {
      await this.run('DELETE FROM acx_session_leases WHERE agent_id = $agent AND session_id = $1 AND holder = $2', [sessionId, holder]);
    },
  };

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.tx.getStore()) return fn();
    await this.migrated();
    const client = await this.connect();
    const batch: Batch = { client, begun: false, held: [] };
    try {
      const result = await this.tx.run(batch, fn);
      if (batch.begun || batch.held.length > 0) await this.flush(batch, 'COMMIT');
      return result;
    } catch (error) {
      if (batch.begun) await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
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

  transcript(sessionId: string): Promise<readonly StoredMessage[]> {
    return this.messages(sessionId); // read afresh: the server is shared, with no cheap sign of a change
  }
  async messages(sessionId: string): Promise<StoredMessage[]> {
    const rows = await this.rows<{ seq: number; turn_id: string | null; kind: StoredMessage['kind']; body: string }>(
      'SELECT seq, turn_id, kind, body FROM acx_messages WHERE agent_id = $agent AND session_id = $1 ORDER BY seq',
      [sessionId],
    );
    return rows.map((row) => ({ seq: row.seq, turnId: row.turn_id, kind: row.kind, message: JSON.parse(row.body) as ModelMessage }));
  }

  async appendMessage(sessionId: string, turnId: string | null, kind: StoredMessage['kind'], message: ModelMessage, seq?: number): Promise<number> {
    const body = JSON.stringify(message);
    if (seq !== undefined) {
      await this.write(APPEND_AT_SEQ, [sessionId, seq, turnId, kind, body, now()]);
      return seq;
    }
    // One statement: the primary key refuses a number two writers picked at once.
    const rows = await this.rows<{ seq: number }>(
      'INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) ' +
        'SELECT $agent, $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 FROM acx_messages WHERE agent_id = $agent AND session_id = $1 RETURNING seq',
      [sessionId, turnId, kind, body, now()],
    );
    return rows[0]!.seq;
  }

  async replaceMessage(sessionId: string, seq: number, message: ModelMessage): Promise<void> {
    await this.write('UPDATE acx_messages SET body = $1 WHERE agent_id = $agent AND session_id = $2 AND seq = $3', [JSON.stringify(message), sessionId, seq]);
  }

  async compact(sessionId: string, cutSeq: number, summary: ModelMessage): Promise<void> {
    await this.transaction(async () => {
      await this.write('DELETE FROM acx_messages WHERE agent_id = $agent AND session_id = $1 AND seq < $2', [sessionId, cutSeq]);
      await this.write("INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ($agent, $1, $2, NULL, 'summary', $3, $4)", [sessionId, cutSeq - 1, JSON.stringify(summary), now()]);
    });
  }

  async startTurn(turnId: string, sessionId: string): Promise<void> {
    const t = now();
    await this.write("INSERT INTO acx_turns (agent_id, id, session_id, status, started_at) VALUES ($agent, $1, $2, 'running', $3)", [turnId, sessionId, t]);
    await this.write('UPDATE acx_sessions SET updated_at = $1 WHERE agent_id = $agent AND id = $2', [t, sessionId]);
  }

  async turn(turnId: string): Promise<TurnRecord | undefined> {
    const rows = await this.rows<TurnRow>('SELECT * FROM acx_turns WHERE agent_id = $agent AND id = $1', [turnId]);
    return rows[0] ? toTurn(rows[0]) : undefined;
  }

  async unfinishedTurn(sessionId: string): Promise<TurnRecord | undefined> {
    const rows = await this.rows<TurnRow>(
      "SELECT * FROM acx_turns WHERE agent_id = $agent AND session_id = $1 AND status IN ('running', 'suspended') ORDER BY started_at DESC, ord DESC LIMIT 1",
      [sessionId],
    );
    return rows[0] ? toTurn(rows[0]) : undefined;
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
    return openCallsOf(turnId, rows, await this.calls(turnId));
  }
}
