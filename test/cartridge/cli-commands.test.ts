import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { register as registerBuild } from '../../src/cli/commands/build.ts';
import { register as registerInspect } from '../../src/cli/commands/inspect.ts';
import { register as registerKeygen } from '../../src/cli/commands/keygen.ts';
import { register as registerSpec } from '../../src/cli/commands/spec.ts';
import { register as registerStrip } from '../../src/cli/commands/strip.ts';
import { register as registerVerify } from '../../src/cli/commands/verify.ts';
import { CliExit, EXIT } from '../../src/cli/output.ts';
import { REFERENCE_CARTRIDGES, tempDir, writeAgentDir } from './helpers.ts';

/** Runs the subcommands the way `acx` will once they are wired into src/cli/main.ts. */
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
    if (error instanceof CliExit) return { code: error.exitCode, out: out + error.message };
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
});
