// A wake runs once per event, so start-up is paid on every message: a command loads only what it
// reaches. These tests list the modules a real `acx` process loaded (test/support/module-trace.mjs)
// and name what must not be among them. They name source modules, so they drive the checkout's
// sources (ACX_RUN_FROM=src) whichever build the rest of the suite runs; the bundle's loading is
// checked by test/e2e/package.test.ts.
import * as acp from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { cleanEnv, runAcx, tempDir } from '../support/cli.ts';
import { moduleTrace } from '../support/module-trace.ts';
import { startAcxAcp } from '../fixtures/acp-server/client.ts';

async function modulesLoadedBy(args: string[], home: string): Promise<string[]> {
  const trace = moduleTrace();
  const run = await runAcx(args, { home, env: cleanEnv({ ...trace.env, ACX_RUN_FROM: 'src' }) });
  expect(run.stderr).not.toMatch(/ERROR/);
  expect(run.status).toBe(0);
  return trace.modules();
}

const loaded = (modules: string[], part: string) => modules.filter((url) => url.includes(part));

describe('start-up pays only for what a command uses', () => {
  it('a replayed run on the native engine loads neither the ACP client nor an MCP server', async () => {
    const modules = await modulesLoadedBy(['run', QUICKSTART_AGENT, QUICKSTART_PROMPT, '--replay', QUICKSTART_CASSETTE], tempDir());
    expect(loaded(modules, '/src/engine/engine.ts')).toHaveLength(1); // the trace works: the engine ran
    expect(loaded(modules, 'node_modules/@agentclientprotocol/')).toEqual([]);
    expect(loaded(modules, 'node_modules/@modelcontextprotocol/')).toEqual([]);
    // Of the ACP client only the list of harness names (to read --harness) loads.
    expect(loaded(modules, '/src/harness/acp/').filter((url) => !url.endsWith('/src/harness/acp/profiles/names.ts'))).toEqual([]);
    expect(loaded(modules, 'node_modules/hono/')).toEqual([]);
    expect(loaded(modules, 'node_modules/@opentelemetry/')).toEqual([]); // loaded on the first traced turn only
    // A directory agent has no cartridge handshake (the contract, its ajv); its built-ins' schemas
    // are zod (ajv only for a JSON Schema); its memory is SQLite (pg's memory store not loaded).
    expect(loaded(modules, '/src/app/boot-cartridge.ts')).toEqual([]);
    expect(loaded(modules, '/src/app/default-host.ts')).toEqual([]);
    // Nor a container, SAVE zone or seals: the cartridge code (and node:zlib) is a cartridge's only.
    expect(loaded(modules, '/src/cartridge/')).toEqual([]);
    expect(loaded(modules, 'node-internal:zlib')).toEqual([]);
    expect(loaded(modules, '/src/contract/').filter((url) => !url.endsWith('/src/contract/boot-refusal.ts'))).toEqual([]);
    expect(loaded(modules, 'node_modules/ajv/')).toEqual([]);
    expect(loaded(modules, '/src/memory/postgres-store.ts')).toEqual([]);
    // Its journal is the SQLite file: PostgreSQL's code and driver load only for a postgres:// store.
    expect(loaded(modules, '/src/store/postgres-')).toEqual([]);
    expect(loaded(modules, 'node_modules/pg')).toEqual([]);
    // web_fetch takes node:http and node:tls when it fetches: importing them loads Node's undici.
    expect(modules.filter((url) => url === 'node:http' || url === 'node:tls')).toEqual([]);
    // A replayed call fetches nothing: no Headers or fetch touched, so Node's undici stays unloaded.
    expect(loaded(modules, 'node-internal:internal/process/')).not.toEqual([]); // the internal list is there
    expect(loaded(modules, 'node-internal:internal/deps/undici/')).toEqual([]);
    // Its agent has memory only: the file, command, web and dispatch tools' modules stay unloaded.
    for (const module of ['/src/tools/builtin/fs.ts', '/src/tools/builtin/view.ts', '/src/tools/builtin/execute.ts', '/src/tools/builtin/web-fetch.ts', '/src/app/dispatch.ts']) {
      expect(loaded(modules, module), module).toEqual([]);
    }
    // Its skills' frontmatter is plain `key: text` lines: read without the YAML library.
    expect(loaded(modules, '/src/agent-def/skill.ts')).toHaveLength(1);
    expect(loaded(modules, 'node_modules/yaml/')).toEqual([]);
  });

  it('a repeated delivery of an answered event does not prepare the agent', async () => {
    const home = tempDir();
    const args = ['wake', QUICKSTART_AGENT, QUICKSTART_PROMPT, '--session', 's', '--event', 'e1', '--no-pace', '--replay', QUICKSTART_CASSETTE];
    const first = await runAcx(args, { home });
    expect(first.stdout).toContain('release freeze');
    const modules = await modulesLoadedBy(args, home);
    expect(loaded(modules, '/src/store/wake-store.ts')).toHaveLength(1);
    expect(loaded(modules, '/src/app/prepare.ts')).toEqual([]);
    expect(loaded(modules, '/src/app/toolset.ts')).toEqual([]);
    expect(loaded(modules, 'node_modules/@agentclientprotocol/')).toEqual([]);
    // Reading a directory agent's identity and budget needs neither the cartridge handshake (the
    // contract, its ajv) nor the tools' schemas (the AI SDK), nor the YAML of its skills.
    expect(loaded(modules, '/src/app/boot-cartridge.ts')).toEqual([]);
    expect(loaded(modules, '/src/contract/').filter((url) => !url.endsWith('/src/contract/boot-refusal.ts'))).toEqual([]);
    expect(loaded(modules, '/src/tools/registry.ts')).toEqual([]);
    expect(loaded(modules, 'node_modules/ai/')).toEqual([]);
    expect(loaded(modules, 'node_modules/ajv/')).toEqual([]);
    expect(loaded(modules, 'node_modules/yaml/')).toEqual([]);
    // A directory is no cartridge: no container, signature or trust code (loaded for a cartridge only).
    expect(loaded(modules, '/src/app/load-cartridge.ts')).toEqual([]);
    expect(loaded(modules, '/src/cartridge/')).toEqual([]);
    // agent.json's schema is plain checks: reading the definition loads no schema library.
    expect(loaded(modules, 'node_modules/zod/')).toEqual([]);
    // Nothing is hashed or made random for an event already answered: node:crypto stays unloaded.
    expect(loaded(modules, 'node-internal:internal/process/')).not.toEqual([]); // the internal list is there
    expect(modules.filter((url) => url === 'node-internal:crypto' || url === 'node:crypto')).toEqual([]);
  });

  it('acx acp answers initialize before it loads the engine, a model provider, the tools or MCP', async () => {
    const home = tempDir();
    const trace = moduleTrace();
    const acx = startAcxAcp({ home, modelBaseURL: 'http://127.0.0.1:9/v1', env: { ...trace.env, ACX_RUN_FROM: 'src' } });
    try {
      const init = await acx.initialize();
      expect(init.agentCapabilities?.loadSession).toBe(true);
      expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true);
      // The agent prepared after the answer serves the session.
      const session = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
      expect(session.sessionId).toBeTruthy();
    } finally {
      expect(await acx.close()).toBe(0);
    }
    const lines = trace.lines();
    const answered = lines.indexOf('first stdout write');
    expect(answered).toBeGreaterThan(0);
    const beforeAnswer = lines.slice(0, answered);
    expect(loaded(lines, '/src/engine/engine.ts')).toHaveLength(1); // the trace works: the engine loaded for the session
    expect(loaded(beforeAnswer, '/src/engine/engine.ts')).toEqual([]);
    expect(loaded(beforeAnswer, '/src/app/prepare.ts')).toEqual([]);
    expect(loaded(beforeAnswer, '/src/frontends/acp-server/server.ts')).toEqual([]);
    expect(loaded(beforeAnswer, '/src/tools/registry.ts')).toEqual([]);
    expect(loaded(beforeAnswer, 'node_modules/ai/')).toEqual([]);
    expect(loaded(beforeAnswer, 'node_modules/@ai-sdk/')).toEqual([]);
    expect(loaded(beforeAnswer, 'node_modules/@modelcontextprotocol/')).toEqual([]);
  });
});
