import pg from 'pg';
import { checkPostgres, migratePostgres } from './postgres-migrations.ts';
import { agentScoped, inTransaction } from './postgres-sql.ts';
import { openPostgresPool } from './postgres-pool.ts';
import type { TurnStreamInfo, TurnStreamKey, TurnStreamPart, TurnStreamStore } from './turn-streams.ts';

/**
 * Turn streams on PostgreSQL, for readers and writers on any host. A writer lives by an expiry
 * (the server's clock) that it renews while it writes: one that dies stops renewing, and its
 * stream can be taken over once the expiry has passed; a live writer renews well inside it.
 * Each append takes the next numbers from the stream's row under its row lock, in the statement
 * that checks the writer, so appends commit in number order and a replaced writer writes nothing.
 */
export const TURN_STREAM_MIGRATIONS = [
  `CREATE TABLE acx_turn_streams (
     agent_id TEXT NOT NULL,
     session_id TEXT NOT NULL,
     turn_id TEXT NOT NULL,
     status TEXT NOT NULL,
     writer TEXT NOT NULL,
     next_seq INTEGER NOT NULL DEFAULT 0,
     opened_at TIMESTAMPTZ NOT NULL,
     written_at TIMESTAMPTZ NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL,
     finished_at TIMESTAMPTZ,
     PRIMARY KEY (agent_id, session_id, turn_id)
   );
   CREATE INDEX acx_turn_streams_by_session ON acx_turn_streams(agent_id, session_id, status, written_at);
   CREATE INDEX acx_turn_streams_finished ON acx_turn_streams(status, finished_at);
   CREATE TABLE acx_turn_stream_parts (
     agent_id TEXT NOT NULL,
     session_id TEXT NOT NULL,
     turn_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     body TEXT NOT NULL,
     PRIMARY KEY (agent_id, session_id, turn_id, seq),
     FOREIGN KEY (agent_id, session_id, turn_id) REFERENCES acx_turn_streams(agent_id, session_id, turn_id) ON DELETE CASCADE
   );`,
];

/** How long a writer lives unrenewed (default): a dead writer's stream can be taken over after this. */
export const DEFAULT_STREAM_WRITER_TTL_MS = 15_000;

export interface PostgresTurnStreamOptions {
  /** The agent whose streams the store holds (agents share the database, as for the journal). */
  agentId: string;
  /** How long a writer lives unrenewed; it renews every third of it (default 15 s). */
  writerTtlMs?: number;
  maxConnections?: number;
}

interface StreamRow {
  session_id: string;
  turn_id: string;
  status: string;
  writer: string;
  next_seq: number;
  alive: boolean;
}

const STREAM_COLUMNS = 'session_id, turn_id, status, writer, next_seq, expires_at > now() AS alive';
const infoOf = (row: StreamRow): TurnStreamInfo => ({ sessionId: row.session_id, turnId: row.turn_id, status: row.status as TurnStreamInfo['status'], writer: row.writer, writerAlive: row.alive, parts: row.next_seq });

export class PostgresTurnStreamStore implements TurnStreamStore {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  readonly agentId: string;
  readonly renewEveryMs: number;
  private readonly ttlMs: number;
  private readonly url: string;
  private ready: Promise<void> | undefined;

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, options: PostgresTurnStreamOptions) {
    this.url = url;
    this.agentId = options.agentId;
    this.ttlMs = options.writerTtlMs ?? DEFAULT_STREAM_WRITER_TTL_MS;
    this.renewEveryMs = Math.max(10, Math.floor(this.ttlMs / 3));
    this.pool = openPostgresPool(url, options.maxConnections ?? 4);
  }

  private migrated(): Promise<void> {
    this.ready ??= checkPostgres(this.pool, this.url).then(() => migratePostgres(this.pool, TURN_STREAM_MIGRATIONS, 'acx_turn_stream_migrations'));
    return this.ready;
  }

  private async query<R extends pg.QueryResultRow>(sql: string, values: unknown[], on?: pg.PoolClient): Promise<pg.QueryResult<R>> {
    if (!on) await this.migrated();
    return (on ?? this.pool).query<R>(...agentScoped(sql, values, this.agentId));
  }

  async open(key: TurnStreamKey, writer: string): Promise<void> {
    await this.query(
      `INSERT INTO acx_turn_streams (agent_id, session_id, turn_id, status, writer, opened_at, written_at, expires_at)
       VALUES ($agent, $1, $2, 'open', $3, now(), now(), now() + $4 * interval '1 millisecond')
       ON CONFLICT (agent_id, session_id, turn_id) DO UPDATE SET status = 'open', writer = excluded.writer, written_at = excluded.written_at, expires_at = excluded.expires_at, finished_at = NULL`,
      [key.sessionId, key.turnId, writer, this.ttlMs],
    );
  }

  async append(key: TurnStreamKey, writer: string, bodies: readonly string[]): Promise<boolean> {
    const { rowCount } = await this.query(
      `WITH taken AS (
         UPDATE acx_turn_streams SET next_seq = next_seq + cardinality($4::text[]), written_at = now(), expires_at = now() + $5 * interval '1 millisecond'
         WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND writer = $3 AND status = 'open'
         RETURNING next_seq - cardinality($4::text[]) AS first
       ), written AS (
         INSERT INTO acx_turn_stream_parts (agent_id, session_id, turn_id, seq, body)
         SELECT $agent, $1, $2, taken.first + part.ordinality - 1, part.body FROM taken, unnest($4::text[]) WITH ORDINALITY AS part(body, ordinality)
       )
       SELECT 1 FROM taken`,
      [key.sessionId, key.turnId, writer, bodies, this.ttlMs],
    );
    return rowCount === 1;
  }

  async renew(key: TurnStreamKey, writer: string): Promise<boolean> {
    const { rowCount } = await this.query(
      "UPDATE acx_turn_streams SET expires_at = now() + $4 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND writer = $3 AND status = 'open'",
      [key.sessionId, key.turnId, writer, this.ttlMs],
    );
    return rowCount === 1;
  }

  async finish(key: TurnStreamKey, writer: string): Promise<void> {
    await this.query("UPDATE acx_turn_streams SET status = 'done', finished_at = now() WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND writer = $3 AND status = 'open'", [key.sessionId, key.turnId, writer]);
  }

  async takeOver(key: TurnStreamKey, writer: string): Promise<boolean> {
    const { rowCount } = await this.query(
      "UPDATE acx_turn_streams SET writer = $3, written_at = now(), expires_at = now() + $4 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND status = 'open' AND expires_at <= now()",
      [key.sessionId, key.turnId, writer, this.ttlMs],
    );
    return rowCount === 1;
  }

  async info(key: TurnStreamKey): Promise<TurnStreamInfo | undefined> {
    const { rows } = await this.query<StreamRow>(`SELECT ${STREAM_COLUMNS} FROM acx_turn_streams WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2`, [key.sessionId, key.turnId]);
    return rows[0] ? infoOf(rows[0]) : undefined;
  }

  async active(sessionId: string): Promise<TurnStreamInfo | undefined> {
    const { rows } = await this.query<StreamRow>(`SELECT ${STREAM_COLUMNS} FROM acx_turn_streams WHERE agent_id = $agent AND session_id = $1 AND status = 'open' ORDER BY written_at DESC LIMIT 1`, [sessionId]);
    return rows[0] ? infoOf(rows[0]) : undefined;
  }

  async parts(key: TurnStreamKey, afterSeq: number, limit: number): Promise<TurnStreamPart[]> {
    const { rows } = await this.query<TurnStreamPart>(
      'SELECT seq, body FROM acx_turn_stream_parts WHERE agent_id = $agent AND session_id = $1 AND turn_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [key.sessionId, key.turnId, afterSeq, limit],
    );
    return rows;
  }

  async prune(keepFinishedMs: number): Promise<number> {
    await this.migrated();
    return inTransaction(this.pool, async (client) => {
      const age = "now() - $1 * interval '1 millisecond'";
      const done = await this.query(`DELETE FROM acx_turn_streams WHERE agent_id = $agent AND status = 'done' AND finished_at < ${age}`, [keepFinishedMs], client);
      const stale = await this.query(`DELETE FROM acx_turn_streams WHERE agent_id = $agent AND status = 'open' AND expires_at <= now() AND written_at < ${age}`, [keepFinishedMs], client);
      return (done.rowCount ?? 0) + (stale.rowCount ?? 0);
    });
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.query('DELETE FROM acx_turn_streams WHERE agent_id = $agent AND session_id = $1', [sessionId]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
