// Progress while an ACP agent is installed on first use (issue 15, "As a client"): what is
// installed, a heartbeat saying how far it has got (the size of what is installed so far) and the
// cache size after — as one line rewritten in place on a terminal, and as logfmt INFO lines
// anywhere else. The install command here writes 300 000 bytes, then waits until a heartbeat has
// counted them (≥ 292 KiB), so no timing is assumed.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bootstrap, bootstrapDir, installProgress } from '../../../src/harness/acp/bootstrap.ts';
import { fakeInstallCommand, fakeProfile, tempCache } from './fake-profile.ts';

/** A progress stream that records what is written and lets the install finish once a heartbeat counts the whole file. */
function progressStream(go: string, isTTY: boolean): { stream: NodeJS.WritableStream; written: string[] } {
  const written: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = chunk.toString('utf8');
      written.push(text);
      const kib = /(\d+) KiB( so far|")/.exec(text);
      if (kib && Number(kib[1]) >= 292 && !existsSync(go)) writeFileSync(go, '');
      done();
    },
  });
  return { stream: Object.assign(stream, { isTTY }), written };
}

async function install(isTTY: boolean): Promise<{ written: string[]; dir: string }> {
  const cache = tempCache();
  const go = join(cache, 'go');
  // 300 000 bytes land in the install first; then it waits for the test's go-ahead (at most 15 s,
  // so a heartbeat without the size fails the assertions below instead of leaving the installer behind).
  const command = [`head -c 300000 /dev/zero > "$HOME/blob"`, `for i in $(seq 300); do [ -f '${go}' ] && break; sleep 0.05; done`, fakeInstallCommand()].join('\n');
  const { stream, written } = progressStream(go, isTTY);
  const result = await bootstrap(fakeProfile(cache, { source: { type: 'install-command', command } }), { cacheDir: cache, progress: stream, heartbeatMs: 50 });
  expect(result.installed).toBe(true);
  expect(result.dir).toBe(bootstrapDir(cache, 'fake-acp'));
  return { written, dir: result.dir };
}

describe('install progress', () => {
  it('writes logfmt INFO lines where the output is not a terminal: what is installed, a heartbeat with elapsed seconds and size, the cache size after', async () => {
    const { written, dir } = await install(false);
    expect(written[0]).toBe(`INFO acp install started harness=fake-acp source=install-command dir=${dir}/implementation note="first run; reused afterwards"\n`);
    const beats = written.slice(1, -1);
    expect(beats.length).toBeGreaterThan(0);
    for (const beat of beats) expect(beat).toMatch(/^INFO acp install running harness=fake-acp step="running the install command for fake-acp" elapsed_s=\d+ size="\d+(\.\d)? (B|KiB)"\n$/);
    expect(beats.at(-1)).toMatch(/ size="(29[2-9]|3\d\d) KiB"\n$/);
    const finished = `^INFO acp install finished harness=fake-acp source=install-command elapsed_s=\\d+ size="\\d+ KiB" dir=${dir} manage="acx cache list\\|clean"\n$`;
    expect(written.at(-1)).toMatch(new RegExp(finished));
  });

  it('names the npm package and version it installs', () => {
    const written: string[] = [];
    const progress = installProgress({ write: (s: string) => (written.push(s), true) } as unknown as NodeJS.WritableStream);
    progress.started({ harness: 'codex', source: 'npm-simple', package: '@agentclientprotocol/codex-acp@0.4.1', dir: '/c/.harness-bootstrap/codex/implementation' });
    progress.finished({ harness: 'codex', source: 'npm-simple', package: '@agentclientprotocol/codex-acp@0.4.1', elapsedSeconds: 12, size: '48 MiB', dir: '/c/.harness-bootstrap/codex' });
    expect(written).toEqual([
      'INFO acp install started harness=codex source=npm-simple package=@agentclientprotocol/codex-acp@0.4.1 dir=/c/.harness-bootstrap/codex/implementation note="first run; reused afterwards"\n',
      'INFO acp install finished harness=codex source=npm-simple package=@agentclientprotocol/codex-acp@0.4.1 elapsed_s=12 size="48 MiB" dir=/c/.harness-bootstrap/codex manage="acx cache list|clean"\n',
    ]);
  });

  it('rewrites one line in place on a terminal, and ends it before the next line', async () => {
    const { written, dir } = await install(true);
    expect(written[0]).toBe(`acx: installing install-command for fake-acp into ${dir}/implementation (first run; reused afterwards)\n`);
    const beats = written.filter((w) => w.includes('so far'));
    expect(beats.length).toBeGreaterThan(0);
    for (const beat of beats) expect(beat).toMatch(/^\r\x1b\[Kacx: still running the install command for fake-acp \(\d+s, \d+ KiB so far\)$/);
    const closing = written.indexOf('\n');
    expect(closing).toBeGreaterThan(written.indexOf(beats.at(-1)!));
    expect(written.at(-1)).toMatch(new RegExp(`^acx: installed install-command in \\d+s \\(\\d+ KiB in ${dir}; acx cache list\\|clean\\)\n$`));
  });
});
