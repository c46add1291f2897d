// loadAgent: an agent directory or cartridge from the library, with acx run's settings and trust.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgent } from '../../src/index.ts';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { startModelServer } from '../support/model-server.ts';

const ROOT = join(import.meta.dirname, '../..');
const home = () => mkdtempSync(join(tmpdir(), 'acx-load-'));
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
