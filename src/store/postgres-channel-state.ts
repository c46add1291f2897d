import pg from 'pg';
import { AcxError } from '../core/errors.ts';
import { admitToBreakerAsync, type BreakerAdmission, type BreakerSettings, type BreakerTables, postgresBreakerQuery, retractFromBreakerAsync } from './breaker.ts';
import { CLAIM_STALE_MS, type ChannelState, type ClaimOutcome, type ClaimPhase, type ItemRef, type MarkedKind, type NextLapse } from './channel-state.ts';
import { currentHolder, type LeaseHolder, recordedHolderGone } from './lease-holder.ts';
import { LeaseRenewals, renewalMissed } from './lease-renewals.ts';
import { checkPostgres, migratePostgres } from './postgres-migrations.ts';
import { inTransaction, SERVER_NOW_ISO, serverNowMs } from './postgres-sql.ts';
import { openPostgresPool } from './postgres-pool.ts';
import { whileServerAway } from './postgres-wait.ts';

/**
 * The channel state on PostgreSQL, for timeline wakes served from any host: the same marks,
 * seen-set, claims and breaker as channel.db, every row keyed by agent and timeline (several
 * agents share one database). An in-flight claim is held by a lease: an expiry (the server's
 * clock) the store renews while the wake that took it runs, so a dead wake's items are taken
 * over on any host within one `leaseTtlMs`, and a live wake's are never taken (a pid means
 * nothing on another host, so liveness is judged by one only where it was recorded: a wake on the
 * machine of a holder that exited takes its claims over at once). Staleness (CLAIM_STALE_MS since
 * the last heartbeat) still frees a claim whose live holder is stuck, as on SQLite.
 */
const MIGRATIONS = [
  `CREATE TABLE acx_channel_marks (
     agent_id TEXT NOT NULL, timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, at TEXT NOT NULL,
     PRIMARY KEY (agent_id, timeline, kind));
   CREATE TABLE acx_channel_seen (
     agent_id TEXT NOT NULL, timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, at TEXT NOT NULL,
     PRIMARY KEY (agent_id, timeline, kind, item));
   CREATE TABLE acx_channel_claims (
     agent_id TEXT NOT NULL, timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL,
     phase TEXT NOT NULL, wake TEXT NOT NULL, holder TEXT NOT NULL,
     at TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, reason TEXT, resumes INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (agent_id, timeline, kind, item));
   CREATE INDEX acx_channel_claims_by_wake ON acx_channel_claims(agent_id, wake) WHERE phase = 'in-flight';
   CREATE TABLE acx_channel_breaker_wakes (agent_id TEXT NOT NULL, timeline TEXT NOT NULL, at_ms BIGINT NOT NULL);
   CREATE INDEX acx_channel_breaker_wakes_by_timeline ON acx_channel_breaker_wakes(agent_id, timeline, at_ms);
   CREATE TABLE acx_channel_breaker_trips (
     agent_id TEXT NOT NULL, timeline TEXT NOT NULL, tripped_at_ms BIGINT NOT NULL,
     PRIMARY KEY (agent_id, timeline));`,
  // The turn (its batch's anchor) an in-flight claim is answered in (ChannelState.fixBatch).
  `ALTER TABLE acx_channel_claims ADD COLUMN batch TEXT;`,
];

const TIMELINE_BREAKER: BreakerTables = { wakes: 'acx_channel_breaker_wakes', trips: 'acx_channel_breaker_trips', key: ['agent_id', 'timeline'] };

/** The first key of every claim lock (the second hashes agent, timeline, kind and item): apart from other advisory locks. */
const CLAIM_LOCK_SPACE = 0x61636368;

/** How long a claim lasts unrenewed (default): a dead wake's items are taken over after this. */
export const DEFAULT_CLAIM_LEASE_TTL_MS = 15_000;

export interface PostgresChannelStateOptions {
  /** How long a claim lasts unrenewed; renewed every third of it while its wake runs (default 15 s). */
  leaseTtlMs?: number;
  /** Who takes claims, for inspection (liveness is the lease's expiry). Default: this process. */
  holder?: LeaseHolder;
  /** A pinned clock for marks, claims' times (staleness) and the breaker (tests); default the server's (postgres-sql.ts). */
  now?: () => Date;
  maxConnections?: number;
}

interface ClaimRow {
  phase: ClaimPhase;
  wake: string;
  /** The holder's LeaseHolder, as JSON. */
  holder: string;
  resumes: number;
  batch: string | null;
  live: boolean;
  stale: boolean;
}

/** A row's time (the `at` text columns): the pinned clock's, bound as parameter n, else the server's. */
const at = (n: number) => `COALESCE($${n}::text, ${SERVER_NOW_ISO})`;

const refKey = (ref: ItemRef) => JSON.stringify([ref.timeline, ref.kind, ref.item]);

export class PostgresChannelState implements ChannelState {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  readonly agentId: string;
  private readonly url: string;
  private readonly ttlMs: number;
  /** The process this store holds claims for, and as written into them. */
  private readonly holderIs: LeaseHolder;
  private readonly holder: string;
  private readonly pinnedNow: (() => Date) | undefined;
  private ready: Promise<void> | undefined;
  /** One lease renewal per wake with claims in flight here, and which claims those are. */
  private readonly renewals: LeaseRenewals;
  private readonly inFlight = new Map<string, Set<string>>();

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, agentId: string, options: PostgresChannelStateOptions = {}) {
    if (typeof agentId !== 'string' || agentId === '') {
      throw new AcxError('config', 'The PostgreSQL channel state needs the agent id its rows belong to.', { hint: 'Pass the agent id.' });
    }
    this.url = url;
    this.agentId = agentId;
    this.ttlMs = options.leaseTtlMs ?? DEFAULT_CLAIM_LEASE_TTL_MS;
    this.holderIs = options.holder ?? currentHolder();
    this.holder = JSON.stringify(this.holderIs);
    this.pinnedNow = options.now;
    this.renewals = new LeaseRenewals(this.ttlMs);
    this.pool = openPostgresPool(url, options.maxConnections ?? 4);
  }

  static async open(url: string, agentId: string, options: PostgresChannelStateOptions = {}): Promise<PostgresChannelState> {
    const state = new PostgresChannelState(url, agentId, options);
    try {
      await state.migrated();
    } catch (error) {
      await state.pool.end().catch(() => {});
      throw error;
    }
    return state;
  }

  private migrated(): Promise<void> {
    this.ready ??= checkPostgres(this.pool, this.url).then(() => migratePostgres(this.pool, MIGRATIONS, 'acx_channel_migrations'));
    return this.ready;
  }

  /** A statement with `$1` bound to this agent; the caller's values follow as `$2, …`. */
  private async rows<R extends pg.QueryResultRow>(sql: string, values: unknown[] = [], on?: pg.PoolClient): Promise<R[]> {
    if (!on) await this.migrated();
    return (await (on ?? this.pool).query<R>(sql, [this.agentId, ...values])).rows;
  }

  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.migrated();
    return inTransaction(this.pool, fn);
  }

  async close(): Promise<void> {
    // Claims still in flight stop being renewed: another wake takes them over once they lapse.
    this.renewals.stopAll();
    this.inFlight.clear();
    await this.pool.end();
  }

  /** The pinned clock's time, or null: the SQL then writes the server's (see `at`). */
  private pinnedIso(): string | null {
    return this.pinnedNow?.().toISOString() ?? null;
  }

  async mark(timeline: string, kind: MarkedKind): Promise<string | undefined> {
    const [row] = await this.rows<{ item: string }>('SELECT item FROM acx_channel_marks WHERE agent_id = $1 AND timeline = $2 AND kind = $3', [timeline, kind]);
    return row?.item;
  }

  async setMark(timeline: string, kind: MarkedKind, item: string): Promise<void> {
    await this.rows(
      `INSERT INTO acx_channel_marks (agent_id, timeline, kind, item, at) VALUES ($1, $2, $3, $4, ${at(5)}) ON CONFLICT (agent_id, timeline, kind) DO UPDATE SET item = excluded.item, at = excluded.at`,
      [timeline, kind, item, this.pinnedIso()],
    );
  }

  async hasSeen(ref: ItemRef): Promise<boolean> {
    return (await this.rows('SELECT 1 FROM acx_channel_seen WHERE agent_id = $1 AND timeline = $2 AND kind = $3 AND item = $4', [ref.timeline, ref.kind, ref.item])).length > 0;
  }

  async markSeen(ref: ItemRef): Promise<void> {
    await this.rows(`INSERT INTO acx_channel_seen (agent_id, timeline, kind, item, at) VALUES ($1, $2, $3, $4, ${at(5)}) ON CONFLICT DO NOTHING`, [
      ref.timeline,
      ref.kind,
      ref.item,
      this.pinnedIso(),
    ]);
  }

  /**
   * Under the item's advisory transaction lock (an item's first claim has no row to lock yet), so
   * two wakes racing for it on any hosts take turns and one wins. The holder is alive while its
   * lease has not expired, unless it ran on this machine and has exited: then its claim is taken
   * over at once rather than a lease later (a SIGKILLed worker's timeline waited out the lease).
   */
  async take(ref: ItemRef, wake: string): Promise<ClaimOutcome> {
    const outcome = await this.transaction(async (client): Promise<ClaimOutcome> => {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_LOCK_SPACE, JSON.stringify([this.agentId, ref.timeline, ref.kind, ref.item])]);
      const [row] = await this.rows<ClaimRow>(
        `SELECT phase, wake, holder, resumes, expires_at > now() AS live, COALESCE($5::timestamptz, now()) - at::timestamptz > $6 * interval '1 millisecond' AS stale
         FROM acx_channel_claims WHERE agent_id = $1 AND timeline = $2 AND kind = $3 AND item = $4`,
        [ref.timeline, ref.kind, ref.item, this.pinnedIso(), CLAIM_STALE_MS],
        client,
      );
      if (!row) {
        await this.writeClaim(client, ref, wake, 0);
        return 'taken';
      }
      if (row.phase === 'done' || row.phase === 'abandoned') return row.phase;
      if (row.wake === wake) return 'taken';
      if (!row.stale && row.live && !recordedHolderGone(row.holder, this.holderIs)) return 'held';
      await this.writeClaim(client, ref, wake, row.resumes + 1);
      return 'resumed';
    });
    if (outcome === 'taken' || outcome === 'resumed') this.keepRenewing(ref, wake);
    return outcome;
  }

  private async writeClaim(client: pg.PoolClient, ref: ItemRef, wake: string, resumes: number): Promise<void> {
    await this.rows(
      `INSERT INTO acx_channel_claims (agent_id, timeline, kind, item, phase, wake, holder, at, expires_at, reason, resumes)
       VALUES ($1, $2, $3, $4, 'in-flight', $5, $6, ${at(7)}, now() + $8 * interval '1 millisecond', NULL, $9)
       ON CONFLICT (agent_id, timeline, kind, item) DO UPDATE SET phase = excluded.phase, wake = excluded.wake, holder = excluded.holder,
         at = excluded.at, expires_at = excluded.expires_at, reason = NULL, resumes = excluded.resumes`,
      [ref.timeline, ref.kind, ref.item, wake, this.holder, this.pinnedIso(), this.ttlMs, resumes],
      client,
    );
  }

  /** One renewal per wake covers all its in-flight claims here, until they are settled or the store closes. */
  private keepRenewing(ref: ItemRef, wake: string): void {
    const claims = this.inFlight.get(wake);
    if (claims) {
      claims.add(refKey(ref));
      return;
    }
    this.inFlight.set(wake, new Set([refKey(ref)]));
    // Nothing renewed (every claim of the wake lapsed and was taken over: this process stalled),
    // or no renewal succeeded for a whole TTL (the server unreachable): the claims may be another
    // wake's now, and the running turn is told to stop before it repeats what that wake does.
    this.renewals.keep(
      wake,
      async () =>
        (
          await this.rows(
            "UPDATE acx_channel_claims SET expires_at = now() + $3 * interval '1 millisecond' WHERE agent_id = $1 AND wake = $2 AND phase = 'in-flight' RETURNING 1",
            [wake, this.ttlMs],
          )
        ).length > 0,
      () => this.lost(wake),
    );
  }

  /** What the wake lost, for the `lease-lost` error its claimsLost signal aborts with. */
  private lost(wake: string): string {
    const claims = [...(this.inFlight.get(wake) ?? [])].map((key) => JSON.parse(key) as [string, string, string]);
    this.inFlight.delete(wake);
    const items = claims.map(([timeline, kind, item]) => `${timeline}/${kind}/${item}`).join(', ');
    return `this wake's claims on ${items} lapsed (not renewed within ${this.ttlMs} ms); another wake may take them over`;
  }

  /** The renewals' loss signal of the wake's claims (see LeaseRenewals.keep): asked once the wake has taken them. */
  claimsLost(wake: string): AbortSignal {
    return this.renewals.lost(wake);
  }

  private settled(refs: readonly ItemRef[], wake: string): void {
    const claims = this.inFlight.get(wake);
    if (claims) for (const ref of refs) claims.delete(refKey(ref));
    if (claims && claims.size > 0) return;
    // Every claim settled, or lost (the renewals keep a lost hold's signal until stopped).
    this.inFlight.delete(wake);
    this.renewals.stop(wake);
  }

  private async claimColumn<K extends 'phase' | 'resumes' | 'batch'>(ref: ItemRef, column: K): Promise<ClaimRow[K] | undefined> {
    const [row] = await this.rows<ClaimRow>(`SELECT ${column} FROM acx_channel_claims WHERE agent_id = $1 AND timeline = $2 AND kind = $3 AND item = $4`, [ref.timeline, ref.kind, ref.item]);
    return row?.[column];
  }

  async resumes(ref: ItemRef): Promise<number> {
    return (await this.claimColumn(ref, 'resumes')) ?? 0;
  }

  async phase(ref: ItemRef): Promise<ClaimPhase | undefined> {
    return this.claimColumn(ref, 'phase');
  }

  async letGo(refs: readonly ItemRef[], wake: string, options: { countResume?: boolean } = {}): Promise<void> {
    // Renewals stop first; should the update never land, the claims lapse unrenewed.
    this.settled(refs, wake);
    // A wake that failed because the server went away lets go once it is back: found by the chaos
    // run, where a 0.3 s restart left the claims held for their whole lease, and every delivery of
    // the timeline was put off behind them. Past one lease there is nothing left to let go.
    await whileServerAway(
      () =>
        this.rows(
          `UPDATE acx_channel_claims SET expires_at = now(), resumes = GREATEST(resumes - $3, 0)
           WHERE agent_id = $1 AND wake = $2 AND phase = 'in-flight' AND (timeline, kind, item) IN (SELECT * FROM unnest($4::text[], $5::text[], $6::text[]))`,
          [wake, options.countResume === false ? 1 : 0, ...columnsOf(refs)],
        ),
      this.ttlMs,
    );
  }

  async nextLapse(timeline: string): Promise<NextLapse | undefined> {
    const [row] = await this.rows<{ ms: string | null }>(
      `SELECT ceil(extract(epoch FROM min(expires_at) - now()) * 1000)::bigint AS ms FROM acx_channel_claims
       WHERE agent_id = $1 AND timeline = $2 AND phase = 'in-flight' AND expires_at > now()`,
      [timeline],
    );
    if (row?.ms === null || row?.ms === undefined) return undefined;
    const inMs = Number(row.ms);
    return { inMs, renewalMissed: renewalMissed(inMs, this.ttlMs) };
  }

  /**
   * The batch's claims also get one expiry (taken one by one, each had its own): should the wake
   * die, they lapse together, so a wake taking over never finds part of the batch still held and
   * finishes its turn for the rest alone (found by the chaos run: a duplicate reply).
   */
  async fixBatch(refs: readonly ItemRef[], wake: string, anchor: string): Promise<void> {
    await this.rows(
      `UPDATE acx_channel_claims SET batch = $2, expires_at = now() + $7 * interval '1 millisecond'
       WHERE agent_id = $1 AND wake = $3 AND phase = 'in-flight' AND (timeline, kind, item) IN (SELECT * FROM unnest($4::text[], $5::text[], $6::text[]))`,
      [anchor, wake, ...columnsOf(refs), this.ttlMs],
    );
  }

  async batchOf(ref: ItemRef): Promise<string | undefined> {
    return (await this.claimColumn(ref, 'batch')) ?? undefined;
  }

  async heartbeat(refs: readonly ItemRef[], wake: string): Promise<void> {
    await this.rows(
      `UPDATE acx_channel_claims SET at = ${at(2)}, expires_at = now() + $3 * interval '1 millisecond'
       WHERE agent_id = $1 AND wake = $4 AND phase = 'in-flight' AND (timeline, kind, item) IN (SELECT * FROM unnest($5::text[], $6::text[], $7::text[]))`,
      [this.pinnedIso(), this.ttlMs, wake, ...columnsOf(refs)],
    );
  }

  async commit(refs: readonly ItemRef[], wake: string): Promise<ItemRef[]> {
    return this.release(refs, wake, 'done', null);
  }

  async abandon(refs: readonly ItemRef[], wake: string, reason: string): Promise<ItemRef[]> {
    return this.release(refs, wake, 'abandoned', reason);
  }

  private async release(refs: readonly ItemRef[], wake: string, phase: 'done' | 'abandoned', reason: string | null): Promise<ItemRef[]> {
    const settled = await this.rows<{ timeline: string; kind: string; item: string }>(
      `UPDATE acx_channel_claims SET phase = $2, at = ${at(3)}, reason = $4
       WHERE agent_id = $1 AND wake = $5 AND (timeline, kind, item) IN (SELECT * FROM unnest($6::text[], $7::text[], $8::text[]))
       RETURNING timeline, kind, item`,
      [phase, this.pinnedIso(), reason, wake, ...columnsOf(refs)],
    );
    this.settled(refs, wake);
    const found = new Set(settled.map((row) => refKey(row as ItemRef)));
    return refs.filter((ref) => !found.has(refKey(ref)));
  }

  /** A resumed claim goes back lapsed (its expiry now), so the next wake takes it over at once. */
  async giveBack(refs: readonly ItemRef[], wake: string): Promise<void> {
    // Renewals stop first, so none extends a claim once it is given back.
    this.settled(refs, wake);
    const where = "agent_id = $1 AND wake = $2 AND phase = 'in-flight' AND (timeline, kind, item) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[]))";
    await this.transaction(async (client) => {
      await this.rows(`DELETE FROM acx_channel_claims WHERE ${where} AND resumes = 0`, [wake, ...columnsOf(refs)], client);
      await this.rows(`UPDATE acx_channel_claims SET resumes = resumes - 1, expires_at = now() WHERE ${where} AND resumes > 0`, [wake, ...columnsOf(refs)], client);
    });
  }

  async admitWake(timeline: string, settings: BreakerSettings): Promise<BreakerAdmission> {
    return this.transaction(async (client) => {
      // The timeline's wakes take turns, so two on different hosts both count and one decision stands.
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_LOCK_SPACE, JSON.stringify([this.agentId, 'breaker', timeline])]);
      return admitToBreakerAsync(postgresBreakerQuery((sql, values) => client.query(sql, values)), TIMELINE_BREAKER, [this.agentId, timeline], settings, this.pinnedNow?.().getTime() ?? (await serverNowMs(client)));
    });
  }

  async retractWake(timeline: string, atMs: number): Promise<void> {
    await this.migrated();
    await retractFromBreakerAsync(postgresBreakerQuery((sql, values) => this.pool.query(sql, values)), TIMELINE_BREAKER, [this.agentId, timeline], atMs);
  }

  async isTripped(timeline: string): Promise<boolean> {
    return (await this.rows('SELECT 1 FROM acx_channel_breaker_trips WHERE agent_id = $1 AND timeline = $2', [timeline])).length > 0;
  }

  async purge(timeline: string): Promise<void> {
    await this.transaction(async (client) => {
      for (const table of ['acx_channel_marks', 'acx_channel_seen', 'acx_channel_claims', 'acx_channel_breaker_wakes', 'acx_channel_breaker_trips']) {
        await this.rows(`DELETE FROM ${table} WHERE agent_id = $1 AND timeline = $2`, [timeline], client);
      }
    });
  }

  async timelines(): Promise<string[]> {
    const rows = await this.rows<{ timeline: string }>(
      'SELECT timeline FROM acx_channel_marks WHERE agent_id = $1 UNION SELECT timeline FROM acx_channel_seen WHERE agent_id = $1 ' +
        'UNION SELECT timeline FROM acx_channel_claims WHERE agent_id = $1 ORDER BY 1',
    );
    return rows.map((row) => row.timeline);
  }
}

/** Item refs as three parallel arrays, for `unnest`. */
function columnsOf(refs: readonly ItemRef[]): [string[], string[], string[]] {
  return [refs.map((ref) => ref.timeline), refs.map((ref) => ref.kind), refs.map((ref) => ref.item)];
}
