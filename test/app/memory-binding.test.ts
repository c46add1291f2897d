import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AgentMemory, openAgentMemory } from '../../src/app/memory-binding.ts';
import { resolveSettings } from '../../src/app/settings.ts';
import { AcxError } from '../../src/core/errors.ts';
import { MemoryProviderError } from '../../src/memory/choice.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { buildTestCartridge, EXAMPLE_AGENT, saveRows } from '../support/cartridge-fixtures.ts';

/**
 * Choosing memory: ACX_MEMORY_PROVIDER, else agent.json memory.provider, else sqlite. Each kind
 * binds what it names (a module of the user's own relative to where it was written), reports the
 * bound provider and its package version, and a bad spec says what was wrong.
 */
const ROOT = join(import.meta.dirname, '../..');
let base: string;
let agentDir: string;
let home: string;
const opened: AgentMemory[] = [];

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'acx-memory-binding-'));
  agentDir = join(base, 'agent');
  cpSync(join(ROOT, 'examples/notes-keeper'), agentDir, { recursive: true });
  home = join(base, 'home');
  mkdirSync(home);
});
afterEach(async () => {
  for (const memory of opened.splice(0)) await memory.close();
  rmSync(base, { recursive: true, force: true });
});

function withAgentJson(extra: Record<string, unknown>): void {
  const file = join(agentDir, 'agent.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...extra }));
}

async function bind(env: NodeJS.ProcessEnv = {}, agent: string = agentDir, flags: Record<string, string> = {}): Promise<AgentMemory> {
  const settings = await resolveSettings({ agent, home, configHome: home, ...flags }, { env });
  const memory = await openAgentMemory(settings, silentLogger, { env });
  opened.push(memory);
  return memory;
}

/** A provider module that records what it was told, in a package with a version. */
function writeProviderPackage(dir: string, { version = '2.3.4', file = 'mem.mjs' } = {}): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-memory', version, type: 'module' }));
  writeFileSync(
    join(dir, file),
    `export const remembered = [];
export function createMemory(options) {
  return {
    name: 'my-memory',
    options,
    tools: () => [],
    observe: async () => {},
    context: async () => 'from my memory: ' + options.agentId,
    remember: async (key, value) => { remembered.push([key, value]); },
    close() {},
  };
}
export const notAProvider = { name: 'half', tools: () => [] };
`,
  );
}

describe('choosing the memory provider', () => {
  it('defaults to sqlite: the five tools, no package version', async () => {
    const memory = await bind();
    expect(memory.binding).toEqual({ provider: 'sqlite', spec: 'sqlite', source: 'default', module: null, package: null, version: null, embedding: null, store: 'sqlite', refused: null });
    expect(memory.tools().map((tool) => tool.name)).toEqual(['memory_write', 'memory_read', 'memory_list', 'memory_search', 'memory_delete']);
  });

  it('semantic from agent.json, with the local hashing engine when the provider has no key', async () => {
    withAgentJson({ memory: { provider: 'semantic' } });
    const memory = await bind();
    expect(memory.binding).toMatchObject({ provider: 'semantic', source: 'agent.json', embedding: 'local-hash-128', version: null });
    expect(memory.name).toBe('semantic');
    expect(memory.tools().map((tool) => tool.name)).toEqual(['memory_search']);
    // The directory's seeds are in the store it searches.
    expect(await memory.context({ agentId: 'notes-keeper', sessionId: 's', query: 'Which days do we deploy?' })).toContain('team/deploy-policy');
  });

  it("semantic takes the provider's embedding model when its key is set, and the one named otherwise", async () => {
    withAgentJson({ memory: { provider: 'semantic' } });
    expect((await bind({ OPENAI_API_KEY: 'sk-x' })).binding.embedding).toBe('openai:text-embedding-3-small');
    expect((await bind({ OPENAI_API_KEY: 'sk-x', ACX_MEMORY_EMBEDDING: 'local-hash-128' })).binding.embedding).toBe('local-hash-128');
    // xAI has no embedding model: local hashing, key or not.
    expect((await bind({ XAI_API_KEY: 'x' }, agentDir, { model: 'xai:grok-4' })).binding.embedding).toBe('local-hash-128');
    await expect(bind({ ACX_MEMORY_EMBEDDING: 'openai:text-embedding-3-large' })).rejects.toThrow(/needs an API key: OPENAI_API_KEY is not set/);
    await expect(bind({ ACX_MEMORY_EMBEDDING: 'local-hash-256' })).rejects.toThrow(/The embedding "local-hash-256" is not "local-hash-128" or "provider:model-id"/);
    await expect(bind({ ACX_MEMORY_EMBEDDING: 'xai:grok-embed', XAI_API_KEY: 'x' })).rejects.toThrow(/xAI has no embedding models/);
  });

  it('ACX_MEMORY_PROVIDER overrides agent.json', async () => {
    withAgentJson({ memory: { provider: 'semantic' } });
    expect((await bind({ ACX_MEMORY_PROVIDER: 'sqlite' })).binding).toMatchObject({ provider: 'sqlite', source: 'env' });
  });

  it('binds module#export relative to the agent directory, calls a factory, reports its package version, seeds it', async () => {
    writeProviderPackage(join(agentDir, 'memory-provider'));
    withAgentJson({ memory: { provider: './memory-provider/mem.mjs#createMemory' } });
    const memory = await bind();
    expect(memory.binding).toMatchObject({
      provider: 'my-memory',
      source: 'agent.json',
      module: join(agentDir, 'memory-provider', 'mem.mjs'),
      package: 'my-memory',
      version: '2.3.4',
    });
    expect(await memory.context({ agentId: 'x', sessionId: 's', query: 'q' })).toBe('from my memory: notes-keeper');
    const module = (await import(join(agentDir, 'memory-provider', 'mem.mjs'))) as { remembered: [string, string][] };
    expect(module.remembered.map(([key]) => key).sort()).toEqual(['team/deploy-policy', 'team/on-call']);
  });

  it('resolves ACX_MEMORY_PROVIDER against the config home, and an installed package by name', async () => {
    writeProviderPackage(join(home, 'providers'));
    expect((await bind({ ACX_MEMORY_PROVIDER: './providers/mem.mjs#createMemory' })).binding).toMatchObject({ provider: 'my-memory', source: 'env', version: '2.3.4' });
    writeProviderPackage(join(home, 'node_modules', 'my-memory'), { version: '9.0.1', file: 'index.mjs' });
    const pkg = join(home, 'node_modules', 'my-memory', 'package.json');
    writeFileSync(pkg, JSON.stringify({ ...JSON.parse(readFileSync(pkg, 'utf8')), exports: './index.mjs' }));
    expect((await bind({ ACX_MEMORY_PROVIDER: 'my-memory#createMemory' })).binding).toMatchObject({ provider: 'my-memory', package: 'my-memory', version: '9.0.1' });
  });

  it('a local file outside any package reports no version', async () => {
    writeFileSync(join(agentDir, 'mem.mjs'), readProviderSource());
    withAgentJson({ memory: { provider: './mem.mjs#createMemory' } });
    expect((await bind()).binding).toMatchObject({ provider: 'my-memory', package: null, version: null });
  });
});

function readProviderSource(): string {
  const dir = join(base, 'src-only');
  writeProviderPackage(dir);
  return readFileSync(join(dir, 'mem.mjs'), 'utf8');
}

describe('a memory provider spec that cannot bind', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['a typo', 'sqlit', /ACX_MEMORY_PROVIDER is "sqlit": not a memory provider acx knows, nor a module#export spec/],
    ['a bad export name', './mem.mjs#not-an-id', /names the export "not-an-id", which is not a JavaScript identifier/],
    ['a missing file', './nowhere.mjs#createMemory', /nowhere\.mjs \(ACX_MEMORY_PROVIDER, relative to .*\) does not exist/],
    ['a missing export', './providers/mem.mjs#createMem', /has no export "createMem" \(it exports: createMemory, notAProvider, remembered\)/],
    ['an object that is not a provider', './providers/mem.mjs#notAProvider', /is not a MemoryProvider: "observe" must be a function; "context" must be a function; "remember" must be a function/],
    ['a package that is not installed', 'no-such-memory-pkg#x', /package "no-such-memory-pkg" \(ACX_MEMORY_PROVIDER\) cannot be found from/],
  ];
  for (const [what, spec, message] of cases) {
    it(`${what}: ${spec}`, async () => {
      writeProviderPackage(join(home, 'providers'));
      const failure = bind({ ACX_MEMORY_PROVIDER: spec });
      await expect(failure).rejects.toThrow(message);
      await expect(failure).rejects.toSatisfy((error: unknown) => MemoryProviderError.isInstance(error) && (error as AcxError).code === 'memory-provider');
    });
  }

  it('a module that fails to import names the file and the error', async () => {
    writeFileSync(join(home, 'broken.mjs'), 'export const x = ;');
    await expect(bind({ ACX_MEMORY_PROVIDER: './broken.mjs#x' })).rejects.toThrow(/broken\.mjs \(ACX_MEMORY_PROVIDER\) failed to import: \w+Error/);
  });

  it('agent.json memory of the wrong shape is a definition error', async () => {
    withAgentJson({ memory: { provider: 'semantic', vectors: 'yes' } });
    await expect(resolveSettings({ agent: agentDir, home, configHome: home }, { env: {} })).rejects.toThrow(/memory takes only "provider" and "embedding"/);
    withAgentJson({ memory: 'semantic' });
    await expect(resolveSettings({ agent: agentDir, home, configHome: home }, { env: {} })).rejects.toThrow(/memory must be an object/);
  });
});

describe('a cartridge and memory code', () => {
  function cartridgeNaming(provider: string) {
    const source = JSON.parse(readFileSync(join(EXAMPLE_AGENT, 'agent.json'), 'utf8')) as Record<string, unknown>;
    return buildTestCartridge(base, { edit: { 'agent.json': JSON.stringify({ ...source, memory: { provider } }) } });
  }

  it("never loads a module its ROM names, grant or not: it runs on sqlite and says why", async () => {
    const built = cartridgeNaming('./mem.mjs#createMemory');
    for (const env of [{}, { ACX_ALLOW_ROM_PLUGINS: '1' }]) {
      const memory = await bind(env, built.path, { registry: built.registry });
      expect(memory.binding).toMatchObject({ provider: 'sqlite', spec: './mem.mjs#createMemory', source: 'agent.json' });
      expect(memory.binding.refused).toMatch(env.ACX_ALLOW_ROM_PLUGINS ? /grants ROM tool plugins only/ : /does not load unless the host grants it/);
      expect(memory.cartridge).toBeDefined();
    }
  });

  it('binds semantic over its SAVE-aware store; a host module spec for it is refused', async () => {
    const built = cartridgeNaming('semantic');
    const memory = await bind({}, built.path, { registry: built.registry });
    expect(memory.binding).toMatchObject({ provider: 'semantic', embedding: 'local-hash-128' });
    expect(memory.cartridge?.roleTools()['acx:memory.write'].name).toBe('add_memory');
    // An observed exchange stays local, like the journal: the SAVE zone is untouched.
    const before = saveRows(built.path);
    await memory.observe({ agentId: 'notes-keeper', sessionId: 's1', prompt: 'the sedan is on level 3', text: 'Noted.', unspoken: false, toolCalls: [] });
    expect(saveRows(built.path)).toEqual(before);
    expect(await memory.context({ agentId: 'notes-keeper', sessionId: 's2', query: 'sedan level' })).toContain('User: the sedan is on level 3');
    await expect(bind({ ACX_MEMORY_PROVIDER: './mem.mjs#x' }, built.path, { registry: built.registry })).rejects.toThrow(/a cartridge's memory is its ROM records and SAVE zone/);
  });
});
