import pg from 'pg';
import { scrubSecrets } from '../util/scrub.ts';
import { admitToBreakerAsync, type BreakerSettings, type BreakerTables, postgresBreakerQuery } from './breaker.ts';
import { LeaseRenewals } from './lease-renewals.ts';
import { currentHolder, holderGoneAsSeenBy, type LeaseHolder, sameHolder } from './lease-holder.ts';
import { agentScopeMigration, checkPostgres, migratePostgres } from './postgres-migrations.ts';
import { agentScoped, type CommitWith, inTransaction, NamedStatements, SERVER_NOW_ISO, SERVER_NOW_MS_QUERY, serverNowMsOf, withLiterals } from './postgres-sql.ts';
import { DEFAULT_AGENT_ID } from './store-url.ts';
import { type InboxRow, toItem } from './sqlite-wake-store.ts';
import { type Admission, type InboxItem, openBatchIn, type WakeEvent, type WakeStore } from './wake-store.ts';
import { openPostgresPool } from './postgres-pool.ts';

/**
 * The wake store on PostgreSQL, for wakes served from any host: the same inbox, breaker and
 * guarantees as wake.db. A session's lease is a row with an expiry (the server's clock) that the
 * holding store renews while it holds it: a holder that dies stops renewing, so its session is
 * free on any host within one `leaseTtlMs`; a live holder renews well inside the expiry, so its
 * lease is never taken. (A pid means nothing on another host, so liveness is never judged by one.)
 */
export const WAKE_MIGRATIONS = [
  `CREATE TABLE acx_wake_inbox (
     session_id TEXT NOT NULL,
     event_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     text TEXT NOT NULL,
     sender TEXT,
     sender_kind TEXT,
     batch_id TEXT,
     build INTEGER NOT NULL DEFAULT 1,
     addressed BOOLEAN NOT NULL DEFAULT TRUE,
     state TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     received_at TEXT NOT NULL,
     done_at TEXT,
     reply TEXT,
     error TEXT,
     PRIMARY KEY (session_id, event_id)
   );
   CREATE INDEX acx_wake_inbox_pending ON acx_wake_inbox(session_id, state, seq);
   CREATE TABLE acx_wake_leases (
     session_id TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     acquired_at TEXT NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   );
   CREATE TABLE acx_wake_wakes (
     session_id TEXT NOT NULL,
     at_ms BIGINT NOT NULL
   );
   CREATE INDEX acx_wake_wakes_by_session ON acx_wake_wakes(session_id, at_ms);
   CREATE TABLE acx_wake_breaker_trips (
     session_id TEXT PRIMARY KEY,
     tripped_at_ms BIGINT NOT NULL
   );`,
  // Agents apart: many agents share one database, so every row names its agent (see DEFAULT_AGENT_ID).
  agentScopeMigration({
    tables: ['acx_wake_inbox', 'acx_wake_leases', 'acx_wake_wakes', 'acx_wake_breaker_trips'],
    primaryKeys: { acx_wake_inbox: 'session_id, event_id', acx_wake_leases: 'session_id', acx_wake_breaker_trips: 'session_id' },
  }) +
    `DROP INDEX acx_wake_inbox_pending;
     CREATE INDEX acx_wake_inbox_pending ON acx_wake_inbox(agent_id, session_id, state, seq);
     DROP INDEX acx_wake_wakes_by_session;
     CREATE INDEX acx_wake_wakes_by_session ON acx_wake_wakes(agent_id, session_id, at_ms);`,
];

const SESSION_BREAKER: BreakerTables = { wakes: 'acx_wake_wakes', trips: 'acx_wake_breaker_trips', key: ['agent_id', 'session_id'] };

/** The first key of every session lock (the second is the agent's session's hash): apart from other advisory locks. */
const SESSION_LOCK_SPACE = 0x61637877;

/** How long a lease lasts unrenewed (default): a dead holder's session is free after this. */
export const DEFAULT_WAKE_LEASE_TTL_MS = 15_000;

export interface PostgresWakeStoreOptions {
  /** The agent whose sessions the store holds (required, as for the journal: agents share the database). */
  agentId: string;
  /** How long a lease lasts unrenewed; renewed every third of it while held (default 15 s). */
  leaseTtlMs?: number;
  /** Called when the lease is found lost (a renewal finds it gone, or none succeeded for a TTL); its `leaseLost` signal aborts too. */
  onLeaseLost?: (sessionId: string) => void;
  maxConnections?: number;
}

export class PostgresWakeStore implements WakeStore {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly url: string;
  /** Whose sessions these are: every statement reads and writes only this agent's rows. */
  readonly agentId: string;
  private readonly ttlMs: number;
  private readonly onLeaseLost: ((sessionId: string) => void) | undefined;
  private ready: Promise<void> | undefined;
  /** The leases this store holds and renews, by session. */
  private readonly renewals: LeaseRenewals;
  private readonly named: NamedStatements;

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, options: PostgresWakeStoreOptions) {
    this.url = url;
    this.agentId = options.agentId;
    this.ttlMs = options.leaseTtlMs ?? DEFAULT_WAKE_LEASE_TTL_MS;
    this.onLeaseLost = options.onLeaseLost;
    this.renewals = new LeaseRenewals(this.ttlMs);
    this.pool = openPostgresPool(url, options.maxConnections ?? 4);
    this.named = new NamedStatements(this.pool);
  }

  static async open(url: string, options: PostgresWakeStoreOptions): Promise<PostgresWakeStore> {
    const store = new PostgresWakeStore(url, options);
    try {
      await store.migrated();
    } catch (error) {
      await store.pool.end().catch(() => {});
      throw error;
    }
    return store;
  }

  private migrated(): Promise<void> {
    this.ready ??= checkPostgres(this.pool, this.url).then(() => migratePostgres(this.pool, WAKE_MIGRATIONS, 'acx_wake_migrations'));
    return this.ready;
  }

  /** On `on` (a locked transaction's connection), else a named statement from the pool (NamedStatements). */
  private async rows<R extends pg.QueryResultRow>(sql: string, values: unknown[] = [], on?: pg.PoolClient): Promise<R[]> {
    const [text, bound] = agentScoped(sql, values, this.agentId);
    if (on) return (await on.query<R>(text, bound)).rows;
    await this.migrated();
    return (await this.named.query<R>(text, bound)).rows;
  }

  /**
   * One transaction holding the session's lock. An advisory transaction lock, not
   * `SELECT … FOR UPDATE`: a session's first event has no row to lock yet (two first wakes would
   * both find no lease, and both number their event 1), while the advisory lock exists for any
   * session id, serialises `admit`, `release` and the batch writes of one agent's session — and
   * only of that session (an equal hash of another key only makes the two wait on each other) — and is let go by COMMIT or ROLLBACK, so a wake that dies cannot leave it held.
   * In READ COMMITTED each statement after the lock sees everything committed before it was taken.
   */
  private async locked<T, R extends pg.QueryResultRow = never>(
    sessionId: string,
    fn: (client: pg.PoolClient, serverNowMs: number, commitWith: CommitWith, read: R[]) => Promise<T>,
    read?: { sql: string; values: unknown[] },
  ): Promise<T> {
    await this.migrated();
    // The agent id's length first: no two (agent, session) pairs make the same text. Taken in the
    // same round trip as BEGIN, hence the key as a quoted literal; and with them the server's
    // time (the transaction's, as now() is throughout it), which admit counts its breaker on,
    // and a first read under the lock, if the caller has one (its values as literals too).
    const key = pg.escapeLiteral(`${this.agentId.length}:${this.agentId}/${sessionId}`);
    const statements = ['BEGIN', `SELECT pg_advisory_xact_lock(${SESSION_LOCK_SPACE}, hashtext(${key}))`, SERVER_NOW_MS_QUERY];
    if (read) statements.push(withLiterals(...agentScoped(read.sql, read.values, this.agentId)));
    return inTransaction(
      this.pool,
      (client, begun, commitWith) =>
        fn(client, serverNowMsOf(begun[2]!), (sql, values) => commitWith(...agentScoped(sql, values, this.agentId)), read ? (begun[3]!.rows as R[]) : []),
      statements.join('; '),
    );
  }

  async close(): Promise<void> {
    this.renewals.stopAll();
    await this.pool.end();
  }

  async admit(
    sessionId: string,
    event: WakeEvent | undefined,
    breaker: BreakerSettings,
    holder: LeaseHolder = currentHolder(),
    pinnedNowMs?: number,
  ): Promise<Admission> {
    // The event recorded and the lease read with the lock, in one round trip; the lease before
    // the breaker: a busy wake is not counted (see WakeStore.admit).
    const recorded = this.recordAndReadLease(sessionId, event, pinnedNowMs);
    const admission = await this.locked<Admission, { inserted: boolean; holder: string | null }>(sessionId, async (client, serverNowMs, commitWith, [row]): Promise<Admission> => {
      // The server's clock unless a test pins one: every worker's breaker counts on the same clock (postgres-sql.ts).
      const nowMs = pinnedNowMs ?? serverNowMs;
      const { inserted: eventIsNew, holder: current } = row!;
      const currentHolder = current === null ? undefined : (JSON.parse(current) as LeaseHolder);
      // A holder that exited on this machine is not waited for: its lease would only lapse later.
      if (currentHolder && !sameHolder(currentHolder, holder) && !holderGoneAsSeenBy(currentHolder, holder)) return { kind: 'busy', eventIsNew, holder: currentHolder, breaker: 'none' };
      const { wakesInWindow, change } = await admitToBreakerAsync(postgresBreakerQuery((sql, values) => client.query(sql, values)), SESSION_BREAKER, [this.agentId, sessionId], breaker, nowMs);
      if (change === 'tripped' || change === 'still-tripped') return { kind: 'declined', eventIsNew, wakesInWindow, breaker: change };
      commitWith(
        "INSERT INTO acx_wake_leases (agent_id, session_id, holder, acquired_at, expires_at) VALUES ($agent, $1, $2, $3, now() + $4 * interval '1 millisecond') " +
          'ON CONFLICT (agent_id, session_id) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at',
        [sessionId, JSON.stringify(holder), new Date(nowMs).toISOString(), this.ttlMs],
      );
      return { kind: 'leader', eventIsNew, breaker: change };
    }, recorded);
    if (admission.kind === 'leader') this.keepRenewing(sessionId, JSON.stringify(holder));
    return admission;
  }

  /** Renews the lease well inside its expiry while this store holds it (until release, abandon or close). */
  private keepRenewing(sessionId: string, holder: string): void {
    this.renewals.keep(
      sessionId,
      async () =>
        ((
          await this.pool.query(
            ...agentScoped("UPDATE acx_wake_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE agent_id = $agent AND session_id = $1 AND holder = $2", [sessionId, holder, this.ttlMs], this.agentId),
          )
        ).rowCount ?? 0) > 0,
      () => {
        this.onLeaseLost?.(sessionId);
        return `the lease on session ${sessionId} lapsed (not renewed within ${this.ttlMs} ms); another wake may have taken the session over`;
      },
    );
  }

  /** The renewals' loss signal of the lease the last `admit` took (see LeaseRenewals.keep). */
  leaseLost(sessionId: string): AbortSignal {
    return this.renewals.lost(sessionId);
  }

  private stopRenewing(sessionId: string): void {
    this.renewals.stop(sessionId);
  }

  /**
   * The statement that records the event (once per id) and reads the session's live lease holder;
   * `locked` sends it with the lock, in the BEGIN's round trip. Its time is the transaction's
   * (`now()`, the one admit's breaker counts on) unless a test pins one.
   */
  private recordAndReadLease(sessionId: string, event: WakeEvent | undefined, pinnedNowMs: number | undefined): { sql: string; values: unknown[] } {
    const lease = '(SELECT holder FROM acx_wake_leases WHERE agent_id = $agent AND session_id = $1 AND expires_at > now()) AS holder';
    if (!event) return { sql: `SELECT false AS inserted, ${lease}`, values: [sessionId] };
    const at = pinnedNowMs === undefined ? SERVER_NOW_ISO : pg.escapeLiteral(new Date(pinnedNowMs).toISOString());
    // Numbered under the session lock, so two events never share a seq. The SELECT sees the
    // leases as they were before the statement: the INSERT touches only the inbox.
    return {
      sql:
        'WITH recorded AS (INSERT INTO acx_wake_inbox (agent_id, session_id, event_id, seq, text, sender, sender_kind, addressed, state, received_at, done_at) ' +
        `SELECT $agent, $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4, $5, $6, $7, ${at}, ${event.own ? at : 'NULL'} FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 ` +
        `ON CONFLICT (agent_id, session_id, event_id) DO NOTHING RETURNING 1) SELECT EXISTS (SELECT 1 FROM recorded) AS inserted, ${lease}`,
      values: [
        sessionId,
        event.id,
        event.text,
        event.sender ?? null,
        event.senderKind ?? null,
        event.addressed !== false,
        event.own ? 'done' : 'pending',
      ],
    };
  }

  async isTripped(sessionId: string): Promise<boolean> {
    return (await this.rows('SELECT 1 FROM acx_wake_breaker_trips WHERE agent_id = $agent AND session_id = $1', [sessionId])).length > 0;
  }

  async nextPending(sessionId: string): Promise<InboxItem | undefined> {
    return this.firstPending(sessionId);
  }

  private async firstPending(sessionId: string): Promise<InboxItem | undefined> {
    const [row] = await this.rows<InboxRow>("SELECT * FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 AND state = 'pending' ORDER BY seq LIMIT 1", [sessionId]);
    return row ? toItem(row) : undefined;
  }

  async pending(sessionId: string): Promise<InboxItem[]> {
    return (await this.rows<InboxRow>("SELECT * FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 AND state = 'pending' ORDER BY seq", [sessionId])).map(toItem);
  }

  async openBatch(sessionId: string): Promise<InboxItem[] | undefined> {
    return openBatchIn(await this.pending(sessionId));
  }

  async fixBatch(sessionId: string, eventIds: readonly string[]): Promise<string> {
    const batchId = eventIds[0]!;
    await this.rows('UPDATE acx_wake_inbox SET batch_id = $1 WHERE agent_id = $agent AND session_id = $2 AND event_id = ANY($3) AND batch_id IS NULL', [batchId, sessionId, eventIds]);
    return batchId;
  }

  async growBatch(sessionId: string, batchId: string, eventIds: readonly string[]): Promise<number> {
    return this.locked(sessionId, async (client) => {
      const [{ build }] = (await this.rows<{ build: number }>('SELECT MAX(build) AS build FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 AND batch_id = $2', [sessionId, batchId], client)) as [
        { build: number },
      ];
      await this.rows(
        "UPDATE acx_wake_inbox SET batch_id = $1, build = $2 WHERE agent_id = $agent AND session_id = $3 AND event_id = ANY($4) AND batch_id IS NULL AND state = 'pending'",
        [batchId, build + 1, sessionId, eventIds],
        client,
      );
      return build + 1;
    });
  }

  async item(sessionId: string, eventId: string): Promise<InboxItem | undefined> {
    const [row] = await this.rows<InboxRow>('SELECT * FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 AND event_id = $2', [sessionId, eventId]);
    return row ? toItem(row) : undefined;
  }

  async items(sessionId: string): Promise<InboxItem[]> {
    return (await this.rows<InboxRow>('SELECT * FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 ORDER BY seq', [sessionId])).map(toItem);
  }

  async markAttempt(sessionId: string, eventIds: readonly string[]): Promise<number> {
    const rows = await this.rows<{ attempts: number }>(
      'UPDATE acx_wake_inbox SET attempts = attempts + 1 WHERE agent_id = $agent AND session_id = $1 AND event_id = ANY($2) RETURNING attempts',
      [sessionId, eventIds],
    );
    return Math.max(0, ...rows.map((row) => row.attempts));
  }

  async markDone(sessionId: string, eventIds: readonly string[], reply: string): Promise<void> {
    await this.settle(sessionId, eventIds, "state = 'done', reply = $1, error = NULL", reply);
  }

  async markFailed(sessionId: string, eventIds: readonly string[], error: string): Promise<void> {
    await this.settle(sessionId, eventIds, "state = 'failed', error = $1", scrubSecrets(error));
  }

  private async settle(sessionId: string, eventIds: readonly string[], set: string, value: string): Promise<void> {
    await this.rows(`UPDATE acx_wake_inbox SET ${set}, done_at = $2 WHERE agent_id = $agent AND session_id = $3 AND event_id = ANY($4)`, [value, new Date().toISOString(), sessionId, eventIds]);
  }

  async recordError(sessionId: string, eventIds: readonly string[], error: string): Promise<void> {
    await this.rows('UPDATE acx_wake_inbox SET error = $1 WHERE agent_id = $agent AND session_id = $2 AND event_id = ANY($3)', [scrubSecrets(error), sessionId, eventIds]);
  }

  /** Under the session lock: an event `admit` records either committed before (and is seen here) or waits and finds the lease free. */
  async release(sessionId: string, holder: LeaseHolder = currentHolder()): Promise<boolean> {
    // Two round trips: what is pending and who holds the lease read with the lock, the lease dropped with the COMMIT.
    const released = await this.locked<boolean, { waiting: boolean; holder: string | null }>(
      sessionId,
      async (_client, _nowMs, commitWith, [lease]) => {
        if (lease!.waiting) return false;
        this.dropLeaseOf(commitWith, sessionId, lease!.holder, holder);
        return true;
      },
      {
        sql:
          "SELECT EXISTS (SELECT 1 FROM acx_wake_inbox WHERE agent_id = $agent AND session_id = $1 AND state = 'pending') AS waiting, " +
          '(SELECT holder FROM acx_wake_leases WHERE agent_id = $agent AND session_id = $1) AS holder',
        values: [sessionId],
      },
    );
    if (released) this.stopRenewing(sessionId);
    return released;
  }

  async abandon(sessionId: string, holder: LeaseHolder = currentHolder()): Promise<void> {
    this.stopRenewing(sessionId);
    await this.locked<void, { holder: string }>(sessionId, async (_client, _nowMs, commitWith, [lease]) => this.dropLeaseOf(commitWith, sessionId, lease?.holder ?? null, holder), {
      sql: 'SELECT holder FROM acx_wake_leases WHERE agent_id = $agent AND session_id = $1',
      values: [sessionId],
    });
  }

  /** Deletes the session's lease, read as `current` under the session lock, if `holder` holds it: the transaction's last write. */
  private dropLeaseOf(commitWith: CommitWith, sessionId: string, current: string | null, holder: LeaseHolder): void {
    if (current !== null && sameHolder(JSON.parse(current) as LeaseHolder, holder)) {
      commitWith('DELETE FROM acx_wake_leases WHERE agent_id = $agent AND session_id = $1', [sessionId]);
    }
  }

  async liveLeaseHolder(sessionId: string): Promise<LeaseHolder | undefined> {
    const [lease] = await this.rows<{ holder: string }>('SELECT holder FROM acx_wake_leases WHERE agent_id = $agent AND session_id = $1 AND expires_at > now()', [sessionId]);
    return lease ? (JSON.parse(lease.holder) as LeaseHolder) : undefined;
  }

  async sessions(): Promise<Array<{ sessionId: string; lastEventAt: string | null }>> {
    const rows = await this.rows<{ session_id: string; last: string | null }>(
      'SELECT session_id, MAX(received_at) AS last FROM acx_wake_inbox WHERE agent_id = $agent GROUP BY session_id ' +
        'UNION SELECT session_id, NULL FROM acx_wake_wakes WHERE agent_id = $agent AND session_id NOT IN (SELECT session_id FROM acx_wake_inbox WHERE agent_id = $agent) GROUP BY session_id',
    );
    return rows.map((row) => ({ sessionId: row.session_id, lastEventAt: row.last }));
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.stopRenewing(sessionId);
    await this.locked(sessionId, async (client) => {
      for (const table of ['acx_wake_inbox', 'acx_wake_leases', 'acx_wake_wakes', 'acx_wake_breaker_trips']) {
        await this.rows(`DELETE FROM ${table} WHERE agent_id = $agent AND session_id = $1`, [sessionId], client);
      }
    });
  }
}
