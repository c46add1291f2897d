import { randomUUID } from 'node:crypto';
import { AcxError } from '../core/errors.ts';
import type { SessionLeases } from '../store/journal-store.ts';
import type { Logger } from '../util/logger.ts';

/**
 * One turn per session at a time across replicas: a call takes the session's lease before it
 * touches the session, renews it while it runs, and lets go at the end. A second call waits up to
 * `waitMs` for the lease, then fails with `session-busy`.
 */
export interface SessionLeaseSettings {
  /** How long a second call on a busy session waits before `session-busy` (default 30 s). */
  waitMs?: number;
  /** How long a lease lasts unrenewed: a dead holder's session is free after this (default 15 s, inside the wait). */
  ttlMs?: number;
}

const DEFAULT_WAIT_MS = 30_000;
const DEFAULT_TTL_MS = 15_000;
const POLL_MS = 100;

export async function holdSession<T>(
  leases: SessionLeases,
  sessionId: string,
  settings: SessionLeaseSettings,
  logger: Logger,
  fn: () => Promise<T>,
): Promise<T> {
  const ttlMs = settings.ttlMs ?? DEFAULT_TTL_MS;
  const waitMs = settings.waitMs ?? DEFAULT_WAIT_MS;
  const holder = randomUUID();
  const deadline = Date.now() + waitMs;
  while (!(await leases.take(sessionId, holder, ttlMs))) {
    if (Date.now() >= deadline) {
      throw new AcxError('session-busy', `Session ${sessionId} is running a turn elsewhere (another call or replica); waited ${Math.round(waitMs / 1000)} s for it.`, {
        hint: 'Retry once that turn has ended, or raise sessionLease.waitMs to wait longer.',
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
  // Renewed well inside the expiry, so a live holder's lease never lapses between renewals.
  const renewal = setInterval(() => {
    leases.renew(sessionId, holder, ttlMs).then(
      (held) => {
        if (!held) logger.error('session lease lost', { session: sessionId, reason: 'not renewed in time; another holder may run this session' });
      },
      (error: unknown) => logger.warn('session lease renewal failed', { session: sessionId, error: (error as Error).message }),
    );
  }, Math.max(10, Math.floor(ttlMs / 3)));
  try {
    return await fn();
  } finally {
    clearInterval(renewal);
    await leases.release(sessionId, holder).catch(() => {});
  }
}
