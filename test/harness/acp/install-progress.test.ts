// Progress while an ACP agent is installed on first use (issue 15, "As a client"): the heartbeat
// of a running install says how far it has got (the size of what is installed so far), as one
// line rewritten in place on a terminal and as separate lines anywhere else. The install command
// here writes 300 000 bytes, then waits until a heartbeat has counted them (≥ 292 KiB), so no
// timing is assumed.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bootstrap } from '../../../src/harness/acp/bootstrap.ts';
import { fakeInstallCommand, fakeProfile, tempCache } from './fake-profile.ts';

/** A progress stream that records what is written and lets the install finish once a heartbeat counts the whole file. */
function progressStream(go: string, isTTY: boolean): { stream: NodeJS.WritableStream; written: string[] } {
  const written: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = chunk.toString('utf8');
      written.push(text);
      const kib = /(\d+) KiB so far/.exec(text);
      if (kib && Number(kib[1]) >= 292 && !existsSync(go)) writeFileSync(go, '');
      done();
    },
  });
  return { stream: Object.assign(stream, { isTTY }), written };
}

async function install(isTTY: boolean): Promise<string[]> {
  const cache = tempCache();
  const go = join(cache, 'go');
  // 300 000 bytes land in the install first; then it waits for the test's go-ahead (at most 15 s,
  // so a heartbeat without the size fails the assertions below instead of leaving the installer behind).
  const command = [`head -c 300000 /dev/zero > "$HOME/blob"`, `for i in $(seq 300); do [ -f '${go}' ] && break; sleep 0.05; done`, fakeInstallCommand()].join('\n');
  const { stream, written } = progressStream(go, isTTY);
  const result = await bootstrap(fakeProfile(cache, { source: { type: 'install-command', command } }), { cacheDir: cache, progress: stream, heartbeatMs: 50 });
  expect(result.installed).toBe(true);
  return written;
}

describe('install progress', () => {
  it('says how far the install has got, one line per heartbeat where the output is not a terminal', async () => {
    const written = await install(false);
    expect(written[0]).toMatch(/^acx: installing install-command for fake-acp into .* \(first run; reused afterwards\)\n$/);
    const beats = written.filter((w) => w.includes('so far'));
    expect(beats.length).toBeGreaterThan(0);
    for (const beat of beats) expect(beat).toMatch(/^acx: still running the install command for fake-acp \(\d+s, \d+ KiB so far\)\n$/);
    expect(written.at(-1)).toMatch(/^acx: installed install-command in \d+s/);
  });

  it('rewrites one line in place on a terminal, and ends it before the next line', async () => {
    const written = await install(true);
    const beats = written.filter((w) => w.includes('so far'));
    expect(beats.length).toBeGreaterThan(0);
    for (const beat of beats) expect(beat).toMatch(/^\r\x1b\[Kacx: still running the install command for fake-acp \(\d+s, \d+ KiB so far\)$/);
    const closing = written.indexOf('\n');
    expect(closing).toBeGreaterThan(written.indexOf(beats.at(-1)!));
    expect(written.at(-1)).toMatch(/^acx: installed install-command/);
  });
});
