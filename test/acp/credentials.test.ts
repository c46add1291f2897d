import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createACP } from '../../src/acp/create.ts';
import { createCredentialRequestTransformation } from '../../src/acp/credential-proxy.ts';
import { createLocalSandbox } from '../../src/acp/sandbox.ts';
import { HarnessAgent } from '../../src/agent/harness-agent.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const REAL = 'sk-ant-REAL-secret-value-42';
let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer({ fallback: { text: 'ok' } });
});
afterAll(async () => server.close());

function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesBelow(path));
    else out.push(path);
  }
  return out;
}

describe('credential brokering through the loopback proxy', () => {
  it('gives the agent a placeholder and a proxy URL; the upstream gets the real key only for the exact placeholder', async () => {
    const sandboxRoot = tempCache();
    const harness = createACP(
      fakeProfile(tempCache(), {
        hostEnv: { FAKE_BASE_URL: server.url, FAKE_API_KEY: REAL, UNRELATED_SECRET: 'do-not-forward' },
        forwardEnv: ['FAKE_BASE_URL'],
        credentialEnv: ['FAKE_API_KEY'],
        credentialBrokering: ({ env, sandboxEnv }) => [
          createCredentialRequestTransformation({ matchUrl: env.FAKE_BASE_URL!, matchHeaders: { 'x-api-key': sandboxEnv.FAKE_API_KEY! }, transformHeaders: { 'x-api-key': env.FAKE_API_KEY! }, baseUrlEnv: 'FAKE_BASE_URL' }),
        ],
        homeFiles: ({ env }) => ({ '.fake/config.json': JSON.stringify({ base: env.FAKE_BASE_URL, key: env.FAKE_API_KEY }) }),
        sandbox: createLocalSandbox({ root: sandboxRoot, keep: true }),
      }),
    );
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession();
    try {
      const seen = JSON.parse((await agent.generate({ session, prompt: '[[env]]' })).text) as { env: Record<string, string>; argv: string[] };
      expect(JSON.stringify(seen)).not.toContain(REAL);
      expect(seen.env.UNRELATED_SECRET).toBeUndefined();
      expect(seen.env.FAKE_API_KEY).toMatch(/^acx-placeholder-/);
      expect(seen.env.FAKE_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/r\/0$/);
      expect(seen.env.FAKE_BASE_URL).not.toBe(server.url);
      expect(seen.env.HOME).toContain(sandboxRoot);
      for (const file of filesBelow(sandboxRoot)) expect(readFileSync(file, 'utf8')).not.toContain(REAL);

      const before = server.requests.length;
      const fetched = (await agent.generate({ session, prompt: '[[fetch:FAKE_BASE_URL,FAKE_API_KEY]]' })).text;
      expect(fetched).toBe('ok=200 bad=200');
      const [good, wrong] = server.requests.slice(before);
      expect(good!.headers['x-api-key']).toBe(REAL);
      expect(wrong!.headers['x-api-key']).toBe('acx-placeholder-wrong');
    } finally {
      await session.destroy();
      await harness.close!();
    }
  });

  it('forwards the real value, and says why, when a transformation names no way for the agent to reach the proxy', async () => {
    const logger = createMemoryLogger('info');
    const harness = createACP(
      fakeProfile(tempCache(), {
        hostEnv: { FAKE_API_KEY: REAL },
        credentialEnv: ['FAKE_API_KEY'],
        // No baseUrlEnv, and no launch variable holds the upstream: the agent would call the
        // upstream directly with a placeholder that nothing swaps.
        credentialBrokering: ({ env, sandboxEnv }) => [
          createCredentialRequestTransformation({ matchUrl: server.url, matchHeaders: { 'x-api-key': sandboxEnv.FAKE_API_KEY! }, transformHeaders: { 'x-api-key': env.FAKE_API_KEY! } }),
        ],
        logger,
      }),
    );
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession();
    try {
      const seen = JSON.parse((await agent.generate({ session, prompt: '[[env]]' })).text) as { env: Record<string, string> };
      expect(seen.env.FAKE_API_KEY).toBe(REAL);
      const warnings = logger.lines.filter((line) => line.startsWith('WARNING'));
      expect(warnings.join('\n')).toMatch(/acp credential transformation unreachable harness=fake-acp session=\S+ upstream=http:\/\/127\.0\.0\.1:\d+ hint="give it a baseUrlEnv/);
      expect(warnings.join('\n')).toMatch(/acp credential forwarded without brokering harness=fake-acp session=\S+ names=FAKE_API_KEY/);
      expect(warnings.join('\n')).not.toContain(REAL);
    } finally {
      await session.destroy();
      await harness.close!();
    }
  });

  it('forwards the real value only when no brokering is configured (legacy), and never unlisted variables', async () => {
    const harness = createACP(fakeProfile(tempCache(), { hostEnv: { FAKE_API_KEY: REAL, OTHER: 'x' }, credentialEnv: ['FAKE_API_KEY'] }));
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession();
    try {
      const seen = JSON.parse((await agent.generate({ session, prompt: '[[env]]' })).text) as { env: Record<string, string> };
      expect(seen.env.FAKE_API_KEY).toBe(REAL);
      expect(seen.env.OTHER).toBeUndefined();
    } finally {
      await session.destroy();
    }
  });
});
