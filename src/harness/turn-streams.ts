import { dirname, join } from 'node:path';
import type { TurnStreamKey, TurnStreamStore } from '../store/turn-streams.ts';
import { createLogger, type Logger } from '../util/logger.ts';

/**
 * Where a HarnessAgent keeps its streamed turns, and how: the store (SQLite beside the engine's
 * journal by default, PostgreSQL when the journal is there), how long a finished turn's parts are
 * kept, and how often a reader in another process looks for new ones. See stream-recorder.ts for
 * the writing side and stream-reader.ts for the reading side.
 */
export interface TurnStreamSettings {
  /**
   * The store (open one with `openTurnStreamStore`; you close it). Default: the harness's own —
   * the engine harness keeps `streams.db` beside its journal, or uses its PostgreSQL store.
   */
  store?: TurnStreamStore;
  /** How long the parts of a finished turn are kept for readers, then pruned (default 10 minutes). */
  keepFinishedMs?: number;
  /**
   * How often a reader looks for parts written by another process (default 100 ms); a writer in
   * the reader's own process wakes it at once. Each look is two indexed reads.
   */
  pollMs?: number;
  /** Where a stream that cannot be kept is reported (default: acx's logger, warnings on stderr). */
  logger?: Logger;
}

export const DEFAULT_KEEP_FINISHED_MS = 10 * 60_000;
export const DEFAULT_STREAM_POLL_MS = 100;
/** Pruning runs when a stream finishes, at most this often per process. */
const PRUNE_EVERY_MS = 60_000;

/** The SQLite streams file that sits beside a journal file (in memory beside an in-memory journal). */
export function streamsPathBeside(journalPath: string): string {
  return journalPath === ':memory:' ? ':memory:' : join(dirname(journalPath), 'streams.db');
}

/**
 * One agent's kept streams: the store (opened when first needed: an agent that never streams
 * never opens it), its settings, and the wake-ups between writer and readers of this process.
 */
export class TurnStreams {
  readonly keepFinishedMs: number;
  readonly pollMs: number;
  readonly logger: Logger;
  private readonly open: () => Promise<TurnStreamStore> | undefined;
  private store: Promise<TurnStreamStore | undefined> | undefined;
  private readonly waiting = new Map<string, Set<() => void>>();
  private prunedAt = 0;

  /** `open` gives the store, or undefined when there is none after all (a harness on a journal store of the caller's). */
  constructor(open: () => Promise<TurnStreamStore> | undefined, settings: Omit<TurnStreamSettings, 'store'> = {}) {
    this.open = open;
    this.keepFinishedMs = settings.keepFinishedMs ?? DEFAULT_KEEP_FINISHED_MS;
    this.pollMs = settings.pollMs ?? DEFAULT_STREAM_POLL_MS;
    this.logger = settings.logger ?? createLogger();
  }

  /** The store, opened on the first call; undefined when there is none. */
  opened(): Promise<TurnStreamStore | undefined> {
    return (this.store ??= Promise.resolve(this.open()));
  }

  /** Wakes this process's readers of the stream: parts were written to it. */
  written(key: TurnStreamKey): void {
    const waiters = this.waiting.get(keyOf(key));
    if (!waiters) return;
    this.waiting.delete(keyOf(key));
    for (const wake of waiters) wake();
  }

  /** Resolves when this process writes to the stream, after `pollMs` (another process may have), or when `signal` aborts. */
  nextWrite(key: TurnStreamKey, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const id = keyOf(key);
      const waiters = this.waiting.get(id) ?? new Set();
      this.waiting.set(id, waiters);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiting.get(id) === waiters) this.waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(done, this.pollMs);
      signal.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }

  /** Prunes finished streams past their keep, at most once a minute per process; a failure is only reported. */
  prune(): void {
    if (Date.now() - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = Date.now();
    void this.opened().then((store) => store?.prune(this.keepFinishedMs)).catch((error: unknown) => this.logger.warn('stream prune failed', { error: String(error) }));
  }
}

const keyOf = (key: TurnStreamKey) => `${key.sessionId.length}:${key.sessionId}/${key.turnId}`;
