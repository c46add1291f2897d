// A serving command's stop handlers are in place before it announces itself: a process that is
// sent SIGTERM the moment it prints its URL still stops cleanly. Here the announcement itself
// sends the signal (to its own process, where it is delivered at once), so the order is exact.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../support/cli.ts';

const SCRIPT = `
import { untilStopped } from ${JSON.stringify(`${ROOT}/src/frontends/cli/until-stopped.ts`)};
// What a server's listening socket does: keeps the process alive until it is stopped.
const serving = setInterval(() => {}, 60_000);
await untilStopped(
  () => { process.stdout.write('http://127.0.0.1:1\\n'); process.kill(process.pid, 'SIGTERM'); },
  async () => { clearInterval(serving); process.stdout.write('stopped cleanly\\n'); },
);
process.stdout.write('exiting\\n');
`;

describe('untilStopped', () => {
  it('a SIGTERM sent as the URL is printed runs the stop, and the process exits 0', () => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { encoding: 'utf8' });
    expect({ status: run.status, signal: run.signal, stdout: run.stdout }).toEqual({ status: 0, signal: null, stdout: 'http://127.0.0.1:1\nstopped cleanly\nexiting\n' });
  });
});
