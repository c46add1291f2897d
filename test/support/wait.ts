import { scaled } from './time-scale.ts';

export interface WaitOptions {
  /** How long it may take on an idle machine: stretched by ACX_TEST_TIME_SCALE (test/support/time-scale.ts). */
  withinMs: number;
  /** How often to look (default 100 ms). */
  everyMs?: number;
  /** What was seen instead, for the failure's message. */
  explain?: () => string | Promise<string>;
}

/**
 * Waits for a condition the test cannot be told about, looking every `everyMs`: it returns as
 * soon as `check` holds. The bound is only there to fail with `what` and what was seen rather
 * than at vitest's timeout; it is scaled like every other bound, so a machine run with a larger
 * ACX_TEST_TIME_SCALE gets longer rather than a failure.
 */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, options: WaitOptions): Promise<void> {
  const withinMs = scaled(options.withinMs);
  const deadline = performance.now() + withinMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms${options.explain ? `\n${await options.explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 100));
  }
}
