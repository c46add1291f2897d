import { AcxError } from '../core/errors.ts';

/**
 * The leases a PostgreSQL store holds, each renewed every third of its time-to-live while held:
 * a holder that dies stops renewing, so what it held is free on any host within one TTL, while
 * a live holder renews well inside the expiry and never loses it. Used by the wake store (a
 * session's lease) and the channel state (a wake's in-flight claims).
 *
 * A holder that is alive but cannot renew (the server unreachable, the process stalled) loses
 * the lease all the same; each hold's `lost` signal tells the work it covers to stop, so two
 * holders never go on at once.
 */
/**
 * The share of the TTL after the last successful renewal at which a holder that cannot renew
 * gives the lease up: before the server lets anyone else take it (the server's expiry counts from
 * when the renewal reached it, later still). Found by the chaos run: a holder that learned of the
 * lapse only at its next renewal tick, up to a third of a TTL late, went on answering after
 * another wake had taken its work over, and both posted the same replies.
 */
const FENCE = 5 / 6;

/** A held lease is renewed every this share of its TTL. */
const RENEW_EVERY = 1 / 3;

/**
 * Whether a lease with `remainingMs` left of `ttlMs` has missed a renewal: renewed on time, it
 * never has less than the TTL less one renewal interval left. Its holder is dead, stalled, or let
 * go of it; a holder that is only late renews it again soon.
 */
export function renewalMissed(remainingMs: number, ttlMs: number): boolean {
  return remainingMs < ttlMs * (1 - RENEW_EVERY);
}

export class LeaseRenewals {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Per key, the one-shot timer that gives the lease up at its fence (see FENCE). */
  private readonly fences = new Map<string, NodeJS.Timeout>();
  /** Per key, the current hold's loss: kept once aborted, so a caller that asks late still hears it. */
  private readonly losses = new Map<string, AbortController>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  /** `now`: a monotonic clock in milliseconds (default performance.now), for how long since the last renewal. */
  constructor(ttlMs: number, now: () => number = () => performance.now()) {
    this.ttlMs = ttlMs;
    this.now = now;
  }

  /**
   * Renews the lease `key` until stopped, as a new hold with a new `lost` signal. `renew`
   * resolves false when the lease is gone (it lapsed and another holder took it): renewing stops,
   * `onLost` is told and says what was lost, and the signal aborts with a `lease-lost` error of
   * that message. A renewal that fails (the server unreachable) is retried at the next tick, but
   * once FENCE of a TTL has passed since the last one that succeeded the lease is given up: it
   * is about to lapse on the server and be someone else's, and this holder must have stopped by
   * then, without waiting to hear so from a server that cannot be reached (or a renewal that never
   * answers).
   */
  keep(key: string, renew: () => Promise<boolean>, onLost: () => string): void {
    this.stop(key);
    const loss = new AbortController();
    let renewedAt = this.now();
    const fenceMs = this.ttlMs * FENCE;
    const lost = () => {
      if (this.timers.get(key) !== timer) return;
      clearInterval(timer);
      clearTimeout(this.fences.get(key));
      this.timers.delete(key);
      this.fences.delete(key);
      loss.abort(
        new AcxError('lease-lost', onLost(), {
          hint: 'Another holder may have taken it over and answers what it held from the journal; check why renewals failed (the server unreachable, or this process stalled).',
        }),
      );
    };
    // Armed for the fence after each success; on firing it looks at the clock again (a success
    // may have come since), so the renewal ticks need not line up with the fence.
    const armFence = () => {
      clearTimeout(this.fences.get(key));
      const fence = setTimeout(() => (this.now() - renewedAt >= fenceMs ? lost() : armFence()), Math.max(1, renewedAt + fenceMs - this.now()));
      fence.unref();
      this.fences.set(key, fence);
    };
    const timer = setInterval(() => {
      const triedAt = this.now();
      // Checked at every tick as well: a renewal that hangs (no answer, no error) must not hide the lapse.
      if (triedAt - renewedAt >= fenceMs) return lost();
      renew().then(
        (held) => {
          if (!held) return lost();
          if (this.timers.get(key) !== timer) return;
          renewedAt = Math.max(renewedAt, triedAt);
          armFence();
        },
        () => {
          if (this.now() - renewedAt >= fenceMs) lost();
        },
      );
    }, Math.max(10, Math.floor(this.ttlMs * RENEW_EVERY)));
    // The renewal alone never keeps a process alive: a wake that is done exits.
    timer.unref();
    this.timers.set(key, timer);
    this.losses.set(key, loss);
    armFence();
  }

  /**
   * Aborted once the current hold of `key` is lost (see `keep`), with the `lease-lost` error as
   * its reason. A key not held (never kept, or given back) has a signal that never aborts: a
   * lease given back is not lost.
   */
  lost(key: string): AbortSignal {
    return (this.losses.get(key) ?? new AbortController()).signal;
  }

  /** The lease is given back: no more renewals, and its hold can no longer be lost. */
  stop(key: string): void {
    clearInterval(this.timers.get(key));
    clearTimeout(this.fences.get(key));
    this.timers.delete(key);
    this.fences.delete(key);
    this.losses.delete(key);
  }

  stopAll(): void {
    for (const timer of this.timers.values()) clearInterval(timer);
    for (const fence of this.fences.values()) clearTimeout(fence);
    this.timers.clear();
    this.fences.clear();
    this.losses.clear();
  }
}
