/**
 * The one factor every unavoidable duration in the tests is derived from: ACX_TEST_TIME_SCALE
 * (default 1), how many times slower than an idle machine this one may be. A test waits on
 * events and conditions wherever it can; what is left (a lease that must lapse, a bound on how
 * long a test or its set-up may take) is `scaled(ms)`, and vitest.config.ts scales the default
 * test and hook timeouts by it, so a loaded machine is given longer instead of failing.
 */
export function testTimeScale(): number {
  const raw = process.env.ACX_TEST_TIME_SCALE;
  if (raw === undefined || raw.trim() === '') return 1;
  const scale = Number(raw);
  // Below 1 would shrink the margins the durations were chosen with: a flaky suite, not a fast one.
  if (!Number.isFinite(scale) || scale < 1) {
    throw new Error(`ACX_TEST_TIME_SCALE must be a number of at least 1 (how many times slower than usual this machine runs), not "${raw}".`);
  }
  return scale;
}

/** `ms` on this machine: stretched by testTimeScale(). */
export function scaled(ms: number): number {
  return Math.ceil(ms * testTimeScale());
}
