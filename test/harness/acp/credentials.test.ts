import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createServer as createTcpServer } from 'node:net';
import { createCredentialRequestTransformation, startCredentialProxy, type UpstreamDown } from '../../../src/harness/acp/credential-proxy.ts';
import { AcxError } from '../../../src/core/errors.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';
import { scaled } from '../../support/time-scale.ts';
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

/** A loopback URL nothing listens on (bound, then released). */
async function refusedUrl(): Promise<string> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('an upstream the credential broker cannot reach', { timeout: scaled(60_000) }, () => {
  const transformation = (upstream: string) =>
    createCredentialRequestTransformation({ matchUrl: upstream, matchHeaders: { 'x-api-key': 'placeholder' }, transformHeaders: { 'x-api-key': REAL }, baseUrlEnv: 'FAKE_BASE_URL' });

  it('fails the ACP turn, naming the URL the user configured (not the broker\'s port), while the agent would retry forever', async () => {
    const upstream = 'http://api.acx-test.invalid';
    const harness = createACP(
      fakeProfile(tempCache(), {
        hostEnv: { FAKE_BASE_URL: upstream, FAKE_API_KEY: REAL },
        forwardEnv: ['FAKE_BASE_URL'],
        credentialEnv: ['FAKE_API_KEY'],
        credentialBrokering: ({ env, sandboxEnv }) => [
          createCredentialRequestTransformation({ matchUrl: env.FAKE_BASE_URL!, matchHeaders: { 'x-api-key': sandboxEnv.FAKE_API_KEY! }, transformHeaders: { 'x-api-key': env.FAKE_API_KEY! }, baseUrlEnv: 'FAKE_BASE_URL' }),
        ],
      }),
    );
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession();
    try {
      const error = await agent.generate({ session, prompt: '[[call-model-retrying:FAKE_BASE_URL,FAKE_API_KEY]]' }).then(
        (result) => new Error(`the turn answered: ${result.text}`),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AcxError);
      expect((error as AcxError).code).toBe('acp-upstream-unreachable');
      expect((error as AcxError).message).toBe(
        'fake-acp cannot reach its model API at http://api.acx-test.invalid (FAKE_BASE_URL): the host name does not exist (DNS lookup failed).',
      );
      expect((error as AcxError).describe()).not.toMatch(/127\.0\.0\.1/);
      // The session is still usable: the agent was told to cancel, and the next turn runs.
      expect((await agent.generate({ session, prompt: '[[hello]]' })).text).toMatch(/Hello/);
    } finally {
      await session.destroy();
      await harness.close!();
    }
  });

  it('answers the agent with a 502 naming the configured upstream, and reports it down once failures outlast the window', async () => {
    const upstream = await refusedUrl();
    const downs: UpstreamDown[] = [];
    // The outage window: longer than a loaded machine takes from the first failure to the check after it.
    const downAfterMs = scaled(300);
    const proxy = await startCredentialProxy([transformation(upstream)], { onUpstreamDown: (d) => downs.push(d), downAfterMs });
    try {
      const route = proxy.routeFor(upstream)!;
      const response = await fetch(`${route}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'placeholder' }, body: '{}' });
      expect(response.status).toBe(502);
      expect(await response.json()).toEqual({ type: 'error', error: { type: 'api_error', message: `acx credential proxy: cannot reach ${upstream}: the connection was refused` } });
      expect(downs, 'one failure is not yet an outage').toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, downAfterMs + 100));
      await fetch(`${route}/v1/messages`, { method: 'POST', body: '{}' });
      expect(downs).toEqual([{ upstream, baseUrlEnv: 'FAKE_BASE_URL', reason: 'the connection was refused' }]);
    } finally {
      await proxy.close();
    }
  });

  it('an answer in between stops the clock: a blip is not an outage', async () => {
    let up = false;
    const downs: UpstreamDown[] = [];
    const flaky = createServer((req, res) => {
      if (up) res.end('ok');
      else req.socket.destroy();
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    const upstream = `http://127.0.0.1:${(flaky.address() as { port: number }).port}`;
    // Longer than a loaded machine takes from the failure to the answer after it.
    const downAfterMs = scaled(300);
    const proxy = await startCredentialProxy([transformation(upstream)], { onUpstreamDown: (d) => downs.push(d), downAfterMs });
    try {
      const route = proxy.routeFor(upstream)!;
      expect((await fetch(`${route}/x`)).status).toBe(502);
      up = true;
      expect((await fetch(`${route}/x`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2 * downAfterMs));
      expect(downs).toEqual([]);
    } finally {
      await proxy.close();
      flaky.closeAllConnections();
      await new Promise<void>((resolve) => flaky.close(() => resolve()));
    }
  });

  it('a connection that never completes (TLS never answered) times out instead of hanging', async () => {
    const accepted: Array<{ destroy(): void }> = [];
    const silent = createTcpServer((socket) => accepted.push(socket)); // accepts TCP, never speaks TLS
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const upstream = `https://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const proxy = await startCredentialProxy([transformation(upstream)], { connectTimeoutMs: 100 });
    try {
      const response = await fetch(`${proxy.routeFor(upstream)!}/x`);
      expect(response.status).toBe(502);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(`acx credential proxy: cannot reach ${upstream}: no connection within 0.1 s`);
    } finally {
      await proxy.close();
      for (const socket of accepted) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
