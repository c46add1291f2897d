import type { BreakerAdmission, BreakerSettings } from './breaker.ts';
import type { StoreKind } from './journal-store.ts';

/**
 * What a timeline agent remembers about each timeline between wakes:
 * - marks: the newest item of a kind (messages, assets, webhook events) the agent is done with;
 *   everything after it is unseen. A mark only moves past settled items.
 * - seen: activated tasks already taken up (tasks are not ordered as the others are).
 * - claims: two-phase ownership of one item (in-flight → done | abandoned), so a killed wake
 *   leaves its work for the next, and a live wake's item is never taken from it.
 * - the breaker: how often each timeline woke the agent lately, and whether that tripped it.
 *
 * Kept in `<state dir>/channel.db` (SQLite: a claim's holder is a pid on this host), or on a
 * PostgreSQL server shared by wakes on many hosts (rows keyed by agent; a claim's holder keeps
 * renewing an expiry while its wake runs). Every method returns a promise for the second.
 */
export type MarkedKind = 'message' | 'asset' | 'webhook_event';
export type ItemKind = MarkedKind | 'task';
export type ClaimPhase = 'in-flight' | 'done' | 'abandoned';

export interface ItemRef {
  timeline: string;
  kind: ItemKind;
  item: string;
}

/** What taking a claim found. `resumed`: a dead or stale wake had it in flight; this wake finishes it. */
export type ClaimOutcome = 'taken' | 'resumed' | 'held' | 'done' | 'abandoned';

// The staleness rule both stores apply, kept beside the SQLite one (which the PostgreSQL one imports).
/** An in-flight claim older than this is orphaned even if its holder still runs (FACTS.md: 6 h). */
/** See ChannelState.nextLapse. */
export interface NextLapse {
  inMs: number;
  renewalMissed: boolean;
}

export const CLAIM_STALE_MS = 6 * 3600_000;

export interface ChannelState {
  readonly kind: StoreKind;
  close(): Promise<void>;
  mark(timeline: string, kind: MarkedKind): Promise<string | undefined>;
  setMark(timeline: string, kind: MarkedKind, item: string): Promise<void>;
  hasSeen(ref: ItemRef): Promise<boolean>;
  markSeen(ref: ItemRef): Promise<void>;
  /**
   * Takes an item for wake `wake`, in one transaction (two wakes racing for it: one wins). An
   * in-flight claim is taken over only from a holder that is gone, by the store's rule (its
   * process ended; its lease lapsed), or stale (not refreshed for CLAIM_STALE_MS); a live one is `held`.
   */
  take(ref: ItemRef, wake: string): Promise<ClaimOutcome>;
  /** How many times the item was taken over from a wake that did not finish it. */
  resumes(ref: ItemRef): Promise<number>;
  /**
   * Records which turn this wake's in-flight claims are answered in (the batch's anchor), before
   * the turn begins. A wake that takes them over reads it back (`batchOf`): a dead wake's claims
   * may span several of its turns, and each must be finished as the turn the journal holds.
   */
  fixBatch(refs: readonly ItemRef[], wake: string, anchor: string): Promise<void>;
  /** The anchor `fixBatch` recorded for the item's claim; undefined when none was (its turn never began). */
  batchOf(ref: ItemRef): Promise<string | undefined>;
  phase(ref: ItemRef): Promise<ClaimPhase | undefined>;
  /** Keeps this wake's in-flight claims fresh during a long turn (so they never read as stale). */
  heartbeat(refs: readonly ItemRef[], wake: string): Promise<void>;
  /**
   * Settle this wake's claims. Each resolves to the refs that were no longer this wake's (their
   * claim lapsed and another wake took them over): nothing was settled for those.
   */
  commit(refs: readonly ItemRef[], wake: string): Promise<ItemRef[]>;
  abandon(refs: readonly ItemRef[], wake: string, reason: string): Promise<ItemRef[]>;
  /**
   * Gives back claims wake `wake` took but never worked on (its agent could not start), leaving
   * each item as the wake found it: one it took fresh is unclaimed again, one it resumed is in
   * flight for the next wake to resume, that resume not counted (nothing was tried, so nothing
   * brings the item nearer to being set aside).
   */
  giveBack(refs: readonly ItemRef[], wake: string): Promise<void>;
  /**
   * Lets go of claims wake `wake` worked on and could not finish (its turn failed or was
   * interrupted): they stay in flight, their resume count as it is, but no longer held, so the
   * next wake resumes them at once, even in this same long-lived process (a worker), where the
   * holder is alive and (PostgreSQL) would otherwise keep renewing them. `countResume: false`:
   * the turn was stopped by something outside it (the platform away), so the items' resumes are
   * put back as they were before this wake took them: an outage never sets an item aside.
   */
  letGo(refs: readonly ItemRef[], wake: string, options?: { countResume?: boolean }): Promise<void>;
  /**
   * When the first claim held on the timeline lapses unless renewed, for a wake that found it
   * busy: `inMs` from now (a dead holder's claims are taken over then), and whether its holder
   * has missed a renewal (dead, stalled, or failed and let go), judged by this store's own lease
   * (the stores of one fleet share one). Undefined where claims do not
   * lapse by time (SQLite: a claim is held while its process lives) or none is held.
   */
  nextLapse(timeline: string): Promise<NextLapse | undefined>;
  /**
   * Aborted once the store finds that wake `wake` has lost its in-flight claims (PostgreSQL: a
   * lease not renewed within its TTL, so another wake may be running the same turn); the reason
   * names the items. Never aborted on SQLite, where a live holder's claim is never taken.
   */
  claimsLost(wake: string): AbortSignal;
  /** Counts a wake on the timeline for its circuit breaker and says what the breaker did (one transaction). */
  admitWake(timeline: string, settings: BreakerSettings): Promise<BreakerAdmission>;
  /** Uncounts the wake `admitWake` counted at `atMs` (a busy wake: see retractFromBreaker). */
  retractWake(timeline: string, atMs: number): Promise<void>;
  isTripped(timeline: string): Promise<boolean>;
  /** Everything kept about a timeline (a deleted one: `acx cleanup --sweep`). */
  purge(timeline: string): Promise<void>;
  /** The timelines this agent keeps anything about. */
  timelines(): Promise<string[]>;
}
