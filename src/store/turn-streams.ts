import type { StoreKind } from './journal-store.ts';
import { SqliteTurnStreamStore } from './sqlite-turn-streams.ts';
import { DEFAULT_AGENT_ID, storeKindOf } from './store-url.ts';

/**
 * A turn's stream, kept so that a reader in any process can read it again: what a streamed turn
 * sent, part by part, in order, while it runs and for a while after. A client that dropped,
 * reloaded or reconnected to another server reads every part again and then follows the live rest.
 *
 * A stream has one writer at a time, named by a token. Parts are numbered by the store, in the
 * order they were appended, from 0, and a turn taken up again (its approvals answered, or a
 * crashed run taken over) goes on with the next number, so a reader's place is one number. A
 * writer that is gone (its process died) can be replaced by `takeOver`, which exactly one caller
 * wins; from then on the old writer's appends are refused, so two writers never interleave.
 */
export interface TurnStreamKey {
  sessionId: string;
  turnId: string;
}

export type TurnStreamStatus = 'open' | 'done';

export interface TurnStreamInfo extends TurnStreamKey {
  status: TurnStreamStatus;
  writer: string;
  /**
   * Whether the writer may still be writing. SQLite (one host): its process still runs.
   * PostgreSQL (any host): its expiry, which it renews while it writes, has not passed.
   */
  writerAlive: boolean;
  /** How many parts the stream holds: the next part's number. */
  parts: number;
}

export interface TurnStreamPart {
  seq: number;
  /** The part as its writer serialized it (JSON). */
  body: string;
}

export interface TurnStreamStore {
  readonly kind: StoreKind;
  /**
   * How often a writer must `renew` to stay alive (PostgreSQL, whose writers live by expiry);
   * undefined where liveness is the writer's process (SQLite).
   */
  readonly renewEveryMs: number | undefined;
  /**
   * Opens the turn's stream with `writer` as its writer: a new stream, or the turn's stream again
   * (open or done), its parts kept and numbered on. Whoever wrote before can append no more.
   */
  open(key: TurnStreamKey, writer: string): Promise<void>;
  /** Appends parts, in order, as `writer`. False (nothing written) when the stream is not open with this writer. */
  append(key: TurnStreamKey, writer: string, bodies: readonly string[]): Promise<boolean>;
  /** Keeps `writer` alive (see renewEveryMs). False when the stream is no longer open with this writer. */
  renew(key: TurnStreamKey, writer: string): Promise<boolean>;
  /** Ends the stream, if `writer` still writes it; its parts are kept until pruned. */
  finish(key: TurnStreamKey, writer: string): Promise<void>;
  /** Makes `writer` the writer of an open stream whose writer is gone; true for exactly one caller. */
  takeOver(key: TurnStreamKey, writer: string): Promise<boolean>;
  info(key: TurnStreamKey): Promise<TurnStreamInfo | undefined>;
  /** The session's open stream most recently written, if any. */
  active(sessionId: string): Promise<TurnStreamInfo | undefined>;
  /** Parts numbered after `afterSeq` (-1: from the first), in order, at most `limit`. */
  parts(key: TurnStreamKey, afterSeq: number, limit: number): Promise<TurnStreamPart[]>;
  /**
   * Removes streams done more than `keepFinishedMs` ago, and open streams whose writer is gone
   * and that nothing has written to for as long (a turn nobody took up); returns how many.
   */
  prune(keepFinishedMs: number): Promise<number>;
  deleteSession(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A turn stream store for a location: a postgres:// URL (the PostgreSQL store, for `agentId`'s
 * streams; its driver loaded only then) or a SQLite file path. The caller closes it.
 */
export async function openTurnStreamStore(location: string, options: { agentId?: string; writerTtlMs?: number } = {}): Promise<TurnStreamStore> {
  if (location.includes('://') && storeKindOf(location) === 'postgres') {
    const { PostgresTurnStreamStore } = await import('./postgres-turn-streams.ts');
    return new PostgresTurnStreamStore(location, { agentId: options.agentId ?? DEFAULT_AGENT_ID, ...(options.writerTtlMs !== undefined ? { writerTtlMs: options.writerTtlMs } : {}) });
  }
  return new SqliteTurnStreamStore(location);
}
