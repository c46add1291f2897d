import { createHmac } from 'node:crypto';
import type { Database } from '../store/database.ts';
import type { Logger } from '../util/logger.ts';
import { nowIso } from './ids.ts';

/**
 * Sends the delivery outbox: each row is POSTed to its subscriber with
 * `X-BaseCradle-Event`, `X-BaseCradle-Delivery` (the delivery's own uuid, the same on every
 * retry, so a receiver can dedupe) and `X-BaseCradle-Signature: sha256=<hex HMAC-SHA256 of the
 * raw body>`, keyed by the recipient's own signing key or the shared one. A 2xx answer
 * delivers it; anything else, or no answer, is tried again with exponential backoff until
 * `maxAttempts`, then the row is marked failed. Rows survive a restart: the outbox is the
 * database, and a new deliverer picks up whatever is still pending.
 */
export interface DeliveryRow {
  uuid: string;
  event: string;
  timeline_uuid: string;
  recipient_uuid: string;
  target_url: string;
  body: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_ms: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface DelivererOptions {
  /** The key a delivery to this recipient is signed with; undefined when there is none. */
  signingKey(recipientUuid: string): string | undefined;
  logger: Logger;
  maxAttempts?: number;
  /** The first retry waits this long; each later one twice as long, up to maxBackoffMs. */
  retryBaseMs?: number;
  maxBackoffMs?: number;
  timeoutMs?: number;
  concurrency?: number;
}

export function signBody(key: string, body: string): string {
  return `sha256=${createHmac('sha256', key).update(body, 'utf8').digest('hex')}`;
}

/** How long sending pauses after the outbox could not be written. */
const RECORD_RETRY_MS = 5_000;

export class Deliverer {
  private readonly inFlight = new Set<string>();
  private readonly sending = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** No sends before this (ms): the outbox could not be written (a full disk), so what is sent now could not be recorded either. */
  private pausedUntil = 0;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly maxBackoffMs: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;

  private readonly db: Database;
  private readonly options: DelivererOptions;

  constructor(db: Database, options: DelivererOptions) {
    this.db = db;
    this.options = options;
    this.maxAttempts = options.maxAttempts ?? 10;
    this.retryBaseMs = options.retryBaseMs ?? 1000;
    this.maxBackoffMs = options.maxBackoffMs ?? 60_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.concurrency = options.concurrency ?? 4;
  }

  /** Looks at the outbox now (after a commit that added to it, or at start). */
  kick(): void {
    if (this.stopped) return;
    const paused = this.pausedUntil - Date.now();
    if (paused > 0) {
      this.arm(paused);
      return;
    }
    const room = this.concurrency - this.inFlight.size;
    if (room > 0) {
      const due = this.db
        .prepare("SELECT * FROM deliveries WHERE state = 'pending' AND next_attempt_ms <= ? ORDER BY next_attempt_ms, uuid LIMIT ?")
        .all(Date.now(), room + this.inFlight.size) as unknown as DeliveryRow[];
      for (const row of due) {
        if (this.inFlight.size >= this.concurrency) break;
        if (this.inFlight.has(row.uuid)) continue;
        this.inFlight.add(row.uuid);
        const sent: Promise<void> = this.send(row).catch((failure: unknown) => this.notRecorded(row, failure)).finally(() => {
          this.inFlight.delete(row.uuid);
          this.sending.delete(sent);
          this.kick();
        });
        this.sending.add(sent);
      }
    }
    this.schedule();
  }

  /** Stops sending; waits for the requests on the wire to finish and be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.sending]);
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    const next = this.db.prepare("SELECT min(next_attempt_ms) AS at FROM deliveries WHERE state = 'pending'").get() as { at: number | null };
    if (next.at !== null) this.arm(next.at - Date.now());
  }

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), Math.min(Math.max(ms, 10), 60_000));
    this.timer.unref();
  }

  private async send(row: DeliveryRow): Promise<void> {
    const attempt = row.attempts + 1;
    const key = this.options.signingKey(row.recipient_uuid);
    const fields = { delivery: row.uuid, event: row.event, recipient: row.recipient_uuid, timeline: row.timeline_uuid, attempt };
    if (key === undefined) {
      // Never sent unsigned: a receiver could not tell it from a forgery.
      this.finish(row, attempt, 'failed', null, 'no signing key for this recipient');
      this.options.logger.error('delivery failed', { ...fields, reason: 'no signing key (set ACX_PLATFORM_WEBHOOK_SECRET, or one for this agent)' });
      return;
    }
    let status: number | null = null;
    let error: string | null = null;
    try {
      const response = await fetch(row.target_url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'acx-platform',
          'x-basecradle-event': row.event,
          'x-basecradle-delivery': row.uuid,
          'x-basecradle-signature': signBody(key, row.body),
        },
        body: row.body,
      });
      status = response.status;
      await response.body?.cancel();
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (caught) {
      error = (caught as Error).name === 'TimeoutError' ? `no answer in ${this.timeoutMs} ms` : (caught as Error).message;
    }
    if (this.stopped && error !== null) return; // shutting down: leave it pending for the next start
    if (error === null) {
      this.finish(row, attempt, 'delivered', status, null);
      this.options.logger.info('delivery sent', { ...fields, status });
    } else if (attempt >= this.maxAttempts) {
      this.finish(row, attempt, 'failed', status, error);
      this.options.logger.error('delivery failed', { ...fields, status: status ?? undefined, error, reason: `gave up after ${attempt} attempts` });
    } else {
      const wait = Math.min(this.retryBaseMs * 2 ** (attempt - 1), this.maxBackoffMs);
      this.db
        .prepare('UPDATE deliveries SET attempts = ?, next_attempt_ms = ?, last_status = ?, last_error = ? WHERE uuid = ?')
        .run(attempt, Date.now() + wait, status, error, row.uuid);
      this.options.logger.warn('delivery retry', { ...fields, status: status ?? undefined, error, retry_in_ms: wait });
    }
  }

  /**
   * What a send could not write to the outbox (found by the chaos run's full disk: thrown from
   * here, the process ended). The row stays as it was, pending, and sending pauses a while: it
   * is sent again once the outbox can be written, and a receiver that already took it sees the
   * same X-BaseCradle-Delivery again, which it dedups.
   */
  private notRecorded(row: DeliveryRow, failure: unknown): void {
    this.pausedUntil = Date.now() + RECORD_RETRY_MS;
    this.options.logger.error('delivery not recorded', {
      delivery: row.uuid,
      event: row.event,
      timeline: row.timeline_uuid,
      error: (failure as Error).message,
      note: 'sent again once the outbox can be written',
      retry_in_ms: RECORD_RETRY_MS,
    });
  }

  private finish(row: DeliveryRow, attempt: number, state: 'delivered' | 'failed', status: number | null, error: string | null): void {
    this.db
      .prepare('UPDATE deliveries SET state = ?, attempts = ?, last_status = ?, last_error = ?, delivered_at = ? WHERE uuid = ?')
      .run(state, attempt, status, error, state === 'delivered' ? nowIso() : null, row.uuid);
  }
}

/** How many deliveries to a recipient have failed for good (the dashboard's integration_failure_count). */
export function failedDeliveries(db: Database, recipientUuid: string): number {
  return (db.prepare("SELECT count(*) AS n FROM deliveries WHERE recipient_uuid = ? AND state = 'failed'").get(recipientUuid) as { n: number }).n;
}
