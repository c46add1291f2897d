import { randomUUID } from 'node:crypto';
import type { HarnessStreamPart } from '../engine/events.ts';
import type { TurnStreamKey, TurnStreamStore } from '../store/turn-streams.ts';
import { encodePart } from './stream-entries.ts';
import type { TurnStreams } from './turn-streams.ts';

/** Parts are written in batches, this long after the first of a batch: a reply streamed token by token is not a write per token. */
const FLUSH_MS = 20;

interface Writing {
  key: TurnStreamKey;
  writer: string;
}

/**
 * Keeps one streamed call's parts, by turn: each `start` part names the turn the parts after it
 * belong to (a call may first finish a turn a crash interrupted, then run the new message's), and
 * opens that turn's stream with a writer of its own; the call's end writes what is left and
 * finishes it. A turn continued later (its approvals answered) is opened again and numbered on.
 *
 * Keeping the stream never fails the turn: a store that fails is reported and this call keeps no
 * more; a stream another writer took over (this process was thought gone) gets nothing more from
 * this one.
 */
export class StreamRecorder {
  private readonly streams: TurnStreams;
  private current: Writing | undefined;
  private pending: string[] = [];
  /** The store's work, one step after another, so the stream's parts are written in order. */
  private work: Promise<void> = Promise.resolve();
  private flushTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(streams: TurnStreams) {
    this.streams = streams;
  }

  push(part: HarnessStreamPart): void {
    if (this.stopped) return;
    if (part.type === 'start' && (part.turnId !== this.current?.key.turnId || part.sessionId !== this.current.key.sessionId)) {
      this.begin({ sessionId: part.sessionId, turnId: part.turnId });
    }
    // Nothing before a turn's start is the turn's (a refusal before any turn runs is the caller's alone).
    if (!this.current) return;
    this.pending.push(encodePart(part));
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** The call has ended (with `error` when it failed, which the stream ends with): writes the rest and finishes the stream. */
  async end(error?: unknown): Promise<void> {
    if (error !== undefined && this.current && !this.stopped) this.pending.push(encodePart({ type: 'error', error }));
    this.close();
    await this.work;
    this.streams.prune();
  }

  private begin(key: TurnStreamKey): void {
    this.close();
    const writing = { key, writer: randomUUID() };
    this.current = writing;
    this.step(async (store) => {
      await store.open(key, writing.writer);
      this.keepAlive(store, writing);
    });
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const writing = this.current;
    const bodies = this.pending;
    this.pending = [];
    if (!writing || bodies.length === 0) return;
    this.step(async (store) => {
      if (await store.append(writing.key, writing.writer, bodies)) this.streams.written(writing.key);
      else this.takenOver(writing);
    });
  }

  /** Writes what is left of the current turn's parts and finishes its stream. */
  private close(): void {
    this.flush();
    clearInterval(this.renewTimer);
    const writing = this.current;
    this.current = undefined;
    if (!writing) return;
    this.step(async (store) => {
      await store.finish(writing.key, writing.writer);
      this.streams.written(writing.key);
    });
  }

  /** Where writers live by expiry (PostgreSQL), renews this one while it writes. */
  private keepAlive(store: TurnStreamStore, writing: Writing): void {
    if (store.renewEveryMs === undefined || this.current !== writing) return;
    this.renewTimer = setInterval(() => {
      store.renew(writing.key, writing.writer).then(
        (held) => {
          if (!held && this.current === writing) this.takenOver(writing);
        },
        () => {}, // the next renewal (or append) tries again; a writer that cannot renew for a whole expiry is replaced
      );
    }, store.renewEveryMs);
    this.renewTimer.unref();
  }

  private step(fn: (store: TurnStreamStore) => Promise<void>): void {
    this.work = this.work
      .then(async () => {
        if (this.stopped) return;
        const store = await this.streams.opened();
        if (store) await fn(store);
        else this.stop(); // nowhere to keep them after all
      })
      .catch((error: unknown) => this.fail(error));
  }

  private takenOver(writing: Writing): void {
    this.streams.logger.warn('turn stream taken over', { session: writing.key.sessionId, turn: writing.key.turnId, reason: 'another process took the stream up as if this one were gone; this call keeps no more of it' });
    this.stop();
  }

  /** The store failed: report it, keep no more, and end the stream if the store still can (its readers would wait on it). */
  private fail(error: unknown): void {
    const writing = this.current;
    this.streams.logger.warn('turn stream not kept', { ...(writing ? { session: writing.key.sessionId, turn: writing.key.turnId } : {}), error: error instanceof Error ? error.message : String(error) });
    this.stop();
    if (writing) void this.streams.opened().then((store) => store?.finish(writing.key, writing.writer)).catch(() => {});
  }

  private stop(): void {
    this.stopped = true;
    clearTimeout(this.flushTimer);
    clearInterval(this.renewTimer);
    this.pending = [];
  }
}
