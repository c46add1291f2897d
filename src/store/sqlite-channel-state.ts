import { admitToBreaker, type BreakerAdmission, type BreakerSettings, type BreakerTables, retractFromBreaker } from './breaker.ts';
import { CLAIM_STALE_MS, type ChannelState, type ClaimOutcome, type ClaimPhase, type ItemRef, type MarkedKind } from './channel-state.ts';
import { openDatabase, transaction, type Database } from './database.ts';
import { currentHolder, holderIsAlive, type LeaseHolder } from './lease-holder.ts';


/** The channel state in `<state dir>/channel.db`: a claim's holder is a process on this host. */
const MIGRATIONS = [
  `CREATE TABLE marks (timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (timeline, kind)) WITHOUT ROWID;
   CREATE TABLE seen (timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (timeline, kind, item)) WITHOUT ROWID;
   CREATE TABLE claims (
     timeline TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL,
     phase TEXT NOT NULL, wake TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, started INTEGER,
     at TEXT NOT NULL, reason TEXT, resumes INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (timeline, kind, item)) WITHOUT ROWID;`,
  // The per-timeline circuit breaker (FACTS.md: breaker/<tl>.wakes and a tripped flag): recent
  // wakes' times and, while tripped, when it tripped.
  `CREATE TABLE breaker_wakes (timeline TEXT NOT NULL, at_ms INTEGER NOT NULL);
   CREATE INDEX breaker_wakes_by_timeline ON breaker_wakes(timeline, at_ms);
   CREATE TABLE breaker_trips (timeline TEXT PRIMARY KEY, tripped_at_ms INTEGER NOT NULL);`,
  // The turn (its batch's anchor) an in-flight claim is answered in (ChannelState.fixBatch).
  `ALTER TABLE claims ADD COLUMN batch TEXT;`,
];

const TIMELINE_BREAKER: BreakerTables = { wakes: 'breaker_wakes', trips: 'breaker_trips', key: 'timeline' };

interface ClaimRow {
  phase: ClaimPhase;
  wake: string;
  pid: number;
  host: string;
  started: number | null;
  at: string;
  resumes: number;
}

export interface SqliteChannelStateOptions {
  holder?: LeaseHolder;
  isAlive?: (holder: LeaseHolder) => boolean;
  now?: () => Date;
}

export class SqliteChannelState implements ChannelState {
  readonly kind = 'sqlite' as const;
  readonly db: Database;
  private readonly holder: LeaseHolder;
  private readonly isAlive: (holder: LeaseHolder) => boolean;
  private readonly now: () => Date;

  constructor(path: string, options: SqliteChannelStateOptions = {}) {
    this.db = openDatabase(path, { migrations: MIGRATIONS });
    this.holder = options.holder ?? currentHolder();
    this.isAlive = options.isAlive ?? holderIsAlive;
    this.now = options.now ?? (() => new Date());
  }

  async close(): Promise<void> {
    this.db.close();
  }

  async mark(timeline: string, kind: MarkedKind): Promise<string | undefined> {
    const row = this.db.prepare('SELECT item FROM marks WHERE timeline = ? AND kind = ?').get(timeline, kind) as { item: string } | undefined;
    return row?.item;
  }

  async setMark(timeline: string, kind: MarkedKind, item: string): Promise<void> {
    this.db
      .prepare('INSERT INTO marks (timeline, kind, item, at) VALUES (?, ?, ?, ?) ON CONFLICT (timeline, kind) DO UPDATE SET item = excluded.item, at = excluded.at')
      .run(timeline, kind, item, this.now().toISOString());
  }

  async hasSeen(ref: ItemRef): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM seen WHERE timeline = ? AND kind = ? AND item = ?').get(ref.timeline, ref.kind, ref.item) !== undefined;
  }

  async markSeen(ref: ItemRef): Promise<void> {
    this.db.prepare('INSERT OR IGNORE INTO seen (timeline, kind, item, at) VALUES (?, ?, ?, ?)').run(ref.timeline, ref.kind, ref.item, this.now().toISOString());
  }

  /** In one write transaction; the holder is alive while its process runs (this host's pid and start time). */
  async take(ref: ItemRef, wake: string): Promise<ClaimOutcome> {
    return transaction(this.db, () => {
      const row = this.claimRow(ref);
      if (!row) {
        this.writeClaim(ref, wake, 'in-flight', 0);
        return 'taken';
      }
      if (row.phase === 'done' || row.phase === 'abandoned') return row.phase;
      if (row.wake === wake) return 'taken';
      // Another wake of this same process (a library running wakes side by side) counts as alive.
      const stale = this.now().getTime() - Date.parse(row.at) > CLAIM_STALE_MS;
      if (!stale && this.isAlive({ pid: row.pid, host: row.host, started: row.started })) return 'held';
      this.writeClaim(ref, wake, 'in-flight', row.resumes + 1);
      return 'resumed';
    });
  }

  async resumes(ref: ItemRef): Promise<number> {
    return this.claimRow(ref)?.resumes ?? 0;
  }

  async phase(ref: ItemRef): Promise<ClaimPhase | undefined> {
    return this.claimRow(ref)?.phase;
  }

  /** Never: a claim here is held while its process lives, and taken over as soon as it is gone. */
  async nextLapse(): Promise<undefined> {
    return undefined;
  }

  async letGo(refs: readonly ItemRef[], wake: string, options: { countResume?: boolean } = {}): Promise<void> {
    // Its time set to the epoch, the claim reads as stale (CLAIM_STALE_MS), whoever holds it.
    const uncount = options.countResume === false ? 1 : 0;
    const statement = this.db.prepare("UPDATE claims SET at = ?, resumes = max(resumes - ?, 0) WHERE timeline = ? AND kind = ? AND item = ? AND wake = ? AND phase = 'in-flight'");
    transaction(this.db, () => {
      for (const ref of refs) statement.run(new Date(0).toISOString(), uncount, ref.timeline, ref.kind, ref.item, wake);
    });
  }

  async fixBatch(refs: readonly ItemRef[], wake: string, anchor: string): Promise<void> {
    const statement = this.db.prepare("UPDATE claims SET batch = ? WHERE timeline = ? AND kind = ? AND item = ? AND wake = ? AND phase = 'in-flight'");
    transaction(this.db, () => {
      for (const ref of refs) statement.run(anchor, ref.timeline, ref.kind, ref.item, wake);
    });
  }

  async batchOf(ref: ItemRef): Promise<string | undefined> {
    const row = this.db.prepare('SELECT batch FROM claims WHERE timeline = ? AND kind = ? AND item = ?').get(ref.timeline, ref.kind, ref.item) as { batch: string | null } | undefined;
    return row?.batch ?? undefined;
  }

  async heartbeat(refs: readonly ItemRef[], wake: string): Promise<void> {
    const at = this.now().toISOString();
    const statement = this.db.prepare("UPDATE claims SET at = ? WHERE timeline = ? AND kind = ? AND item = ? AND wake = ? AND phase = 'in-flight'");
    transaction(this.db, () => {
      for (const ref of refs) statement.run(at, ref.timeline, ref.kind, ref.item, wake);
    });
  }

  async commit(refs: readonly ItemRef[], wake: string): Promise<ItemRef[]> {
    return this.release(refs, wake, 'done');
  }

  async abandon(refs: readonly ItemRef[], wake: string, reason: string): Promise<ItemRef[]> {
    return this.release(refs, wake, 'abandoned', reason);
  }

  /** A resumed claim goes back dated the epoch: stale, so the next wake takes it over even while this process lives on (a worker). */
  async giveBack(refs: readonly ItemRef[], wake: string): Promise<void> {
    const where = "timeline = ? AND kind = ? AND item = ? AND wake = ? AND phase = 'in-flight'";
    const unclaim = this.db.prepare(`DELETE FROM claims WHERE ${where} AND resumes = 0`);
    const unresume = this.db.prepare(`UPDATE claims SET resumes = resumes - 1, at = ? WHERE ${where} AND resumes > 0`);
    transaction(this.db, () => {
      for (const ref of refs) {
        unclaim.run(ref.timeline, ref.kind, ref.item, wake);
        unresume.run(new Date(0).toISOString(), ref.timeline, ref.kind, ref.item, wake);
      }
    });
  }

  /** A live pid's claim is never taken here, so this wake never loses one. */
  claimsLost(_wake: string): AbortSignal {
    return new AbortController().signal;
  }

  async admitWake(timeline: string, settings: BreakerSettings): Promise<BreakerAdmission> {
    return transaction(this.db, () => admitToBreaker(this.db, TIMELINE_BREAKER, timeline, settings, this.now().getTime()));
  }

  async retractWake(timeline: string, atMs: number): Promise<void> {
    retractFromBreaker(this.db, TIMELINE_BREAKER, timeline, atMs);
  }

  async isTripped(timeline: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM breaker_trips WHERE timeline = ?').get(timeline) !== undefined;
  }

  async purge(timeline: string): Promise<void> {
    transaction(this.db, () => {
      for (const table of ['marks', 'seen', 'claims', 'breaker_wakes', 'breaker_trips']) this.db.prepare(`DELETE FROM ${table} WHERE timeline = ?`).run(timeline);
    });
  }

  async timelines(): Promise<string[]> {
    const rows = this.db.prepare('SELECT timeline FROM marks UNION SELECT timeline FROM seen UNION SELECT timeline FROM claims ORDER BY 1').all() as Array<{ timeline: string }>;
    return rows.map((row) => row.timeline);
  }

  private release(refs: readonly ItemRef[], wake: string, phase: 'done' | 'abandoned', reason?: string): ItemRef[] {
    const statement = this.db.prepare('UPDATE claims SET phase = ?, at = ?, reason = ? WHERE timeline = ? AND kind = ? AND item = ? AND wake = ?');
    const at = this.now().toISOString();
    return transaction(this.db, () => refs.filter((ref) => Number(statement.run(phase, at, reason ?? null, ref.timeline, ref.kind, ref.item, wake).changes) === 0));
  }

  private claimRow(ref: ItemRef): ClaimRow | undefined {
    return this.db.prepare('SELECT phase, wake, pid, host, started, at, resumes FROM claims WHERE timeline = ? AND kind = ? AND item = ?').get(ref.timeline, ref.kind, ref.item) as
      | ClaimRow
      | undefined;
  }

  private writeClaim(ref: ItemRef, wake: string, phase: ClaimPhase, resumes: number): void {
    this.db
      .prepare(
        `INSERT INTO claims (timeline, kind, item, phase, wake, pid, host, started, at, reason, resumes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)
         ON CONFLICT (timeline, kind, item) DO UPDATE SET phase = excluded.phase, wake = excluded.wake, pid = excluded.pid, host = excluded.host,
           started = excluded.started, at = excluded.at, reason = NULL, resumes = excluded.resumes`,
      )
      .run(ref.timeline, ref.kind, ref.item, phase, wake, this.holder.pid, this.holder.host, this.holder.started, this.now().toISOString(), resumes);
  }
}
