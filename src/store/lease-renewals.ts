/**
 * The leases a PostgreSQL store holds, each renewed every third of its time-to-live while held:
 * a holder that dies stops renewing, so what it held is free on any host within one TTL, while
 * a live holder renews well inside the expiry and never loses it. Used by the wake store (a
 * session's lease) and the channel state (a wake's in-flight claims).
 */
export class LeaseRenewals {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly ttlMs: number;

  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }

  /**
   * Renews the lease `key` until stopped. `renew` resolves false when the lease is gone (it lapsed
   * and another holder took it): renewing stops and `onLost` is told.
   */
  keep(key: string, renew: () => Promise<boolean>, onLost?: () => void): void {
    this.stop(key);
    const timer = setInterval(() => {
      renew().then(
        (held) => {
          if (!held && this.timers.get(key) === timer) {
            this.stop(key);
            onLost?.();
          }
        },
        () => {}, // a failed renewal is retried at the next tick, well before the lease lapses
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
