// Every command of the README's "Signed cartridges" walkthrough and of docs/booting.md's "Try it
// offline", run as written by /bin/sh in a fresh directory holding a copy of examples/, on a fresh
// machine (no key, no acx settings, HOME and the acx homes in the temp dir). `npx acx` reaches this
// checkout's CLI through an `npx` shim on PATH; booting.md's /tmp/ paths point into the temp dir.
// docs/mcp.md's MCP client configurations start acx mcp, as a client would, from elsewhere.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { detectIsolation } from '../../src/tools/sandbox/isolation.ts';
import { freshMachineEnv, ROOT, tempDir } from '../support/cartridge-fixtures.ts';
import { scaled } from '../support/time-scale.ts';

/** The commands of the first code block after `heading` in a Markdown file, continuation lines joined. */
function commandsUnder(file: string, heading: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const from = text.indexOf(`${heading}\n`);
  if (from < 0) throw new Error(`${file} has no heading ${heading}`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(from))?.[1];
  if (!block) throw new Error(`${file}: no sh block under ${heading}`);
  return block.replace(/\\\n\s*/g, '').split('\n').filter((line) => line.trim() !== '');
}

/** A working directory with examples/ and an `npx` that runs this checkout's acx, as on a fresh clone. */
function freshClone(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir('acx-walkthrough-');
  cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
  const bin = join(dir, '.bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'npx'), `#!/bin/sh\n[ "$1" = acx ] || { echo "npx shim: only acx" >&2; exit 127; }\nshift\nexec '${process.execPath}' '${join(ROOT, 'bin/acx.js')}' "$@"\n`);
  chmodSync(join(bin, 'npx'), 0o755);
  const env = { ...freshMachineEnv(), PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: join(dir, 'home'), ACX_HOME: join(dir, 'state'), ACX_CONFIG_HOME: join(dir, 'config') };
  return { dir, env };
}

function run(line: string, clone: { dir: string; env: NodeJS.ProcessEnv }) {
  const r = spawnSync('/bin/sh', ['-c', line], { cwd: clone.dir, env: clone.env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Every cartridge requires acx:execute, which the execute built-in binds only with OS isolation.
const isolated = (await detectIsolation()).kind !== 'none';
const skipped = isolated ? '' : ' (skipped: no bwrap or unshare isolation here, so execute cannot bind acx:execute)';

describe('the documented cartridge walkthroughs run as written (e2e)', { timeout: scaled(300_000) }, () => {
  it.skipIf(!isolated)(`README "Signed cartridges": every command exits 0; the user's own cartridge is local and the replayed run answers${skipped}`, () => {
    const commands = commandsUnder('README.md', '### Signed cartridges');
    expect(commands.length).toBe(6);
    const clone = freshClone();
    const outputs = commands.map((line) => {
      const result = run(line, clone);
      expect(result.code, `${line}\n${result.stdout}${result.stderr}`).toBe(0);
      return result.stdout;
    });
    expect(outputs[2]).toMatch(/^verdict:\s+local$/m);
    expect(outputs[3]).toContain('validation: clean');
    expect(outputs[4]).toContain('verdict: accept');
    expect(outputs[5]).toContain('the last window before the freeze is Thursday 10 December');
  });

  it.skipIf(!isolated)(`docs/booting.md "Try it offline": every command exits 0 on the shipped example${skipped}`, () => {
    const clone = freshClone();
    const commands = commandsUnder('docs/booting.md', '## Try it offline').map((line) => line.replaceAll('/tmp/', `${clone.dir}/`));
    expect(commands.length).toBe(5);
    const outputs = commands.map((line) => {
      const result = run(line, clone);
      expect(result.code, `${line}\n${result.stdout}${result.stderr}`).toBe(0);
      return result.stdout;
    });
    expect(outputs[1]).toContain('Thursday 10 December');
    expect(outputs[2]).toMatch(/^verdict:\s+trusted$/m);
    expect(outputs[3]).toMatch(/equal:\s+yes/);
    expect(outputs[4]).toContain('verdict: accept');
  });

  it('building examples/notes-keeper, which asks only for memory, is refused with what to add, and acx spec says so first', () => {
    const clone = freshClone();
    const spec = run('npx acx spec examples/notes-keeper', clone);
    expect(spec.code).toBe(1);
    expect(spec.stdout).toContain('agent.json "tools" ["memory"] has no tool for the required roles acx:execute, acx:dispatch');
    expect(run('npx acx keygen -o keys/', clone).code).toBe(0);
    const build = run('npx acx build examples/notes-keeper -o notes-keeper.acx --key keys/acx-signing.key.pem', clone);
    expect(build.code).toBe(1);
    expect(build.stderr).toContain('→ add "execute", "dispatch" to "tools" in agent.json');
    expect(spawnSync('ls', [clone.dir], { encoding: 'utf8' }).stdout).not.toContain('notes-keeper.acx');
  });

  it("docs/mcp.md's client configurations start acx mcp from any directory: acx on PATH, and a checkout's own Node and bin/acx.js", async () => {
    const text = readFileSync(join(ROOT, 'docs/mcp.md'), 'utf8');
    const configs = [...text.matchAll(/```json\n(\{ "mcpServers"[\s\S]*?)```/g)].map((match) => JSON.parse(match[1]!) as { mcpServers: Record<string, { command: string; args: string[] }> });
    expect(configs.length).toBe(2);
    // `acx` on PATH, as `npm link` or a global install puts it, with a Node.js new enough first on PATH.
    const bin = join(tempDir('acx-mcp-path-'), 'bin');
    mkdirSync(bin);
    symlinkSync(join(ROOT, 'bin/acx.js'), join(bin, 'acx'));
    const home = tempDir('acx-mcp-client-');
    const env = { ...freshMachineEnv(), PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`, HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') } as Record<string, string>;
    for (const config of configs) {
      const server = Object.values(config.mcpServers)[0]!;
      const real = (value: string) => value.replace('/path/to/acx', ROOT).replace('/path/to/notes-keeper', join(ROOT, 'examples/notes-keeper'));
      // The client's own directory, which is not the checkout.
      const transport = new StdioClientTransport({ command: real(server.command), args: server.args.map(real), env, cwd: tempDir('acx-mcp-cwd-'), stderr: 'pipe' });
      const client = new Client({ name: 'docs-check', version: '1' });
      try {
        await client.connect(transport);
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        expect(tools, `${server.command} ${server.args.join(' ')}`).toEqual(expect.arrayContaining(['memory_search', 'memory_write']));
      } finally {
        await client.close();
      }
    }
  });
});
