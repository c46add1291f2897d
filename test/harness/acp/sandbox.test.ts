// The local sandbox of an ACP agent: with bubblewrap the fake agent runs confined (it cannot
// read a file planted outside its roots, nor reach a loopback listener that is not acx's) and
// still completes a turn through the credential broker; its other traffic goes through the
// broker's HTTP proxy under the network policy. Without confinement it runs as today, and says so.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectConfinement } from '../../../src/harness/acp/confinement.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createCredentialRequestTransformation, startCredentialProxy } from '../../../src/harness/acp/credential-proxy.ts';
import { connect as connectTcp } from 'node:net';
import { egressVerdict } from '../../../src/harness/acp/egress.ts';
import type { NetworkPolicy } from '../../../src/harness/acp/network-policy.ts';
import { parseNetworkPolicy, resolveNetworkPolicy } from '../../../src/harness/acp/network-policy.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const REAL = 'sk-sandbox-REAL-key-7';
const confinement = await detectConfinement({});
const bwrapMissing = confinement.kind !== 'bubblewrap';
if (bwrapMissing) console.warn(`SKIPPED test/harness/acp/sandbox.test.ts confined cases: ${confinement.reason}`);

let model: ModelServer;
let secretFile: string;
let bystander: TcpServer;
let bystanderPort: number;
let outside: Server;
let outsidePort: number;
beforeAll(async () => {
  model = await startModelServer({ fallback: { text: 'ok' } });
  secretFile = join(mkdtempSync(join(tmpdir(), 'acx-planted-')), 'secret.txt');
  writeFileSync(secretFile, 'the user\'s secret');
  // A loopback service of the host that is not acx's (another agent's bridge, a database…).
  bystander = createTcpServer((socket) => {
    socket.on('error', () => {}); // the agent hangs up at once
    socket.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => bystander.listen(0, '127.0.0.1', () => resolve()));
  bystanderPort = (bystander.address() as { port: number }).port;
  // A web server the agent might fetch through its proxy (named `localhost` in a host list).
  outside = createHttpServer((_req, res) => res.end('outside answered'));
  await new Promise<void>((resolve) => outside.listen(0, '127.0.0.1', () => resolve()));
  outsidePort = (outside.address() as { port: number }).port;
});
afterAll(async () => {
  await model.close();
  bystander.close();
  outside.close();
});

interface Probe {
  read: string;
  connect: string;
  egress: { status: number | string; body: string };
  model: number | string;
  uid: number;
}

async function probe(options: { networkPolicy?: NetworkPolicy; confine?: 'auto' | 'none'; logger?: ReturnType<typeof createMemoryLogger> }): Promise<Probe> {
  const harness = createACP(
    fakeProfile(tempCache(), {
      hostEnv: { FAKE_BASE_URL: model.url, FAKE_API_KEY: REAL },
      forwardEnv: ['FAKE_BASE_URL'],
      credentialEnv: ['FAKE_API_KEY'],
      credentialBrokering: ({ env, sandboxEnv }) => [
        createCredentialRequestTransformation({ matchUrl: env.FAKE_BASE_URL!, matchHeaders: { 'x-api-key': sandboxEnv.FAKE_API_KEY! }, transformHeaders: { 'x-api-key': env.FAKE_API_KEY! }, baseUrlEnv: 'FAKE_BASE_URL' }),
      ],
      sandbox: createLocalSandbox({ root: tempCache(), env: {}, ...(options.confine ? { confine: options.confine } : {}) }),
      ...(options.networkPolicy ? { networkPolicy: options.networkPolicy } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    }),
  );
  const agent = new HarnessAgent({ harness });
  const session = await agent.createSession();
  try {
    const before = model.requests.length;
    const text = (await agent.generate({ session, prompt: `[[confined:${secretFile},${bystanderPort},http://localhost:${outsidePort}/page]]` })).text;
    const answer = JSON.parse(text) as Probe;
    // The model call went through the broker, which swapped in the real key.
    if (answer.model === 200) expect(model.requests.slice(before).at(-1)!.headers['x-api-key']).toBe(REAL);
    return answer;
  } finally {
    await session.destroy();
    await harness.close!();
  }
}

describe.skipIf(bwrapMissing)('an ACP agent in the bubblewrap sandbox', () => {
  it('deny-all (the default): nothing outside its roots, no loopback but acx, no egress — and the turn still completes through the broker', async () => {
    const logger = createMemoryLogger('info');
    const seen = await probe({ logger });
    expect(seen.read).toBe('ENOENT');
    expect(seen.connect).toBe('ECONNREFUSED');
    expect(seen.model).toBe(200);
    expect(seen.uid).toBe(65534);
    expect(seen.egress.status).toBe(403);
    expect(seen.egress.body).toContain('acx sandbox: the connection to localhost was refused: the sandbox network policy is deny-all');
    expect(seen.egress.body).toContain('ACX_ACP_NETWORK_POLICY');
    expect(logger.lines.some((line) => line.includes('acp agent sandboxed') && line.includes('kind=bubblewrap') && line.includes('network=deny-all'))).toBe(true);
    expect(logger.lines.some((line) => line.includes('acp sandbox egress refused') && line.includes('host=localhost'))).toBe(true);
    expect(logger.lines.some((line) => line.includes('forwarded URL not brokered'))).toBe(false); // FAKE_BASE_URL is brokered
  });

  it('allow-all: the public internet through the broker, but still not the host\'s loopback services', async () => {
    const seen = await probe({ networkPolicy: 'allow-all' });
    expect(seen.read).toBe('ENOENT');
    expect(seen.connect).toBe('ECONNREFUSED');
    expect(seen.model).toBe(200);
    expect(seen.egress.status).toBe(403);
    expect(seen.egress.body).toMatch(/refused: Refused host localhost \(resolves to (127\.0\.0\.1|::1)\): .* is not a public address \(loopback\)/);
  });

  it('a host list: the listed hosts are reached through the broker, nothing else', async () => {
    const seen = await probe({ networkPolicy: { allow: ['localhost'] } });
    expect(seen.read).toBe('ENOENT');
    expect(seen.connect).toBe('ECONNREFUSED');
    expect(seen.model).toBe(200);
    expect(seen.egress).toEqual({ status: 200, body: 'outside answered' });
    const other = await probe({ networkPolicy: { allow: ['*.example.com'] } });
    expect(other.egress.status).toBe(403);
    expect(other.egress.body).toContain('it is not in the sandbox network policy (allow *.example.com)');
    expect(other.model).toBe(200);
  });
});

describe.skipIf(bwrapMissing)('a profile that forwards a base URL without brokering it', () => {
  it('is warned: the confined agent cannot reach a loopback URL except through the broker', async () => {
    const logger = createMemoryLogger('info');
    const harness = createACP(fakeProfile(tempCache(), { hostEnv: { OTHER_BASE_URL: model.url }, forwardEnv: ['OTHER_BASE_URL'], sandbox: createLocalSandbox({ root: tempCache(), env: {} }), logger }));
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession();
    try {
      expect((await agent.generate({ session, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
      const warning = logger.lines.find((line) => line.includes('acp sandbox: forwarded URL not brokered'));
      expect(warning).toContain('variable=OTHER_BASE_URL');
      expect(warning).toContain(`host=${new URL(model.url).host}`);
    } finally {
      await session.destroy();
      await harness.close!();
    }
  });
});

describe('an ACP agent without the sandbox', () => {
  it('runs as today (it can read the planted file and reach the host) and says so once, as a WARNING', async () => {
    const logger = createMemoryLogger('info');
    const seen = await probe({ confine: 'none', logger });
    expect(seen.read).toBe('ok');
    expect(seen.connect).toBe('ok');
    expect(seen.model).toBe(200);
    expect(seen.egress.status).toBe(200); // no proxy: the agent reaches the host directly
    const warnings = logger.lines.filter((line) => line.startsWith('WARNING') && line.includes('acp agent not sandboxed'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('confine: none');
  });
});

describe('the network policy', () => {
  it('is read from createACP, else ACX_ACP_NETWORK_POLICY, else deny-all', () => {
    expect(resolveNetworkPolicy(undefined, {})).toBe('deny-all');
    expect(resolveNetworkPolicy(undefined, { ACX_ACP_NETWORK_POLICY: 'allow-all' })).toBe('allow-all');
    expect(resolveNetworkPolicy(undefined, { ACX_ACP_NETWORK_POLICY: ' registry.npmjs.org, *.GitHub.com ' })).toEqual({ allow: ['registry.npmjs.org', '*.github.com'] });
    expect(resolveNetworkPolicy('deny-all', { ACX_ACP_NETWORK_POLICY: 'allow-all' })).toBe('deny-all');
    expect(() => parseNetworkPolicy('https://example.com/x')).toThrow(/invalid host "https:\/\/example.com\/x"/);
    expect(() => createACP(fakeProfile(tempCache(), { networkPolicy: 'open' as never }))).toThrow(/networkPolicy must be 'allow-all', 'deny-all' or \{ allow: \[hosts\] \}/);
  });

  it('allow-all passes public addresses only; a wildcard matches subdomains, not the bare name', async () => {
    const resolve = async (name: string) => (name === 'public.test' ? ['93.184.216.34'] : ['10.0.0.7']);
    expect(await egressVerdict({ policy: 'allow-all', resolve }, 'public.test')).toEqual({ allowed: true, address: '93.184.216.34' });
    expect(await egressVerdict({ policy: 'allow-all', resolve }, 'intranet.test')).toMatchObject({ allowed: false, reason: expect.stringContaining('not a public address (private)') });
    expect(await egressVerdict({ policy: 'allow-all', resolve }, '169.254.169.254')).toMatchObject({ allowed: false });
    const list: NetworkPolicy = { allow: ['*.example.com'] };
    expect(await egressVerdict({ policy: list }, 'api.example.com')).toEqual({ allowed: true });
    expect((await egressVerdict({ policy: list }, 'example.com')).allowed).toBe(false);
    expect((await egressVerdict({ policy: list }, 'evilexample.com')).allowed).toBe(false);
  });

  it('tunnels CONNECT (https) to an allowed host and answers a refused one with a 403 that says why', async () => {
    const proxy = await startCredentialProxy([], { egress: { policy: { allow: ['localhost'] } } });
    const tunnel = (authority: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connectTcp(proxy.port, '127.0.0.1');
        let seen = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          seen += chunk;
          // Once the tunnel stands, speak HTTP through it to the destination.
          if (seen === 'HTTP/1.1 200 Connection Established\r\n\r\n') socket.write('GET /page HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n');
        });
        socket.on('end', () => resolve(seen));
        socket.on('error', reject);
        socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`);
      });
    try {
      const allowed = await tunnel(`localhost:${outsidePort}`);
      expect(allowed).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK[\s\S]*outside answered$/);
      const refused = await tunnel(`127.0.0.1:${outsidePort}`);
      expect(refused).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
      expect(refused).toContain('acx sandbox: the connection to 127.0.0.1 was refused: it is not in the sandbox network policy (allow localhost)');
    } finally {
      await proxy.close();
    }
  });
});
