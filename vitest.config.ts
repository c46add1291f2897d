import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { scaled } from './test/support/time-scale.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // ACX_TEST_TIME_SCALE stretches these on a loaded machine (test/support/time-scale.ts).
    testTimeout: scaled(30_000),
    hookTimeout: scaled(30_000),
    pool: 'forks',
    setupFiles: [fileURLToPath(new URL('./test/support/setup-env.ts', import.meta.url))],
    // Every process a test starts (fixtures, workers, the CLI) reuses compiled modules: loading
    // ~280 TypeScript modules is most of a start-up, and the tests start hundreds.
    env: { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE || join(tmpdir(), 'node-compile-cache') },
    // A test whose set-up failed is reported failed, not skipped (test/support/set-up-failures.ts).
    runner: fileURLToPath(new URL('./test/support/set-up-failures.ts', import.meta.url)),
  },
});
