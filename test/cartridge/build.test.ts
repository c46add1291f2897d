import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { Cartridge } from '../../src/cartridge/container.ts';
import { writeKeyPair } from '../../src/cartridge/keys.ts';
import { ScrubBlockedError } from '../../src/cartridge/scrub-gate.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { FIXTURES, tempDir, writeAgentDir, writeKey } from './helpers.ts';

function setup(extra: Record<string, string> = {}) {
  const root = tempDir();
  const agent = join(root, 'agent');
  mkdirSync(agent);
  writeAgentDir(agent, extra);
  const key = writeKey(root);
  return { root, agent, key, out: join(root, 'out', 'agent.acx') };
}

describe('buildCartridge (acx layout)', () => {
  it('packs the directory into a signed cartridge that verifies as portable', () => {
    const s = setup();
    mkdirSync(join(s.root, 'out'));
    const r = buildCartridge({ dir: s.agent, out: s.out, key: s.key.keyPath, publisher: 'io.github.example' });
    expect(r.layout).toBe('acx');
    expect(r.keyid).toBe(s.key.keyid);
    expect(r.skipped.join()).toMatch(/repo-quirk.*portable:false/);
    const v = verifyCartridge(s.out);
    expect(v).toMatchObject({ verdict: 'portable', manifestHash: r.manifestHash, keyid: s.key.keyid, publisherId: 'io.github.example' });
    expect(v.warnings).toEqual([]); // every meta key is signed

    const c = Cartridge.open(s.out);
    expect(c.listFiles('rom/')).toEqual(expect.arrayContaining([
      'rom/agent.json', 'rom/prompts/system-prompt.md', 'rom/prompts/initialize.md',
      'rom/skills/release-notes/SKILL.md', 'rom/skills/release-notes/references/style.md',
      'rom/manifest/harness-requirements.json', 'rom/policy/loop-context-policy.json', 'rom/mcp/filesystem.json',
      'rom/package-spec.json', 'rom/schema/lance-memory.json',
    ]));
    expect(JSON.parse(String(c.getFile('rom/manifest/harness-requirements.json'))).requiredTools).toHaveLength(4);
    expect(JSON.parse(String(c.getFile('rom/policy/loop-context-policy.json'))).loop.maxTurns).toBe(12);
    expect(c.getMeta('acx.provider')).toBe('openai');
    expect(c.getMeta('acx.model')).toBe('gpt-5-mini');
    const mem = c.db.prepare('SELECT id, zone, payload FROM memory').all() as Array<{ id: string; zone: string; payload: string }>;
    expect(mem.map((m) => [m.id, m.zone])).toEqual([['changelog-format', 'rom']]);
    expect(JSON.parse(mem[0]!.payload)).toMatchObject({ key: 'changelog-format', value: 'Keep a Changelog 1.1', portable: true, codebaseFingerprint: null });
    const skill = c.db.prepare('SELECT name, skill_version, resources FROM acx_skill').get() as { name: string; skill_version: string; resources: string };
    expect(skill.name).toBe('release-notes');
    expect(skill.skill_version).toBe('1.0.0');
    expect(JSON.parse(skill.resources)[0].path).toBe('rom/skills/release-notes/references/style.md');
    const stored = JSON.parse(String((c.db.prepare('SELECT envelope FROM signatures').get() as { envelope: string }).envelope));
    expect(JSON.stringify(stored)).not.toMatch(/PRIVATE/);
    c.close();
    expect(readFileSync(s.out).includes('PRIVATE KEY')).toBe(false);
  });

  it('packs the reference agent-package layout', () => {
    const root = tempDir();
    const key = writeKey(root);
    const out = join(root, 'sample.acx');
    const r = buildCartridge({ dir: join(FIXTURES, 'sample-agent-package'), out, key: key.keyPath, publisher: 'io.github.example' });
    expect(r.layout).toBe('agent-package');
    expect(r.memoryCount).toBe(1);
    const c = Cartridge.open(out);
    expect(c.getMeta('acx.agent_name')).toBe('Scenario Research Designer');
    expect(c.getMeta('acx.created_at')).toBe('2026-04-03T13:35:46.190Z');
    expect(c.listFiles('rom/knowledge/')).toContain('rom/knowledge/IDENTITY.md');
    c.close();
    expect(verifyCartridge(out).verdict).toBe('portable');
  });

  it('blocks secrets with {file, byteOffset, ruleId} before writing anything', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    const s = setup({
      'prompts/system-prompt.md': `# Helper\nUse token ${jwt} to log in.\n`,
      'memory/creds.json': JSON.stringify([{ key: 'db', value: 'postgres://admin:hunter22@db.internal/app', portable: true }]),
      'skills/release-notes/references/home.md': 'Logs are in /home/alice/logs\n',
    });
    let caught: unknown;
    try {
      buildCartridge({ dir: s.agent, out: s.out, key: s.key.keyPath, publisher: 'io.github.example' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ScrubBlockedError);
    const findings = (caught as ScrubBlockedError).findings;
    const prompt = readFileSync(join(s.agent, 'prompts/system-prompt.md'));
    expect(findings).toContainEqual({ file: join('prompts', 'system-prompt.md'), byteOffset: prompt.indexOf('eyJ'), ruleId: 'jwt' });
    expect(findings.some((f) => f.file === join('memory', 'creds.json') && f.ruleId === 'uri-credentials')).toBe(true);
    expect(findings.some((f) => f.ruleId === 'home-path')).toBe(true);
    expect(existsSync(s.out)).toBe(false);
  });

  it('detects private keys, cloud tokens and high-entropy strings', () => {
    const cases: Record<string, string> = {
      'private-key': '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n',
      'aws-access-key': 'key AKIAIOSFODNN7EXAMPLE here',
      'github-token': `ghp_${'a1B2c3D4'.repeat(5)}`,
      'high-entropy': 'blob Zx8qP3nR7tK1mW9vY2sL5hJ4gF6dA0cB here',
    };
    for (const [ruleId, text] of Object.entries(cases)) {
      const s = setup({ 'prompts/initialize.md': text });
      expect(() => buildCartridge({ dir: s.agent, out: s.out, key: s.key.keyPath, publisher: 'io.github.example' }), ruleId).toThrow(
        expect.objectContaining({ findings: expect.arrayContaining([expect.objectContaining({ ruleId })]) }),
      );
    }
  });

  it('writes atomically: a failed build leaves no output or temp file', () => {
    const s = setup({ 'skills/bad-skill/SKILL.md': '---\nname: other-name\ndescription: x\n---\n' });
    mkdirSync(join(s.root, 'out'));
    expect(() => buildCartridge({ dir: s.agent, out: s.out, key: s.key.keyPath, publisher: 'io.github.example' })).toThrow(/must equal the directory name/);
    expect(readdirSync(join(s.root, 'out'))).toEqual([]);
  });

  it('rejects bad input with clear errors', () => {
    const s = setup();
    const build = (over: Partial<Parameters<typeof buildCartridge>[0]>) => () =>
      buildCartridge({ dir: s.agent, out: join(s.root, 'x.acx'), key: s.key.keyPath, publisher: 'io.github.example', ...over });
    expect(build({ publisher: 'Not A Domain' })).toThrow(/reverse-DNS/);
    expect(build({ key: join(s.root, 'nope.pem') })).toThrow(/cannot read signing key/);
    writeFileSync(join(s.agent, 'inside.key.pem'), readFileSync(s.key.keyPath));
    expect(build({ key: join(s.agent, 'inside.key.pem') })).toThrow(/inside the agent directory/);
    expect(build({ out: join(s.agent, 'x.acx') })).toThrow(/inside the agent directory/);
    const s2 = setup({ 'skills/release-notes/SKILL.md': '---\nname: release-notes\ndescription: d\nwhen_to_use: always\n---\n' });
    expect(() => buildCartridge({ dir: s2.agent, out: join(s2.root, 'x.acx'), key: s2.key.keyPath, publisher: 'io.github.example' })).toThrow(/unknown frontmatter key/);
    const s3 = setup({ 'agent.json': JSON.stringify({ id: 'Bad Id', name: 'x', version: '1', description: 'd' }) });
    expect(() => buildCartridge({ dir: s3.agent, out: join(s3.root, 'x.acx'), key: s3.key.keyPath, publisher: 'io.github.example' })).toThrow(/agent.json: id/);
    const s4 = setup({ 'skills/release-notes/references/copy.md': 'Use the imperative mood.\n' });
    expect(() => buildCartridge({ dir: s4.agent, out: join(s4.root, 'x.acx'), key: s4.key.keyPath, publisher: 'io.github.example' })).toThrow(/identical bytes/);
    buildCartridge({ dir: s.agent, out: join(s.root, 'y.acx'), key: s.key.keyPath, publisher: 'io.github.example' });
    expect(() => buildCartridge({ dir: s.agent, out: join(s.root, 'y.acx'), key: s.key.keyPath, publisher: 'io.github.example' })).toThrow(/already exists/);
  });
});

describe('keygen', () => {
  it('writes an Ed25519 pair with the private key at mode 0600 and never overwrites', () => {
    const dir = join(tempDir(), 'keys');
    const k = writeKeyPair(dir);
    expect(k.keyid).toMatch(/^ed25519:[0-9a-f]{64}$/);
    expect(statSync(k.privateKeyPath).mode & 0o777).toBe(0o600);
    expect(readFileSync(k.privateKeyPath, 'utf8')).toMatch(/BEGIN PRIVATE KEY/);
    expect(readFileSync(k.publicKeyPath, 'utf8')).toMatch(/BEGIN PUBLIC KEY/);
    expect(() => writeKeyPair(dir)).toThrow(/refusing to overwrite/);
  });

  it('refuses to put a private key into a cartridge or an agent directory', () => {
    const s = setup();
    expect(() => writeKeyPair(s.agent)).toThrow(/agent directory/);
    expect(() => writeKeyPair(join(s.root, 'thing.acx'))).toThrow(/cartridge path/);
  });
});
