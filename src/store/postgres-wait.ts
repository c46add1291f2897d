import pg from 'pg';
import { errorMessage, someCause } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import { redactUrl } from './store-url.ts';

/**
 * Failures that say the server is not there yet (not started, restarting, in recovery), as opposed
 * to answers about the request (a wrong password, no such database), which waiting never fixes.
 */
const NOT_THERE_YET = new Set([
  'ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN',
  // A query written to a connection the server closed as it stopped (found by the chaos run: a
  // job failed so was not waited for, and sat active until its heartbeat lapsed).
  'EPIPE', 'ECONNABORTED',
  '57P03', '57P01', '57P02',
]);

/** Whether `error`, or an error it was caused by (acx wraps the driver's), says the server is not there yet. */
export function serverNotThereYet(error: unknown): boolean {
  return someCause(error, (at) => {
    const code = (at as { code?: unknown }).code;
    return (typeof code === 'string' && NOT_THERE_YET.has(code)) || /Connection terminated/i.test(errorMessage(at));
  });
}

/**
 * Runs `attempt`, and again (backed off from 100 ms up to 2 s) while it fails because the server
 * is not there yet, for at most `maxWaitMs`; any other failure, or the last one, is thrown. For a
 * write that is worth landing late but not worth a process's start-up wait.
 */
export async function whileServerAway<T>(attempt: () => Promise<T>, maxWaitMs: number): Promise<T> {
  const deadline = Date.now() + maxWaitMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await attempt();
    } catch (error) {
      if (!serverNotThereYet(error) || Date.now() + delay > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

export interface WaitForPostgresOptions {
  /** Give up after this long (default 5 minutes); the caller's own error then says what to check. */
  maxWaitMs?: number;
  /** Between tries: doubled from `firstDelayMs` (default 250 ms) up to `maxDelayMs` (default 1 s). */
  firstDelayMs?: number;
  maxDelayMs?: number;
  signal?: AbortSignal;
}

/**
 * Waits until the server at `url` accepts a connection, for a long-running process (a router, a
 * worker) started while PostgreSQL is down or restarting: found by the chaos fleet, such a process
 * exited at once and stayed down until someone restarted it. Says so once when it starts waiting
 * and once when the server is back. Returns as soon as a failure is not one that waiting fixes
 * (the caller's open then reports it), or when `maxWaitMs` has passed.
 */
export async function waitForPostgres(url: string, logger: Logger, options: WaitForPostgresOptions = {}): Promise<void> {
  const deadline = Date.now() + (options.maxWaitMs ?? 300_000);
  let delay = options.firstDelayMs ?? 250;
  let waitedSince: number | undefined;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end().catch(() => {});
      if (waitedSince !== undefined) logger.info('postgres reachable', { url: redactUrl(url), waited: `${((Date.now() - waitedSince) / 1000).toFixed(1)}s` });
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (!serverNotThereYet(error) || Date.now() + delay > deadline || options.signal?.aborted) return;
      if (waitedSince === undefined) {
        waitedSince = Date.now();
        logger.warn('postgres not reachable yet', { url: redactUrl(url), error: errorMessage(error), note: 'waiting for it to accept connections' });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = nextWaitDelay(delay, options.maxDelayMs);
  }
}

/**
 * The wait before the next try: doubled, up to `maxDelayMs`, by default a second. A refused
 * connection costs next to nothing, and a process waiting for its server has work waiting on it
 * (found by the chaos run: a router restarted during an outage, on a 5 s cap, came back up to 5 s
 * after the server did, and every delivery with it).
 */
export function nextWaitDelay(delayMs: number, maxDelayMs = DEFAULT_MAX_WAIT_DELAY_MS): number {
  return Math.min(delayMs * 2, maxDelayMs);
}

const DEFAULT_MAX_WAIT_DELAY_MS = 1000;
