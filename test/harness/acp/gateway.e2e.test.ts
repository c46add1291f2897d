// AI Gateway authentication with the real agents: with only AI_GATEWAY_API_KEY and
// AI_GATEWAY_BASE_URL set (no provider key), acx picks Gateway mode, launches the agent with the
// profile's Gateway environment, brokers the Gateway key like any other credential, and the
// agent's requests reach the Gateway (here the local model server) with that key and acx's
// client attribution.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ACPHarness } from '../../../src/harness/acp/create.ts';
import { createClaudeCodeACP } from '../../../src/harness/acp/profiles/factories.ts';
import { createCodexACP } from '../../../src/harness/acp/profiles/factories.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import type { PermissionMode } from '../../../src/tools/permission.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';
import { scaled } from '../../support/time-scale.ts';

const GATEWAY_KEY = 'vck-gateway-e2e-0123456789abcdef';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer({ fallback: { text: 'PONG through the gateway' } });
});
afterAll(async () => server?.close());

const agents: Array<{ name: string; harness: () => ACPHarness; permissionMode: PermissionMode; key: (headers: Record<string, string | undefined>) => string | undefined }> = [
  {
    name: 'Claude Code',
    harness: () => createClaudeCodeACP({ hostEnv: { AI_GATEWAY_API_KEY: GATEWAY_KEY, AI_GATEWAY_BASE_URL: server.url }, progress: null }),
    permissionMode: 'allow-reads',
    key: (headers) => headers['x-api-key'] ?? headers.authorization,
  },
  {
    name: 'Codex',
    harness: () => createCodexACP({ hostEnv: { AI_GATEWAY_API_KEY: GATEWAY_KEY, AI_GATEWAY_BASE_URL: server.url }, progress: null }),
    permissionMode: 'allow-all',
    key: (headers) => headers.authorization,
  },
];

describe('AI Gateway authentication (real agents, the local model server as the Gateway)', { timeout: scaled(180_000) }, () => {
  for (const { name, harness: make, permissionMode, key } of agents) {
    it(`${name}: no provider key, only the Gateway's; a turn goes through the Gateway with its key`, async () => {
      const harness = make();
      await harness.bootstrap();
      const agent = new HarnessAgent({ harness, permissionMode });
      const session = await agent.createSession();
      const before = server.requests.length;
      try {
        const result = await agent.generate({ session, prompt: 'Reply with pong.' });
        expect(result.text).toContain('PONG through the gateway');
        const upstream = server.requests.slice(before);
        expect(upstream.length).toBeGreaterThan(0);
        for (const request of upstream) expect(key(request.headers)).toContain(GATEWAY_KEY);
        if (name === 'Codex') expect(upstream.at(-1)!.headers['x-client-app']).toMatch(/^acx\/harness-acp\/\d/);
      } finally {
        await session.destroy();
        await harness.close?.();
      }
    });
  }
});
