// LeaseRenewals on real timers, with the renewal a plain function standing in for the server:
// a lease is lost when the server says it is gone, and also when no renewal has succeeded for a
// whole TTL (the server unreachable, or a renewal that never answers) — by then it has lapsed
// there and may be another holder's, whether or not this holder can hear so.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AcxError } from '../../src/core/errors.ts';
import { LeaseRenewals } from '../../src/store/lease-renewals.ts';

const TTL_MS = 60;
let renewals: LeaseRenewals | undefined;
afterEach(() => {
  renewals?.stopAll();
  vi.useRealTimers();
});

/** Keeps lease `key` with `renew`, resolving with how many renewals were tried once it is lost. */
function keepUntilLost(renew: () => Promise<boolean>, now?: () => number): Promise<number> {
  renewals = new LeaseRenewals(TTL_MS, now);
  let tries = 0;
  return new Promise((resolve) =>
    renewals!.keep(
      'lease',
      () => (tries++, renew()),
      () => (resolve(tries), 'the test lease'),
    ),
  );
}

describe('LeaseRenewals', () => {
  it('a renewal that finds the lease gone loses it at once', async () => {
    expect(await keepUntilLost(async () => false)).toBe(1);
  });

  it('renewals failing for a whole TTL lose the lease (the server unreachable)', async () => {
    const tries = await keepUntilLost(() => Promise.reject(new Error('connection refused')));
    expect(tries, 'failures inside the TTL are retried first').toBeGreaterThan(1);
  });

  it('a renewal that never answers loses the lease once a TTL has passed', async () => {
    expect(await keepUntilLost(() => new Promise<boolean>(() => {}))).toBeGreaterThan(1);
  });

  it('failures between successful renewals keep the lease', async () => {
    // Every other renewal fails: each success restarts the count, so the lease is never lost
    // until the server says it is gone. The clock moves a fixed step per renewal (well inside
    // the TTL between successes), however late a busy machine runs the timer.
    let n = 0;
    let clock = 0;
    const tries = await keepUntilLost(
      async () => {
        n++;
        clock += TTL_MS / 3;
        if (n >= 30) return false;
        if (n % 2 === 0) throw new Error('blip');
        return true;
      },
      () => clock,
    );
    expect(tries).toBe(30);
  });

  it("a lost hold's signal aborts with a lease-lost error saying what was lost; a hold given back never aborts", async () => {
    renewals = new LeaseRenewals(TTL_MS);
    renewals.keep('kept', async () => true, () => 'never lost');
    const given = renewals.lost('kept');
    renewals.keep('gone', async () => false, () => 'the lease on session s');
    const gone = renewals.lost('gone');
    await new Promise((resolve) => gone.addEventListener('abort', resolve, { once: true }));
    expect(AcxError.hasCode(gone.reason, 'lease-lost')).toBe(true);
    expect((gone.reason as Error).message).toBe('the lease on session s');
    expect(renewals.lost('gone').aborted, 'asked after the loss, it is still lost').toBe(true);
    renewals.stop('kept');
    expect(given.aborted).toBe(false);
    expect(renewals.lost('kept').aborted, 'a key not held').toBe(false);
    // Held again: a new hold, with a signal of its own.
    renewals.keep('gone', async () => true, () => 'held again');
    expect(renewals.lost('gone').aborted).toBe(false);
  });
  // Found by the chaos run: a holder that heard of the lapse only at its next tick went on working
  // after another wake had taken its work over. Fake timers: the moments are exact.
  it('a holder that cannot renew gives the lease up before it lapses on the server, not after', async () => {
    vi.useFakeTimers();
    const ttlMs = 600;
    renewals = new LeaseRenewals(ttlMs, () => Date.now());
    const keptAt = Date.now();
    let lostAt: number | undefined;
    renewals.keep('k', () => Promise.reject(new Error('connection refused')), () => ((lostAt = Date.now()), 'the lease'));
    await vi.advanceTimersByTimeAsync(ttlMs);
    expect(lostAt, 'lost within the TTL').toBeDefined();
    expect(lostAt! - keptAt, 'at five sixths of the TTL, before the server lets anyone else take it').toBe(500);
  });

  it('a renewal that succeeds moves the fence on', async () => {
    vi.useFakeTimers();
    const ttlMs = 600;
    let failing = false;
    renewals = new LeaseRenewals(ttlMs, () => Date.now());
    const keptAt = Date.now();
    let lostAt: number | undefined;
    renewals.keep('k', () => (failing ? Promise.reject(new Error('down')) : Promise.resolve(true)), () => ((lostAt = Date.now()), 'the lease'));
    // Renewed at 200 and 400 ms; then the server goes away.
    await vi.advanceTimersByTimeAsync(450);
    failing = true;
    await vi.advanceTimersByTimeAsync(1000);
    expect(lostAt! - keptAt, 'five sixths of a TTL after the last success (400 ms)').toBe(900);
  });
});
