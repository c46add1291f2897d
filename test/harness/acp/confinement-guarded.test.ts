// A confined ACP agent (Claude Code, Codex … in bubblewrap) works in the agent's workspace: when
// that workspace holds the agent directory, the agent sees it read-only, as an execute command does.
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { guardedDirectories } from '../../../src/app/guarded.ts';
import { detectConfinement, prepareConfinedSpawner } from '../../../src/harness/acp/confinement.ts';

const confinement = await detectConfinement({});
const skip = confinement.kind === 'bubblewrap' ? undefined : confinement.reason;

describe.skipIf(skip !== undefined)(`a confined ACP agent${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('cannot write the agent directory inside its workspace, and can write the rest', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'acx-acp-guarded-')));
    const layout = { root, home: join(root, 'home'), workdir: join(root, 'work'), tmp: join(root, 'tmp') };
    const agent = join(layout.workdir, 'agent');
    for (const dir of [layout.home, layout.tmp, agent]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(agent, 'agent.json'), '{}\n');
    const guarded = guardedDirectories({ configHome: join(root, 'config'), definition: { kind: 'directory', path: agent } as never });
    const spawner = await prepareConfinedSpawner(layout, guarded);
    const child = spawner.spawn('/bin/sh', ['-c', 'mkdir -p agent/tools; echo x > agent/tools/x.mjs; echo ok > notes.txt'], {
      env: { PATH: '/usr/bin:/bin' },
      cwd: layout.workdir,
      expose: [],
      readOnly: [],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout!.resume();
    child.stdin!.end();
    await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).toMatch(/mkdir: cannot create directory .agent\/tools.: Read-only file system/);
    expect(readdirSync(agent)).toEqual(['agent.json']);
    expect(readdirSync(layout.workdir).sort()).toEqual(['agent', 'notes.txt']);
  });
});
