import { type RunnerTaskEventPack, type RunnerTaskResultPack, type RunnerTestCase, type RunnerTestSuite, TestRunner } from 'vitest';

/**
 * vitest's runner, except that a test which did not run because its file's or describe block's
 * set-up failed (a `beforeAll` that threw or timed out) counts as failed, with that error, and
 * not as skipped: vitest marks such tests skipped, and a report of "0 failed, 10 skipped" reads
 * like a machine without some optional tool, not like a broken set-up. Tests skipped on purpose
 * (`it.skip`, `it.skipIf`, `ctx.skip()`) stay skipped. Named as `runner` in vitest.config.ts.
 */
export default class SetUpFailuresFailTests extends TestRunner {
  /** Per suite, the tests in it (at any depth) that were to run when it started. */
  private readonly planned = new WeakMap<RunnerTestSuite, RunnerTestCase[]>();
  /** Sends task results to the reporters: vitest sets it on every runner it starts. */
  declare onTaskUpdate?: (packs: RunnerTaskResultPack[], events: RunnerTaskEventPack[]) => Promise<void>;

  override async onBeforeRunSuite(suite: RunnerTestSuite): Promise<void> {
    await super.onBeforeRunSuite(suite);
    this.planned.set(suite, testsIn(suite).filter((test) => test.mode === 'run' || test.mode === 'queued'));
  }

  override async onAfterRunSuite(suite: RunnerTestSuite): Promise<void> {
    const cause = suite.result?.state === 'fail' ? suite.result.errors?.[0] : undefined;
    // Skipped for the suite's failure: a skip that took no time (a test that skipped itself ran, so has a duration).
    const unrun = cause ? (this.planned.get(suite) ?? []).filter((test) => test.result?.state === 'skip' && test.result.duration === undefined) : [];
    for (const test of unrun) {
      const message = `This test did not run: the set-up of "${suite.name}" failed: ${cause!.message}`;
      // In place: the skip already queued for the reporter is this object, so it reports the failure too.
      const frames = cause!.stack?.indexOf('\n    at ') ?? -1;
      Object.assign(test.result!, { state: 'fail', errors: [{ ...cause, message, stack: `Error: ${message}${frames >= 0 ? cause!.stack!.slice(frames) : ''}` }] });
    }
    if (unrun.length > 0) {
      const packs: RunnerTaskResultPack[] = unrun.map((test) => [test.id, test.result, test.meta]);
      const events: RunnerTaskEventPack[] = unrun.map((test) => [test.id, 'test-finished', undefined]);
      await this.onTaskUpdate?.(packs, events);
    }
    await super.onAfterRunSuite(suite);
  }
}

function testsIn(suite: RunnerTestSuite): RunnerTestCase[] {
  return suite.tasks.flatMap((task) => (task.type === 'test' ? [task] : task.type === 'suite' ? testsIn(task) : []));
}
