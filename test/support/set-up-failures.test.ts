// The suite's own runner (test/support/set-up-failures.ts, named in vitest.config.ts), through a
// real vitest run of a throwaway test file: what its JSON report, the one CI counts, says.
import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT, tempDir } from './cli.ts';
import { scaled } from './time-scale.ts';

const CHECKED = `import { afterAll, beforeAll, describe, it } from 'vitest';
describe('needs a server', () => {
  beforeAll(() => { throw new Error('the server did not start'); });
  it('answers', () => {});
  it.skipIf(true)('answers over TLS (skipped: no openssl)', () => {});
  describe('and its store', () => { it('keeps the answer', () => {}); });
});
describe('set up too slowly', () => {
  beforeAll(() => new Promise(() => {}), 50);
  it('is served', () => {});
});
describe('torn down badly', () => {
  afterAll(() => { throw new Error('the server did not stop'); });
  it('passes', () => {});
  it('skips itself', (context) => context.skip());
});
`;

it("a test whose file's or describe block's set-up failed is reported failed with that error; skips made on purpose stay skips", { timeout: scaled(60_000) }, async () => {
  const dir = tempDir('acx-runner-');
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'vitest.config.ts'), `import config from ${JSON.stringify(join(ROOT, 'vitest.config.ts'))};\nexport default { ...config, test: { ...config.test, include: ['*.check.ts'] } };\n`);
  writeFileSync(join(dir, 'set-up.check.ts'), CHECKED);
  const report = join(dir, 'report.json');
  const child = spawn(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, '--cache', 'false', '--reporter=json', `--outputFile.json=${report}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(status, output).toBe(1);
  const json = JSON.parse(readFileSync(report, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    testResults: Array<{ assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }> }>;
  };
  const results = json.testResults[0]!.assertionResults.map((test) => [test.fullName, test.status, test.failureMessages[0]?.split('\n')[0] ?? '']);
  expect(results).toEqual([
    ['needs a server answers', 'failed', 'Error: This test did not run: the set-up of "needs a server" failed: the server did not start'],
    ['needs a server answers over TLS (skipped: no openssl)', 'skipped', ''],
    ['needs a server and its store keeps the answer', 'failed', 'Error: This test did not run: the set-up of "needs a server" failed: the server did not start'],
    ['set up too slowly is served', 'failed', 'Error: This test did not run: the set-up of "set up too slowly" failed: Hook timed out in 50ms.'],
    ['torn down badly passes', 'passed', ''],
    ['torn down badly skips itself', 'skipped', ''],
  ]);
  expect([json.numPassedTests, json.numFailedTests, json.numPendingTests]).toEqual([1, 3, 2]);
});
