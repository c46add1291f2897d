/**
 * The leases a PostgreSQL store holds, each renewed every third of its time-to-live while held:
 * a holder that dies stops renewing, so what it held is free on any host within one TTL, while
 * a live holder renews well inside the expiry and never loses it. Used by the wake store (a
 * session's lease) and the channel state (a wake's in-flight claims).
 */
export class LeaseRenewals {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  /** `now`: a monotonic clock in milliseconds (default performance.now), for how long since the last renewal. */
  constructor(ttlMs: number, now: () => number = () => performance.now()) {
    this.ttlMs = ttlMs;
    this.now = now;
  }

  /**
   * Renews the lease `key` until stopped. `renew` resolves false when the lease is gone (it lapsed
   * and another holder took it): renewing stops and `onLost` is told. A renewal that fails (the
   * server unreachable) is retried at the next tick, but once a whole TTL has passed since the
   * last one that succeeded the lease has lapsed on the server and may be someone else's: it is
   * lost too, without waiting to hear so from a server that cannot be reached (or a renewal
   * that never answers).
   */
  keep(key: string, renew: () => Promise<boolean>, onLost?: () => void): void {
    this.stop(key);
    let renewedAt = this.now();
    const lost = () => {
      if (this.timers.get(key) !== timer) return;
      this.stop(key);
      onLost?.();
    };
    const timer = setInterval(() => {
      const triedAt = this.now();
      // Checked at every tick as well: a renewal that hangs (no answer, no error) must not hide the lapse.
      if (triedAt - renewedAt >= this.ttlMs) return lost();
      renew().then(
        (held) => {
          if (!held) return lost();
          renewedAt = Math.max(renewedAt, triedAt);
        },
        () => {
          if (this.now() - renewedAt >= this.ttlMs) lost();
        },
      );
    }, Math.max(10, Math.floor(this.ttlMs / 3)));
    // The renewal alone never keeps a process alive: a wake that is done exits.
    timer.unref();
    this.timers.set(key, timer);
  }

  stop(key: string): void {
    clearInterval(this.timers.get(key));
    this.timers.delete(key);
  }

  stopAll(): void {
    for (const timer of this.timers.values()) clearInterval(timer);
    this.timers.clear();
  }
}
