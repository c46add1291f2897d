// Which folders acx keeps out of its tools' reach, and the one start-up WARNING that says so.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { guardedDirectories, warnGuardedInWorkspace } from '../../src/app/guarded.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'acx-guarded-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('guarded folders', () => {
  it("are the config home and a directory agent's own directory; a cartridge's definition is its ROM", () => {
    const directory = guardedDirectories({ configHome: '/cfg/acx', definition: { kind: 'directory', path: '/repo/agent' } as never });
    expect(directory.map((entry) => [entry.label, entry.dir])).toEqual([
      ['the config home', '/cfg/acx'],
      ['the agent directory', '/repo/agent'],
    ]);
    expect(directory[0]!.directories).toEqual(['prompts', 'mcp', 'tools']);
    expect(directory[1]!.directories).toEqual(['prompts', 'skills', 'mcp', 'tools', 'memory']);
    expect(directory[1]!.files).toContain('agent.json');
    const cartridge = guardedDirectories({ configHome: '/cfg/acx', definition: { kind: 'cartridge', path: '/x.acx' } as never });
    expect(cartridge.map((entry) => entry.label)).toEqual(['the config home']);
  });

  it('a workspace holding one is said once per process, as a WARNING; a workspace holding none says nothing', () => {
    const workspace = join(root, 'repo');
    const agent = join(workspace, 'agents', 'helper');
    mkdirSync(agent, { recursive: true });
    const guarded = guardedDirectories({ configHome: join(root, 'home', 'acx'), definition: { kind: 'directory', path: agent } as never });
    const logger = createMemoryLogger();
    warnGuardedInWorkspace(logger, [workspace], guarded);
    warnGuardedInWorkspace(logger, [workspace], guarded);
    warnGuardedInWorkspace(logger, [join(root, 'elsewhere')], guarded);
    expect(logger.lines).toEqual([
      `WARNING the workspace holds acx configuration; acx keeps it read-only to its tools workspace=${workspace} protected="the agent directory ${agent}"`,
    ]);
  });
});
