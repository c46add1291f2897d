// `acx cache list|clean`, over a real bootstrap (an install-command source: nothing downloaded).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bootstrap } from '../../../src/harness/acp/bootstrap.ts';
import { cleanEnv, runAcx, tempDir } from '../../support/cli.ts';
import { fakeProfile, tempCache } from '../../harness/acp/fake-profile.ts';

async function installedCache(): Promise<{ cacheDir: string; dir: string; progress: string }> {
  const cacheDir = tempCache();
  let progress = '';
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => (progress += chunk.toString('utf8')));
  const result = await bootstrap(fakeProfile(cacheDir), { cacheDir, progress: stream });
  return { cacheDir, dir: result.dir, progress };
}

const cacheCli = (cacheDir: string, args: string[]) => runAcx(['cache', ...args], { env: cleanEnv({ ACX_CACHE_DIR: cacheDir }), home: tempDir() });

describe('acx cache', () => {
  it('the install says how big it is and where; list shows the agent, its source and size', async () => {
    const { cacheDir, dir, progress } = await installedCache();
    expect(progress).toMatch(new RegExp(`^INFO acp install finished harness=fake-acp source=install-command elapsed_s=\\d+ size="\\d+(\\.\\d)? (B|KiB)" dir=${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} manage="acx cache list\\|clean"$`, 'm'));
    const listed = await cacheCli(cacheDir, ['list', '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    const report = JSON.parse(listed.stdout) as { cacheDir: string; totalBytes: number; entries: Array<Record<string, unknown>> };
    expect(report.cacheDir).toBe(cacheDir);
    expect(report.entries).toEqual([
      expect.objectContaining({ harnessId: 'fake-acp', dir, complete: true, source: 'install-command', installing: false, bytes: expect.any(Number) }),
    ]);
    expect(report.entries[0]!.bytes).toBeGreaterThan(0);
    expect(report.totalBytes).toBe(report.entries[0]!.bytes);
    const text = await cacheCli(cacheDir, ['list']);
    expect(text.stdout).toMatch(/^fake-acp\s+\d+(\.\d)? (B|KiB)\s+install-command\s+installed 20\d\d-/m);
  });

  it('clean removes what it names (a dry run removes nothing), and the next bootstrap installs again', async () => {
    const { cacheDir, dir } = await installedCache();
    const dry = await cacheCli(cacheDir, ['clean', 'fake-acp', '--dry-run']);
    expect(dry.stdout).toMatch(/^would remove fake-acp/m);
    expect(existsSync(dir)).toBe(true);
    const clean = await cacheCli(cacheDir, ['clean', 'fake-acp', '--json']);
    expect(clean.status, clean.stderr).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ dryRun: false, removed: [{ harnessId: 'fake-acp', dir }] });
    expect(existsSync(dir)).toBe(false);
    const again = await bootstrap(fakeProfile(cacheDir), { cacheDir, progress: null });
    expect(again.installed).toBe(true);
  });

  it('refuses an agent being installed right now, an unknown name, and a clean with nothing named', async () => {
    const { cacheDir, dir } = await installedCache();
    mkdirSync(join(dir, '.lock'));
    const busy = await cacheCli(cacheDir, ['clean', '--all']);
    expect(busy.status).toBe(1);
    expect(busy.stderr).toContain('fake-acp is being installed right now');
    expect(existsSync(join(dir, 'implementation'))).toBe(true);
    const unknown = await cacheCli(cacheDir, ['clean', 'claude']);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('There is no cached ACP implementation "claude"');
    expect(unknown.stderr).toContain('Cached: fake-acp');
    const bare = await cacheCli(cacheDir, ['clean']);
    expect(bare.status).toBe(2);
    expect(bare.stderr).toContain('name the harnesses to remove');
  });
});
