import type { BreakerSettings } from './breaker.ts';
import type { StoreKind } from './journal-store.ts';
import type { LeaseHolder } from './lease-holder.ts';

export type { BreakerChange, BreakerSettings } from './breaker.ts';
export { currentHolder, holderIsAlive, type LeaseHolder } from './lease-holder.ts';

/**
 * What wake mode keeps between its per-event processes, beside the journal: the inbox of events
 * per session (each recorded once by its id, pending until its turn completed), the session's
 * lease (which live wake is answering it), and the circuit breaker's record of recent wakes.
 *
 * Everything a wake decides on arrival happens in one write transaction (`admit`), and a wake
 * gives the lease back only in a transaction that finds no pending event (`release`): so an
 * event that arrives while another wake is busy is either seen by that wake or finds the lease
 * free — it is never left behind.
 */
export interface WakeEvent {
  id: string;
  text: string;
  /** Who wrote it (a handle, shown to the model with the message). */
  sender?: string | undefined;
  /** A peer AI's message is read at human speed before it is answered (read-speed pacing). */
  senderKind?: 'human' | 'ai' | undefined;
  /** Whether the message calls for a reply (default true); arms the reply nudge in tool speech mode. */
  addressed?: boolean | undefined;
  /** The agent's own message, routed back to it: recorded, never answered. */
  own?: boolean | undefined;
}

export interface InboxItem {
  sessionId: string;
  eventId: string;
  seq: number;
  text: string;
  sender: string | null;
  senderKind: 'human' | 'ai' | null;
  /** The batch (one turn) the event is answered in, once a wake has fixed it: the first event's id. */
  batchId: string | null;
  /** The build of the batch's turn the event joined (1, or more once late messages were folded in). */
  build: number;
  addressed: boolean;
  state: 'pending' | 'done' | 'failed';
  attempts: number;
  receivedAt: string;
  doneAt: string | null;
  reply: string | null;
  error: string | null;
}

export type Admission =
  | { kind: 'leader'; eventIsNew: boolean; breaker: 'reset' | 'none' }
  /** A live wake holds the session: the event waits in the inbox for it, and this wake is not counted by the breaker. */
  | { kind: 'busy'; eventIsNew: boolean; holder: LeaseHolder; breaker: 'none' }
  | { kind: 'declined'; eventIsNew: boolean; wakesInWindow: number; breaker: 'tripped' | 'still-tripped' };

/**
 * The wake store as wake mode sees it: every call returns a promise, so the same wake runs on
 * the embedded SQLite file beside the journal or on a PostgreSQL server shared by many hosts.
 * Each implementation keeps the two guarantees above in its own way (see their `admit` and
 * `release`), and decides whether a lease holder is alive by its own rule: a pid and start time
 * on one host (SQLite), an expiry the holder keeps renewing (PostgreSQL).
 */
/**
 * The open batch among a session's pending events (as `pending` returns them, oldest first): the
 * events of the batch the oldest batched one belongs to, or undefined when none is batched.
 */
export function openBatchIn(pending: readonly InboxItem[]): InboxItem[] | undefined {
  const batchId = pending.find((item) => item.batchId !== null)?.batchId;
  return batchId === undefined ? undefined : pending.filter((item) => item.batchId === batchId);
}

export interface WakeStore {
  readonly kind: StoreKind;
  close(): Promise<void>;
  /**
   * A wake arrives: record its event (once per id), and unless a live wake holds the session's
   * lease (busy: that wake answers the event), count the wake for the circuit breaker and take
   * the lease. A busy wake is never counted: events arriving during one long turn, each retried
   * by the worker, are not a wake storm and must not trip the breaker. One transaction.
   */
  admit(sessionId: string, event: WakeEvent | undefined, breaker: BreakerSettings, holder?: LeaseHolder, nowMs?: number): Promise<Admission>;
  isTripped(sessionId: string): Promise<boolean>;
  /** The oldest event of the session still waiting for its turn to complete. */
  nextPending(sessionId: string): Promise<InboxItem | undefined>;
  /** Every event of the session still waiting, oldest first. */
  pending(sessionId: string): Promise<InboxItem[]>;
  /**
   * The events of a batch fixed by an earlier wake whose turn has not completed (it died or
   * failed mid-turn): they are answered together again, in the same turn. (`openBatchIn` finds
   * the same among events already read with `pending`.)
   */
  openBatch(sessionId: string): Promise<InboxItem[] | undefined>;
  /** Fixes which events one turn answers, before the turn starts; the batch id is the first event's. */
  fixBatch(sessionId: string, eventIds: readonly string[]): Promise<string>;
  /**
   * Folds events that arrived while a batch's turn was generating into the batch, as its next
   * build (one transaction); returns that build's number. Only events in no batch yet are taken.
   */
  growBatch(sessionId: string, batchId: string, eventIds: readonly string[]): Promise<number>;
  item(sessionId: string, eventId: string): Promise<InboxItem | undefined>;
  items(sessionId: string): Promise<InboxItem[]>;
  /** Counts an attempt before the events' turn runs, so a message that always fails is noticed; returns the most any has had. */
  markAttempt(sessionId: string, eventIds: readonly string[]): Promise<number>;
  markDone(sessionId: string, eventIds: readonly string[], reply: string): Promise<void>;
  /** Gives up on events after too many failed attempts: kept for inspection, no longer blocking the inbox. */
  markFailed(sessionId: string, eventIds: readonly string[], error: string): Promise<void>;
  /** Errors are stored scrubbed: one can quote a provider's reply, which can echo the key it was sent. */
  recordError(sessionId: string, eventIds: readonly string[], error: string): Promise<void>;
  /**
   * Gives the lease back, unless an event arrived meanwhile: then the lease is kept and false
   * returned, and the caller answers it (the wake that recorded it saw the lease held).
   */
  release(sessionId: string, holder?: LeaseHolder): Promise<boolean>;
  /** Gives the lease back whatever is pending (after a failure): the next wake picks the events up. */
  abandon(sessionId: string, holder?: LeaseHolder): Promise<void>;
  /**
   * Aborted once the lease the last leading `admit` took is lost — it lapsed unrenewed, so
   * another wake may be answering the session — with a `lease-lost` error as its reason. The wake
   * stops its turn then and leaves its batch pending for that wake. Never aborts once given back.
   */
  leaseLost(sessionId: string): AbortSignal;
  /** Who holds the session's lease, if that holder is alive by this store's rule. */
  liveLeaseHolder(sessionId: string): Promise<LeaseHolder | undefined>;
  /** Every session wake mode knows, with when it last received an event. */
  sessions(): Promise<Array<{ sessionId: string; lastEventAt: string | null }>>;
  deleteSession(sessionId: string): Promise<void>;
}
