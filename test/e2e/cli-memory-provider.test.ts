import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, ROOT, runAcx, tempDir } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * Choosing memory from the outside: `acx resolved-config` reports the bound provider and its
 * package version, a bad spec fails with the reason (no stack trace), and `acx run` with the
 * semantic provider recalls an earlier session's exchange into the next turn, with embeddings
 * through the OpenAI provider against the local model server.
 */
/** `acx ARGS` with `extra` on a clean environment; state and config in `home`. */
const acx = (args: string[], home: string, extra: Record<string, string> = {}) => runAcx(args, { home, env: cleanEnv(extra) });

function agentAndHome(): { agent: string; home: string } {
  const base = tempDir('acx-memory-e2e-');
  const agent = join(base, 'agent');
  cpSync(join(ROOT, 'examples/notes-keeper'), agent, { recursive: true });
  const home = join(base, 'home');
  mkdirSync(home);
  return { agent, home };
}

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('choosing memory (e2e)', { timeout: scaled(120_000) }, () => {
  it('resolved-config reports the bound module provider and its package version; a bad spec exits with the reason', async () => {
    const { agent, home } = agentAndHome();
    mkdirSync(join(home, 'mem'));
    writeFileSync(join(home, 'mem', 'package.json'), JSON.stringify({ name: 'team-memory', version: '1.4.0', type: 'module' }));
    writeFileSync(
      join(home, 'mem', 'index.js'),
      "export const provider = { name: 'team-memory', tools: () => [], observe: async () => {}, context: async () => undefined, remember: async () => {}, close() {} };\n",
    );
    const ok = await acx(['resolved-config', agent], home, { ACX_MEMORY_PROVIDER: './mem/index.js#provider' });
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      memory_provider: 'team-memory',
      memory_provider_source: 'env',
      memory_provider_package: 'team-memory',
      memory_provider_version: '1.4.0',
      memory_embedding: null,
    });
    const builtin = JSON.parse((await acx(['resolved-config', agent], home, { ACX_MEMORY_PROVIDER: 'semantic' })).stdout);
    expect(builtin).toMatchObject({ memory_provider: 'semantic', memory_provider_version: null, memory_embedding: 'local-hash-128' });
    expect(builtin.tools).toContain('memory_search');
    expect(builtin.tools).not.toContain('memory_write');

    const bad = await acx(['resolved-config', agent], home, { ACX_MEMORY_PROVIDER: './mem/index.js#nope' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/has no export "nope" \(it exports: provider\)/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });

  it('acx run on semantic memory recalls an earlier session into the next turn, fenced and dated', async () => {
    const { agent, home } = agentAndHome();
    server = await startModelServer({ script: ['Noted: the sedan is on level 3.', 'It is on level 3.'] });
    const env = { OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: server.openaiBaseURL, ACX_MEMORY_PROVIDER: 'semantic' };
    const first = await acx(['run', agent, 'Remember that my sedan is parked in the garage on level 3', '--model', 'openai:demo-model'], home, env);
    expect(first.status, first.stderr).toBe(0);
    const second = await acx(['run', agent, 'Where did I park the sedan?', '--model', 'openai:demo-model'], home, env);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('It is on level 3.');
    const sent = JSON.stringify(server.requests[1]!.body);
    expect(sent).toMatch(/<recalled-memory note=[^>]*>\\n\[\d{4}-\d\d-\d\d\] observed\/[^:]+: User: Remember that my sedan is parked in the garage on level 3 Agent: Noted: the sedan is on level 3\./);
    expect(JSON.stringify(server.requests[0]!.body)).not.toContain('recalled-memory');
    // The vectors came from the provider's embedding model, over the real OpenAI wire.
    expect(server.embeddingRequests.length).toBeGreaterThan(0);
    expect(new Set(server.embeddingRequests.map((request) => request.model))).toEqual(new Set(['text-embedding-3-small']));
  });
});
