import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { register as registerBuild } from '../../src/frontends/cli/commands/build.ts';
import { register as registerInspect } from '../../src/frontends/cli/commands/inspect.ts';
import { register as registerKeygen } from '../../src/frontends/cli/commands/keygen.ts';
import { register as registerSpec } from '../../src/frontends/cli/commands/spec.ts';
import { register as registerStrip } from '../../src/frontends/cli/commands/strip.ts';
import { register as registerVerify } from '../../src/frontends/cli/commands/verify.ts';
import { CliExit, EXIT, exitCodeFor } from '../../src/frontends/cli/output.ts';
import { defaultHarnessRequirements } from '../../src/contract/requirements.ts';
import { REFERENCE_CARTRIDGES, tempDir, writeAgentDir } from './helpers.ts';

/** Runs the subcommands the way `acx` will once they are wired into src/frontends/cli/main.ts. */
async function acx(...argv: string[]): Promise<{ code: number; out: string }> {
  const program = new Command('acx').exitOverride();
  for (const register of [registerKeygen, registerBuild, registerVerify, registerInspect, registerStrip, registerSpec]) register(program);
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return { code: EXIT.ok, out };
  } catch (error) {
    if (error instanceof CliExit) return { code: exitCodeFor(error), out: out + error.message };
    throw error;
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('acx keygen/build/verify/inspect/strip/spec', () => {
  it('runs the whole flow a user types', async () => {
    const root = tempDir();
    const agent = join(root, 'agent');
    mkdirSync(agent);
    writeAgentDir(agent);
    const keys = join(root, 'keys');
    const kg = await acx('keygen', '-o', keys);
    expect(kg.out).toMatch(/keyid:\s+ed25519:[0-9a-f]{64}/);
    const keyPath = join(keys, 'acx-signing.key.pem');
    const out = join(root, 'agent.acx');
    const b = await acx('build', agent, '-o', out, '--key', keyPath, '--publisher', 'io.github.example');
    expect(b.code).toBe(0);
    expect(b.out).toMatch(/rom hash:\s+sha256:/);
    const v = await acx('verify', out, '--json');
    expect(JSON.parse(v.out)).toMatchObject({ verdict: 'portable', publisherId: 'io.github.example' });
    const human = await acx('verify', out, '--own-key', join(keys, 'acx-signing.pub.pem'));
    expect(human.out).toMatch(/verdict:\s+portable/);
    expect(human.out).toMatch(/why:.*not in the trust registry/);
    expect((await acx('inspect', out)).out).toContain('Release Helper 1.2.0');
    expect(JSON.parse((await acx('inspect', out, '--json')).out).rom.manifestHash).toMatch(/^sha256:/);
    expect((await acx('spec', out)).code).toBe(0);
    expect((await acx('spec', agent)).code).toBe(0);
    const s = await acx('strip', out, '-o', join(root, 'rom-only.acx'));
    expect(s.out).toMatch(/equal:\s+yes/);
    expect(existsSync(join(root, 'rom-only.acx'))).toBe(true);
  });

  it('exits with EXIT.tampered on a tampered cartridge and EXIT.refused when the scrub gate blocks', async () => {
    const bad = join(tempDir(), 'bad.acx');
    copyFileSync(REFERENCE_CARTRIDGES[0]!, bad);
    const db = new DatabaseSync(bad);
    db.exec("UPDATE cartridge SET value='x' WHERE key='acx.role'");
    db.close();
    const v = await acx('verify', bad);
    expect(v.code).toBe(EXIT.tampered);
    expect(v.out).toMatch(/verdict:\s+tampered/);
    expect(v.out).toMatch(/cartridge:acx.role/);

    const root = tempDir();
    const agent = join(root, 'agent');
    mkdirSync(agent);
    writeAgentDir(agent, { 'prompts/initialize.md': 'AWS key AKIAIOSFODNN7EXAMPLE\n' });
    await acx('keygen', '-o', join(root, 'k'));
    const r = await acx('build', agent, '-o', join(root, 'x.acx'), '--key', join(root, 'k', 'acx-signing.key.pem'), '--publisher', 'io.github.example');
    expect(r.code).toBe(EXIT.refused);
    expect(r.out).toMatch(/prompts\/initialize.md @ byte 8: aws-access-key/);
    expect(existsSync(join(root, 'x.acx'))).toBe(false);
    delete process.env.ACX_SIGNING_KEY;
    const usage = await acx('build', agent, '-o', join(root, 'x.acx'), '--publisher', 'io.github.example');
    expect(usage.code).toBe(EXIT.usage);
    expect(readFileSync(join(root, 'k', 'acx-signing.pub.pem'), 'utf8')).toMatch(/PUBLIC KEY/);
  });

  it('build notes when the directory\'s own manifest asks for more than a default host gives; a derived one needs no note', async () => {
    const root = tempDir();
    const agent = join(root, 'agent');
    mkdirSync(agent);
    writeAgentDir(agent);
    rmSync(join(agent, 'mcp'), { recursive: true });
    await acx('keygen', '-o', join(root, 'k'));
    const key = join(root, 'k', 'acx-signing.key.pem');
    const derived = await acx('build', agent, '-o', join(root, 'derived.acx'), '--key', key, '--publisher', 'io.github.example', '--json');
    expect(JSON.parse(derived.out)).toMatchObject({ harnessRequirements: 'generated', defaultHost: { issues: [], notes: [] } });
    const manifest = { ...defaultHarnessRequirements(), network: ['net.fetch', 'x-radio'] };
    writeFileSync(join(agent, 'harness-requirements.json'), JSON.stringify(manifest, null, 2));
    writeFileSync(join(agent, 'agent.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(agent, 'agent.json'), 'utf8')), tools: ['memory', 'execute', 'dispatch'] }));
    const own = await acx('build', agent, '-o', join(root, 'own.acx'), '--key', key, '--publisher', 'io.github.example');
    expect(own.code).toBe(EXIT.ok);
    expect(own.out).toContain('note:      harness: a default acx host refuses this cartridge: network scope net.fetch is not held by agent.json "tools" [memory, execute, dispatch] → add "web_fetch" to agent.json "tools"\n');
    expect(own.out).toContain('note:      harness: a default acx host refuses this cartridge: network scope x-radio is not held by agent.json "tools" [memory, execute, dispatch] → change the manifest, or serve the tool from an MCP server in mcp/\n');
  });
});
