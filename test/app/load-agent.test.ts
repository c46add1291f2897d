// loadAgent: an agent directory or cartridge from the library, with acx run's settings and trust.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CartridgeBootRefusal, GuardrailTrippedError, loadAgent, type Guardrail, type InputGuardrailArgs } from '../../src/index.ts';
import { buildTestCartridge } from '../support/cartridge-fixtures.ts';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { installConfigHome } from '../../src/app/install.ts';
import { createMemoryLogger, silentLogger } from '../../src/util/logger.ts';
import { startModelServer } from '../support/model-server.ts';

const ROOT = join(import.meta.dirname, '../..');
const home = () => mkdtempSync(join(tmpdir(), 'acx-load-'));
/** Every file under a directory with its bytes, by relative path. */
function filesUnder(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[relative(root, join(entry.parentPath, entry.name))] = readFileSync(join(entry.parentPath, entry.name), 'utf8');
  }
  return files;
}
const env = (dir: string) => ({ ACX_HOME: dir, ACX_CONFIG_HOME: dir, HOME: dir, PATH: process.env.PATH });

describe('loadAgent', () => {
  it('runs an agent directory as acx run does (its agent.json, memory and tools), here on a recording', async () => {
    const dir = home();
    const { agent, harness, toolset, close } = await loadAgent(join(ROOT, QUICKSTART_AGENT), { replay: join(ROOT, QUICKSTART_CASSETTE), env: env(dir), logger: createMemoryLogger() });
    try {
      expect(harness).toBe('engine');
      expect(toolset.tools.map((tool) => tool.name)).toContain('memory_write');
      const result = await agent.generate({ prompt: QUICKSTART_PROMPT });
      expect(result.text).toContain('Thursday 10 December');
    } finally {
      await close();
    }
  });

  it('preparing an agent leaves the config home untouched, even one stamped by an older acx (installing is the CLI commands\' job)', async () => {
    const dir = home();
    installConfigHome({ configHome: dir, version: '0.0.1-old', logger: silentLogger });
    const before = filesUnder(dir);
    const { agent, close } = await loadAgent(join(ROOT, QUICKSTART_AGENT), { replay: join(ROOT, QUICKSTART_CASSETTE), env: { ...env(dir), ACX_HOME: home() }, logger: createMemoryLogger() });
    try {
      expect((await agent.generate({ prompt: QUICKSTART_PROMPT })).text).toContain('Thursday 10 December');
    } finally {
      await close();
    }
    expect(filesUnder(dir)).toEqual(before);
    expect(readFileSync(join(dir, '.version'), 'utf8').trim()).toBe('0.0.1-old');
  });

  it('boots a cartridge only with a verdict the settings allow: unknown signer refused, trusted by its registry runs', async () => {
    const dir = home();
    const cartridge = join(dir, 'notes-keeper.acx');
    copyFileSync(join(ROOT, 'examples/cartridges/notes-keeper.acx'), cartridge);
    const before = readFileSync(cartridge);
    const replay = join(ROOT, 'examples/cartridges/cassettes/quickstart.json');
    await expect(loadAgent(cartridge, { replay, env: env(dir), logger: createMemoryLogger() })).rejects.toThrow(/portable/);
    expect(readFileSync(cartridge).equals(before)).toBe(true); // a refusal writes nothing
    const { agent, activation, close } = await loadAgent(cartridge, {
      replay,
      registry: join(ROOT, 'examples/cartridges/trust-registry.json'),
      env: env(dir),
      logger: createMemoryLogger(),
    });
    try {
      expect(activation?.descriptor.verdict).toBe('accept');
      expect((await agent.generate({ prompt: QUICKSTART_PROMPT })).text).toContain('Thursday 10 December');
    } finally {
      await close();
    }
  });

  it('reads the model, its endpoint and its key from the env it is given, not from process.env', async () => {
    const dir = home();
    const server = await startModelServer({ script: ['Hello from the model.'] });
    try {
      expect(process.env.OPENAI_API_KEY).toBeUndefined();
      const given = { ...env(dir), ACX_MODEL: 'openai:demo-model', OPENAI_API_KEY: 'sk-given-0123456789', OPENAI_BASE_URL: server.openaiBaseURL, ACX_CONTEXT_TOKENS: '64000' };
      const { agent, close } = await loadAgent(join(ROOT, QUICKSTART_AGENT), { env: given, logger: createMemoryLogger() });
      try {
        expect((await agent.generate({ prompt: 'Hi' })).text).toBe('Hello from the model.');
        expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-given-0123456789');
      } finally {
        await close();
      }
    } finally {
      await server.close();
    }
  });

  it('logs only warnings and errors on stderr when given no logger (ACX_LOG_LEVEL unset)', () => {
    const dir = home();
    // A process of its own: the host's stderr is what a library user sees.
    const script = `
      const { loadAgent } = await import(${JSON.stringify(join(ROOT, 'src/index.ts'))});
      const loaded = await loadAgent(${JSON.stringify(join(ROOT, QUICKSTART_AGENT))}, { replay: ${JSON.stringify(join(ROOT, QUICKSTART_CASSETTE))} });
      try { console.log((await loaded.agent.generate({ prompt: ${JSON.stringify(QUICKSTART_PROMPT)} })).text); } finally { await loaded.close(); }`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: env(dir), encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Thursday 10 December');
    expect(run.stderr).toBe('');
    const loud = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...env(dir), ACX_LOG_LEVEL: 'info' }, encoding: 'utf8' });
    expect(loud.stderr, 'ACX_LOG_LEVEL still turns the trail on').toMatch(/^INFO /m);
  });
});

describe('loadAgent: a cartridge that names the guardrails it needs (issue 33)', () => {
  /** A signed test cartridge whose harness requirements add one guardrail role of `tier`. */
  function cartridgeNeeding(tier: 'optional' | 'required') {
    const root = home();
    const requirements = JSON.parse(readFileSync(join(ROOT, 'examples/cartridges/notes-keeper/harness-requirements.json'), 'utf8')) as Record<string, unknown>;
    requirements.guardrails = [{ role: 'acx:guardrail.no-card-numbers', tier, kind: 'input', description: 'Card numbers never reach the model.' }];
    const built = buildTestCartridge(root, { edit: { 'harness-requirements.json': `${JSON.stringify(requirements, null, 2)}\n` } });
    return { ...built, env: env(root) };
  }
  const noCards: Guardrail<InputGuardrailArgs> = { name: 'no-card-numbers', check: ({ text }) => ({ tripped: /\d{16}/.test(text), reason: 'a card number' }) };
  const replay = join(ROOT, 'examples/cartridges/cassettes/quickstart.json');

  it('binds the host guardrail of that name and kind, and it runs on the agent', async () => {
    const cartridge = cartridgeNeeding('optional');
    const { agent, activation, close } = await loadAgent(cartridge.path, { replay, registry: cartridge.registry, env: cartridge.env, logger: createMemoryLogger(), guardrails: { input: [noCards] } });
    try {
      expect(activation?.descriptor.guardrails).toEqual([expect.objectContaining({ role: 'acx:guardrail.no-card-numbers', boundGuardrail: 'no-card-numbers', satisfied: true })]);
      // notes-keeper's optional acx:list_agents is absent in a library load; the guardrail is not.
      expect(activation?.descriptor.optionalAbsent).toEqual(['acx:list_agents']);
      await expect(agent.generate({ prompt: 'store 4111111111111111' })).rejects.toSatisfy((e: unknown) => GuardrailTrippedError.isInstance(e) && e.guardrail === 'no-card-numbers');
      expect((await agent.generate({ prompt: QUICKSTART_PROMPT })).text).toContain('Thursday 10 December');
    } finally {
      await close();
    }
  });

  it('optional and not offered: the agent runs degraded and the descriptor says so; required and not offered: refused, nothing written', async () => {
    const optional = cartridgeNeeding('optional');
    const loaded = await loadAgent(optional.path, { replay, registry: optional.registry, env: optional.env, logger: createMemoryLogger() });
    try {
      expect(loaded.activation?.descriptor.optionalAbsent).toEqual(['acx:list_agents', 'acx:guardrail.no-card-numbers']);
      expect((await loaded.agent.generate({ prompt: QUICKSTART_PROMPT })).text).toContain('Thursday 10 December');
    } finally {
      await loaded.close();
    }
    const required = cartridgeNeeding('required');
    const before = readFileSync(required.path);
    await expect(loadAgent(required.path, { replay, registry: required.registry, env: required.env, logger: createMemoryLogger() })).rejects.toSatisfy(
      (e: unknown) => CartridgeBootRefusal.isInstance(e) && /guardrail:acx:guardrail\.no-card-numbers/.test((e as Error).message),
    );
    expect(readFileSync(required.path).equals(before)).toBe(true);
  });
});
