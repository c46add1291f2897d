// The one reader of an agent definition: what it makes of a directory, and that a ROM holding the
// same files reads the same. Real directories and real cartridges on disk.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAgentDirectory } from '../../src/agent-def/definition.ts';
import type { AgentManifest } from '../../src/agent-def/manifest.ts';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { Cartridge } from '../../src/cartridge/container.ts';
import { cartridgeDefinition } from '../../src/cartridge/definition.ts';
import { generateSigningKey } from '../../src/cartridge/keys.ts';
import { resolveSettings } from '../../src/app/settings.ts';

const EVERY_FIELD = join(import.meta.dirname, '../fixtures/agents/every-field');

function agentDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'acx-def-'));
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  return dir;
}

const agentJson = (fields: Record<string, unknown>) => JSON.stringify({ id: 'helper', name: 'Helper', version: '1.0.0', description: 'Helps.', ...fields });

describe('reading an agent directory', () => {
  it('reads identity, prompts without operator comments, skills, seeds in id order, drop-ins and the derived documents', () => {
    const definition = readAgentDirectory(EVERY_FIELD);
    expect(definition.manifest).toMatchObject({ id: 'every-field', stepBudget: 7, permissionMode: 'allow-reads', speech: { tool: 'say' } });
    expect(definition.systemPrompt).toBe('# Every Field\n\nYou triage incoming issues for a small team.');
    expect(definition.skills.map((s) => [s.name, s.version, s.path])).toEqual([['triage', '1.0.0', 'rom/skills/triage/SKILL.md']]);
    expect(definition.memory.map((s) => [s.id, s.portable, s.text])).toEqual([
      ['labels', true, '{"blocker":"P0","major":"P1"}'],
      ['local-quirk', false, 'The staging box reboots at night.'],
      ['team-areas', true, 'Areas: api, web, infra.'],
    ]);
    expect(definition.mcp.map((d) => d.name)).toEqual(['tickets']);
    expect(definition.requirements).toMatchObject({ origin: 'derived', unbound: [] });
    expect(definition.policy).toMatchObject({ origin: 'derived', intent: { maxTurns: 7, targetTokenBudget: null, toolResultTruncation: null } });
    expect(definition.files.map((f) => f.name)).toEqual(expect.arrayContaining(['rom/agent.json', 'rom/skills/triage/references/severity.md', 'rom/manifest/harness-requirements.json', 'rom/policy/loop-context-policy.json', 'rom/mcp/tickets.json']));
  });

  it('reads the ROM built from it into the same definition', () => {
    const root = mkdtempSync(join(tmpdir(), 'acx-def-rom-'));
    const dir = join(root, 'agent');
    cpSync(EVERY_FIELD, dir, { recursive: true });
    const out = join(root, 'every-field.acx');
    buildCartridge({ dir, out, key: generateSigningKey(), publisher: 'dev.acx.test' });
    const fromDir = readAgentDirectory(dir);
    const cart = Cartridge.open(out, { readonly: true });
    try {
      const fromRom = cartridgeDefinition(cart, out);
      const same = (d: typeof fromDir) => ({
        manifest: d.manifest,
        systemPrompt: d.systemPrompt,
        initialize: d.initialize,
        skills: d.skills,
        memory: d.memory.filter((s) => s.portable).map(({ id, text, title, tags }) => ({ id, text, title, tags })),
        mcp: d.mcp,
        requirements: Buffer.from(d.requirements.bytes).toString('utf8'),
        policy: d.policy.intent,
      });
      expect(same(fromRom)).toEqual(same(fromDir));
    } finally {
      cart.close();
    }
  });

  it('runs a directory with agent.json stepBudget as its cartridge does: the policy carries it, a policy file wins, a flag wins over both', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-def-home-'));
    const steps = async (dir: string, maxSteps?: number) => (await resolveSettings({ agent: dir, home, configHome: home, ...(maxSteps ? { maxSteps } : {}) }, { env: {} })).maxSteps;
    expect(await steps(agentDir({ 'agent.json': agentJson({ stepBudget: 7 }) }))).toBe(7);
    expect(await steps(agentDir({ 'agent.json': agentJson({ maxSteps: 9 }) }))).toBe(9);
    const withPolicy = agentDir({ 'agent.json': agentJson({ stepBudget: 7 }), 'loop-context-policy.json': JSON.stringify({ schemaVersion: 'acx.loop-context-policy/1.1', loop: { maxTurns: 3 } }) });
    expect(await steps(withPolicy)).toBe(3);
    expect(await steps(withPolicy, 5)).toBe(5);
    expect(await steps(agentDir({ 'agent.json': agentJson({}) }))).toBe(24);
  });

  it('applies agent.json as written: names trimmed, unknown keys kept for the build, author entries to name and url', () => {
    const fields = { name: '  Notes  ', memory: { provider: ' semantic ' }, authors: ['Ann', { name: 'Bo', url: 'https://bo.example', email: 'b@x' }], 'x-team': { on: 'call' } };
    const manifest = readAgentDirectory(agentDir({ 'agent.json': agentJson(fields) })).manifest as AgentManifest & Record<string, unknown>;
    expect(manifest.name).toBe('Notes');
    expect(manifest.memory).toEqual({ provider: 'semantic' });
    expect(manifest.authors).toEqual(['Ann', { name: 'Bo', url: 'https://bo.example' }]);
    expect(manifest['x-team']).toEqual({ on: 'call' });
  });

  it('refuses what no run could mean, naming the field', () => {
    const read = (fields: Record<string, unknown>) => () => readAgentDirectory(agentDir({ 'agent.json': agentJson(fields) }));
    expect(read({ stepBudget: 7, maxSteps: 9 })).toThrow(/agent\.json: stepBudget and its alias maxSteps disagree; give one of them/);
    expect(read({ stepBudget: 0 })).toThrow(/agent\.json: stepBudget must be an integer from 1 to 1000/);
    expect(read({ tools: ['memory', 'telepathy'] })).toThrow(/tools names unknown built-in\(s\) telepathy/);
    expect(read({ permissionMode: 'yolo' })).toThrow(/permissionMode must be one of allow-reads, allow-edits, allow-all/);
    expect(read({ tags: ['ops', 7] })).toThrow(/agent\.json: tags must be an array of strings \(item 1 is 7\)/);
    expect(read({ memory: { provider: 'semantic', kind: 'x' } })).toThrow(/agent\.json: memory takes only "provider" and "embedding"/);
    expect(read({ name: '   ' })).toThrow(/agent\.json: name must be 1-120 characters/);
    expect(() => readAgentDirectory(agentDir({ 'agent.json': agentJson({}), 'skills/notes/README.md': 'x' }))).toThrow(/skills\/notes\/SKILL\.md is missing/);
  });

  it('runs a memory-only agent as a directory, while its build is refused for the unbound roles', () => {
    const dir = agentDir({ 'agent.json': agentJson({ tools: ['memory'] }), 'prompts/system-prompt.md': 'You remember.' });
    expect(readAgentDirectory(dir).requirements.unbound).toEqual(['acx:execute', 'acx:dispatch']);
    expect(() => buildCartridge({ dir, out: join(dir, '..', `${Date.now()}.acx`), key: generateSigningKey(), publisher: 'dev.acx.test' })).toThrow(
      /agent\.json "tools" \["memory"\] has no tool for the required roles acx:execute, acx:dispatch/,
    );
  });
});
