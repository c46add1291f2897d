// `acx worker`'s own flags, refused before the worker connects to anything.
import { expect, it } from 'vitest';
import { cleanEnv, ROOT, runAcx, tempDir } from '../../support/cli.ts';
import { join } from 'node:path';

it('a --busy-defer that is not a whole number of seconds of at least 1 is a usage error naming it', async () => {
  const home = tempDir('acx-worker-options-');
  // A store no one listens on: the flag is refused before any connection is tried.
  const store = `postgres://acx@/acx?host=${encodeURIComponent(join(home, 'no-server-here'))}`;
  for (const bad of ['0', '1.5', 'soon']) {
    const run = await runAcx(['worker', '--agents', `nova=${join(ROOT, 'test/fixtures/agents/timeline-peer')}`, '--store', store, '--busy-defer', bad], { env: cleanEnv(), home });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toBe(`acx: --busy-defer must be a whole number of at least 1, not "${bad}".\n  → run \`acx worker --help\` for its usage\n`);
  }
});
