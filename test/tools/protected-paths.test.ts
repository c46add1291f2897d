// The folders acx loads code and configuration from (an agent directory, the config home) are no
// part of the tools' writable area, even when they lie inside the workspace: fs_write refuses them,
// and an isolated command (real bwrap / unshare) sees them read-only, missing ones included.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { workspaceOutputSink } from '../../src/app/builtins.ts';
import { guardedDirectories } from '../../src/app/guarded.ts';
import { Sandbox } from '../../src/tools/builtin/execute.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { probeIsolation } from '../../src/tools/sandbox/isolation.ts';
import type { GuardedDirectory } from '../../src/tools/sandbox/protected.ts';
import { removeTempDirs, tempDir, toolContext } from './helpers.ts';

afterAll(removeTempDirs);

let workspace: string;
let agent: string;

beforeEach(() => {
  workspace = fs.realpathSync(tempDir('acx-guarded-ws-'));
  agent = path.join(workspace, 'agents', 'helper');
  fs.mkdirSync(path.join(agent, 'prompts'), { recursive: true });
  fs.writeFileSync(path.join(agent, 'agent.json'), '{"name":"helper"}\n');
  fs.writeFileSync(path.join(agent, 'prompts', 'system-prompt.md'), 'Be helpful.\n');
});

/** What app/ guards for a directory agent whose config home is `configHome`. */
function guardedFor(agentDir: string, configHome = path.join(tempDir('acx-guarded-home-'), 'acx')): GuardedDirectory[] {
  return guardedDirectories({ configHome, definition: { kind: 'directory', path: agentDir } as never });
}

async function fsWrite(file: string, guarded: readonly GuardedDirectory[], root = workspace) {
  const registry = new ToolRegistry();
  registry.load(createFsTools({ workspace: root, guarded }));
  return registry.run('fs_write', { path: file, content: 'export default [];\n' }, toolContext());
}

/** Every path below `dir`, relative, sorted (what a user would see with find). */
function tree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).sort();
}

describe('fs_write never writes where acx loads code and configuration from', () => {
  it("refuses <agent>/tools/x.mjs when the agent directory is inside the workspace, creating nothing", async () => {
    const before = tree(workspace);
    const run = await fsWrite('agents/helper/tools/x.mjs', guardedFor(agent));
    expect(run.ok).toBe(false);
    expect(run.output).toContain(
      `Refused "agents/helper/tools/x.mjs": it is inside the agent directory ${agent}, which acx loads code and configuration from; no tool may write there.`,
    );
    expect(tree(workspace)).toEqual(before);
    // The rest of the workspace stays writable.
    expect(await fsWrite('src/x.mjs', guardedFor(agent))).toEqual({ ok: true, output: 'Wrote 19 bytes to src/x.mjs.' });
  });

  it('refuses agent.json and the prompts the agent directory already has', async () => {
    for (const file of ['agents/helper/agent.json', 'agents/helper/prompts/system-prompt.md']) {
      expect((await fsWrite(file, guardedFor(agent))).ok, file).toBe(false);
    }
    expect(fs.readFileSync(path.join(agent, 'agent.json'), 'utf8')).toBe('{"name":"helper"}\n');
  });

  it('refuses the same place reached through a symbolic link inside the workspace', async () => {
    fs.symlinkSync('agents/helper', path.join(workspace, 'shortcut'));
    const run = await fsWrite('shortcut/tools/x.mjs', guardedFor(agent));
    expect(run.ok).toBe(false);
    expect(run.output).toContain(`it is inside the agent directory ${agent}`);
    expect(fs.existsSync(path.join(agent, 'tools'))).toBe(false);
  });

  it('refuses the config home when it lies in the workspace (a workspace that is the home directory)', async () => {
    const configHome = path.join(workspace, '.config', 'acx');
    const run = await fsWrite('.config/acx/tools/shell.enabled', guardedFor(agent, configHome));
    expect(run.ok).toBe(false);
    expect(run.output).toContain(`it is inside the config home ${configHome}`);
    expect(fs.existsSync(path.join(workspace, '.config'))).toBe(false);
  });

  it('an agent at the top of its repository: its definition entries are refused, the repository is not', async () => {
    const guarded = guardedFor(agent);
    for (const file of ['tools/x.mjs', 'mcp/evil.json', 'agent.json', 'harness-requirements.json', 'skills/s/SKILL.md']) {
      const run = await fsWrite(file, guarded, agent);
      expect(run.ok, file).toBe(false);
      expect(run.output).toContain(`part of the agent directory ${agent}`);
    }
    expect((await fsWrite('src/index.mjs', guarded, agent)).ok).toBe(true);
    expect(tree(agent)).toEqual(['agent.json', 'prompts', 'prompts/system-prompt.md', 'src', 'src/index.mjs']);
  });

  it("code_execution's outputs do not follow a code-output link into the agent's tools/", async () => {
    fs.mkdirSync(path.join(agent, 'tools'));
    fs.symlinkSync('agents/helper/tools', path.join(workspace, 'code-output'));
    const sink = workspaceOutputSink(workspace, guardedFor(agent));
    await expect(sink({ name: 'x.mjs', data: 'export default [];', callId: 'ci_1' })).rejects.toThrow(/it is inside the agent directory/);
    expect(fs.readdirSync(path.join(agent, 'tools'))).toEqual([]);
  });
});

const kinds = await Promise.all((['bwrap', 'unshare'] as const).map(async (kind) => ({ kind, info: await probeIsolation(kind) })));

for (const { kind, info } of kinds) {
  const skip = info.kind === kind ? undefined : info.reason;
  describe.skipIf(skip !== undefined)(`an isolated command (${kind}${skip ? `; skipped: ${skip}` : ''})`, () => {
    const run = (command: string, guarded: readonly GuardedDirectory[], root = workspace) =>
      new Sandbox({ workspace: root, isolation: kind, guarded }).run({ command });

    it('cannot create <agent>/tools/x.mjs, and nothing appears', async () => {
      const result = await run('mkdir -p agents/helper/tools && echo "export default []" > agents/helper/tools/x.mjs', guardedFor(agent));
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr.text).toContain('Read-only file system');
      expect(tree(agent)).toEqual(['agent.json', 'prompts', 'prompts/system-prompt.md']);
    });

    it('cannot move the agent directory or a parent aside to build a new one at its name', async () => {
      const result = await run(
        'mv agents/helper agents/old; mv agents agents-old; mkdir -p agents/helper/tools && echo x > agents/helper/tools/x.mjs; echo tampered >> agents/helper/agent.json',
        guardedFor(agent),
      );
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr.text.match(/Device or resource busy/g)).toHaveLength(2);
      expect(tree(path.join(workspace, 'agents'))).toEqual(['helper', 'helper/agent.json', 'helper/prompts', 'helper/prompts/system-prompt.md']);
      expect(fs.readFileSync(path.join(agent, 'agent.json'), 'utf8')).toBe('{"name":"helper"}\n');
    });

    it('still writes the rest of the workspace, beside the agent directory too', async () => {
      const result = await run('echo made > agents/notes.txt && mkdir src && echo ok > src/a.txt', guardedFor(agent));
      expect(result.exitCode, result.stderr.text).toBe(0);
      expect(fs.readFileSync(path.join(workspace, 'agents', 'notes.txt'), 'utf8')).toBe('made\n');
      expect(fs.readFileSync(path.join(workspace, 'src', 'a.txt'), 'utf8')).toBe('ok\n');
    });

    it('an agent at the top of its repository: a missing tools/ is made empty and read-only; the repository stays writable', async () => {
      const result = await run('mkdir -p tools; echo x > tools/x.mjs; rmdir tools; echo y > agent.json; echo ok > notes.txt', guardedFor(agent), agent);
      expect(result.stderr.text).toContain('Read-only file system');
      expect(fs.readdirSync(path.join(agent, 'tools'))).toEqual([]);
      expect(fs.readFileSync(path.join(agent, 'agent.json'), 'utf8')).toBe('{"name":"helper"}\n');
      expect(fs.readFileSync(path.join(agent, 'notes.txt'), 'utf8')).toBe('ok\n');
    });

    it('cannot create a config home that does not exist yet inside the workspace', async () => {
      const configHome = path.join(workspace, '.config', 'acx');
      const result = await run('mkdir -p .config/acx/tools && touch .config/acx/tools/shell.enabled', guardedFor(agent, configHome));
      expect(result.exitCode).not.toBe(0);
      expect(tree(path.join(workspace, '.config'))).toEqual(['acx']);
    });
  });
}
