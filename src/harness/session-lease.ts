import { randomUUID } from 'node:crypto';
import { AcxError } from '../core/errors.ts';
import type { SessionLeases } from '../store/journal-store.ts';
import { currentHolder } from '../store/lease-holder.ts';
import { LeaseRenewals } from '../store/lease-renewals.ts';
import type { Logger } from '../util/logger.ts';

/**
 * One turn per session at a time across replicas: a call takes the session's lease before it
 * touches the session, renews it while it runs, and lets go at the end. A second call waits up to
 * `waitMs` for the lease, then fails with `session-busy`. A call whose lease is lost (see below)
 * fails with `lease-lost`, its turn left in the journal for whoever holds the session next.
 */
export interface SessionLeaseSettings {
  /** How long a second call on a busy session waits before `session-busy` (default 30 s). */
  waitMs?: number;
  /** How long a lease lasts unrenewed: a dead holder's session is free after this (default 15 s, inside the wait); at once for a holder that exited on this machine. */
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
  fn: (leaseLost: AbortSignal) => Promise<T>,
): Promise<T> {
  const ttlMs = settings.ttlMs ?? DEFAULT_TTL_MS;
  const waitMs = settings.waitMs ?? DEFAULT_WAIT_MS;
  // This call, with its process: a holder that exited on this machine is taken over at once, not a
  // TTL later (the store's recordedHolderGone).
  const holder = JSON.stringify({ call: randomUUID(), ...currentHolder() });
  const deadline = Date.now() + waitMs;
  while (!(await leases.take(sessionId, holder, ttlMs))) {
    if (Date.now() >= deadline) {
      throw new AcxError('session-busy', `Session ${sessionId} is running a turn elsewhere (another call or replica); waited ${Math.round(waitMs / 1000)} s for it.`, {
        hint: 'Retry once that turn has ended, or raise sessionLease.waitMs to wait longer.',
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
  // Renewed well inside the expiry, so a live holder's lease never lapses between renewals. A
  // holder that cannot renew for a whole TTL (the server unreachable, the process stalled) may
  // have been taken over by another replica: its call is told to stop (the signal fn gets), so two
  // turns of the session never go on at once, and it fails with that loss, not as cancelled.
  const renewals = new LeaseRenewals(ttlMs);
  renewals.keep(
    sessionId,
    () => leases.renew(sessionId, holder, ttlMs),
    () => {
      logger.error('session lease lost', { session: sessionId, reason: 'not renewed in time; another holder may run this session' });
      return `the lease on session ${sessionId} lapsed unrenewed, so another call or replica may be running it now; this call's turn was stopped`;
    },
  );
  const lost = renewals.lost(sessionId);
  try {
    return await fn(lost);
  } catch (error) {
    throw lost.aborted ? lost.reason : error;
  } finally {
    renewals.stop(sessionId);
    await leases.release(sessionId, holder).catch(() => {});
  }
}
