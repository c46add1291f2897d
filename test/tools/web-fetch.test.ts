import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { EventEmitter, once } from 'node:events';
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebFetchTool, webFetch, type WebFetchOptions } from '../../src/tools/builtin/web-fetch.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { NetGuardError, resolvePublicAddresses } from '../../src/util/net-guard.ts';
import { toolContext } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * A local TLS server (certificate from a test CA) stands in for public hosts: the injected
 * resolver maps names to public-looking addresses, the guard validates those, and the test-only
 * dial override connects the validated address to 127.0.0.1:<port>. Redirects the server sends
 * are re-validated by the real guard.
 */
const PUBLIC_IP = '93.184.215.14';
const OTHER_PUBLIC_IP = '93.184.215.15';

let server: https.Server;
let port = 0;
let ca = '';
const hits: string[] = [];
/** Responses the server left open on purpose (stalled bodies); ended in afterAll. */
const stalled: http.ServerResponse[] = [];
/** Emits 'stalled' once a stalling route has sent its first bytes. */
const serverEvents = new EventEmitter();
/** Resolves once web_fetch's client has received the response head for `path` (Node's http diagnostics channel). */
function responseReceived(path: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (message: unknown) => {
      if ((message as { request: { path: string } }).request.path !== path) return;
      unsubscribe('http.client.response.finish', listener);
      // Let web_fetch take the response up and start reading its body before the test goes on.
      setImmediate(resolve);
    };
    subscribe('http.client.response.finish', listener);
  });
}
/** What a stalling route sends: the first 20 bytes of a longer compressed body, then nothing. */
const STALLED_BODIES: Record<string, Buffer> = {
  gzip: zlib.gzipSync('stalled '.repeat(500)).subarray(0, 20),
  deflate: zlib.deflateSync('stalled '.repeat(500)).subarray(0, 20),
  br: zlib.brotliCompressSync('stalled '.repeat(500)).subarray(0, 20),
};
/** 2 MiB of ever deeper unclosed elements: quadratic work for the HTML parser. */
const NESTED_PAGE = '<html><body>' + '<div>'.repeat((2 * 1024 * 1024) / 5);
let resolverCalls: string[] = [];
let dialCalls: string[] = [];

const hosts: Record<string, string[]> = {
  'public.example': [PUBLIC_IP],
  'other.example': [OTHER_PUBLIC_IP],
  'internal.example': [PUBLIC_IP, '10.0.0.5'],
  'localhost': ['127.0.0.1', '::1'],
};

function options(extra: Partial<WebFetchOptions> = {}): WebFetchOptions {
  return {
    ca,
    resolve: async (hostname) => {
      resolverCalls.push(hostname);
      const found = hosts[hostname];
      if (!found) throw new Error(`ENOTFOUND ${hostname}`);
      return found;
    },
    unsafeDialForTests: (address, targetPort) => {
      dialCalls.push(`${address}:${targetPort}`);
      return { host: '127.0.0.1', port };
    },
    ...extra,
  };
}

beforeAll(async () => {
  const authority = await selfsigned.generate([{ name: 'commonName', value: 'acx test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
  const leaf = await selfsigned.generate([{ name: 'commonName', value: 'public.example' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca: { key: authority.private, cert: authority.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'public.example' },
          { type: 2, value: 'other.example' },
          { type: 2, value: 'internal.example' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  ca = authority.cert;
  server = https.createServer({ key: leaf.private, cert: leaf.cert }, (req, res) => {
    const route = req.url ?? '/';
    hits.push(`${req.headers.host}${route}`);
    const redirect = (location: string): void => {
      res.writeHead(302, { location });
      res.end();
    };
    const stall = /^\/stall\/(gzip|deflate|br)$/.exec(route);
    if (stall) {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': stall[1]! });
      res.write(STALLED_BODIES[stall[1]!]!, () => serverEvents.emit('stalled', route));
      stalled.push(res);
      return;
    }
    switch (route) {
      case '/corrupt-gzip':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        res.end('this was never gzip');
        return;
      case '/nested':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(NESTED_PAGE);
        return;
      case '/page':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<html><head><title>T</title><style>p{}</style></head><body><h1>Hello page</h1><p>Some <b>bold</b> prose.</p><img src="x.png"></body></html>');
        return;
      case '/big':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('A'.repeat(50_000) + 'THE-END');
        return;
      case '/png':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '2048' });
        res.end(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]), Buffer.alloc(2040, 7)]));
        return;
      case '/gzip':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync('compressed hello'));
        return;
      case '/to-loopback':
        return redirect(`https://127.0.0.1:${port}/secret`);
      case '/to-metadata':
        return redirect('http://169.254.169.254/latest/meta-data/');
      case '/to-metadata-https':
        return redirect('https://169.254.169.254/latest/meta-data/');
      case '/to-internal':
        return redirect('https://internal.example/secret');
      case '/to-mapped':
        return redirect(`https://[::ffff:127.0.0.1]:${port}/secret`);
      case '/to-other':
        return redirect('https://other.example/page');
      case '/loop':
        return redirect('/loop');
      case '/secret':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('INTERNAL SECRET');
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of stalled) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function reset(): void {
  hits.length = 0;
  resolverCalls = [];
  dialCalls = [];
}

describe('web_fetch reads public pages', () => {
  it('returns HTML reduced to readable text', async () => {
    reset();
    const result = await webFetch('https://public.example/page', options());
    expect(result.status).toBe(200);
    expect(result.text).toContain('HELLO PAGE');
    expect(result.text).toContain('Some bold prose.');
    expect(result.text).not.toContain('<b>');
    expect(result.text).not.toContain('p{}');
  });

  it('pins the connection to the validated address: one lookup, dialled at that address', async () => {
    reset();
    await webFetch('https://public.example/page', options());
    expect(resolverCalls).toEqual(['public.example']);
    expect(dialCalls).toEqual([`${PUBLIC_IP}:443`]);
  });

  it('follows a redirect to another public host, re-validating it', async () => {
    reset();
    const result = await webFetch('https://public.example/to-other', options());
    expect(result.url).toBe('https://other.example/page');
    expect(result.redirects).toEqual(['https://public.example/to-other']);
    expect(resolverCalls).toEqual(['public.example', 'other.example']);
    expect(dialCalls).toEqual([`${PUBLIC_IP}:443`, `${OTHER_PUBLIC_IP}:443`]);
  });

  it('decompresses a gzip body', async () => {
    reset();
    const result = await webFetch('https://public.example/gzip', options());
    expect(result.text).toBe('compressed hello');
  });

  it('cuts an oversize body and says so', async () => {
    reset();
    const tool = createWebFetchTool(options({ maxBytes: 1000 }));
    const registry = new ToolRegistry().register(tool);
    const run = await registry.run('web_fetch', { url: 'https://public.example/big' }, toolContext());
    expect(run.ok).toBe(true);
    const text = String(run.output);
    expect(text).toContain('A'.repeat(1000));
    expect(text).not.toContain('A'.repeat(1001));
    expect(text).not.toContain('THE-END');
    expect(text).toContain('[truncated');
  });

  it('describes a binary body instead of dumping it', async () => {
    reset();
    const result = await webFetch('https://public.example/png', options());
    expect(result.binary).toBe(true);
    expect(result.text).toBe('Binary content (image/png, 2048 bytes); not shown.');
  });

  it('rejects a certificate from an untrusted CA', async () => {
    reset();
    await expect(webFetch('https://public.example/page', options({ ca: undefined }))).rejects.toThrow(/failed: .*(certificate|issuer)/i);
  });
});

describe('web_fetch ends a call the server stalls or makes costly', () => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    it(`a ${encoding} body that stalls after 20 bytes ends with the timeout error`, { timeout: scaled(10_000) }, async () => {
      reset();
      const url = `https://public.example/stall/${encoding}`;
      const error = await webFetch(url, options({ timeoutMs: 1500 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NetGuardError);
      expect((error as Error).message).toBe(`Fetching ${url} timed out after 1.5 s.`);
    });

    it(`aborting the turn ends a call whose ${encoding} body stalls`, { timeout: scaled(10_000) }, async () => {
      reset();
      const url = `https://public.example/stall/${encoding}`;
      const turn = new AbortController();
      const registry = new ToolRegistry().register(createWebFetchTool(options({ timeoutMs: 60_000 })));
      const sent = once(serverEvents, 'stalled');
      const received = responseReceived(`/stall/${encoding}`);
      const run = registry.run('web_fetch', { url }, toolContext({ abortSignal: turn.signal }));
      await Promise.all([sent, received]);
      turn.abort();
      const outcome = await run;
      expect(outcome.ok).toBe(false);
      expect(String(outcome.output)).toBe(`web_fetch failed: Fetching ${url} was cancelled.`);
    });
  }

  it('a body that is not what its encoding says fails with a clear error', async () => {
    reset();
    await expect(webFetch('https://public.example/corrupt-gzip', options())).rejects.toThrow(
      /^Fetching https:\/\/public\.example\/corrupt-gzip failed while reading the body: incorrect header check$/,
    );
  });

  it('a 2 MiB deeply nested page ends at the timeout without blocking the event loop', { timeout: scaled(20_000) }, async () => {
    reset();
    const url = 'https://public.example/nested';
    let settled = false;
    let timerFiredWhilePending = false;
    // Well after the 2 MiB arrived (loopback), well before the timeout: the page is being converted.
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        timerFiredWhilePending = !settled;
        resolve();
      }, 1000),
    );
    const error = await webFetch(url, options({ timeoutMs: 3000 }))
      .catch((e: unknown) => e)
      .finally(() => (settled = true));
    await timer;
    expect(error).toBeInstanceOf(NetGuardError);
    expect((error as Error).message).toBe(`Fetching ${url} timed out after 3 s.`);
    expect(timerFiredWhilePending, 'a timer due during the conversion fired before the call ended').toBe(true);
  });
});

describe('web_fetch refuses SSRF attempts', () => {
  const refusals: Array<[string, string, RegExp]> = [
    ['a public URL that redirects to 127.0.0.1', 'https://public.example/to-loopback', /127\.0\.0\.1 is not a public address \(loopback\)/],
    ['a redirect to http://169.254.169.254', 'https://public.example/to-metadata', /only https/],
    ['a redirect to https://169.254.169.254', 'https://public.example/to-metadata-https', /169\.254\.169\.254 is not a public address \(linkLocal\)/],
    ['a redirect to a name with one private address', 'https://public.example/to-internal', /10\.0\.0\.5 is not a public address \(private\)/],
    ['a redirect to an IPv4-mapped IPv6 loopback', 'https://public.example/to-mapped', /ipv4Mapped/],
  ];
  for (const [label, url, message] of refusals) {
    it(`refuses ${label}, never requesting the target`, async () => {
      reset();
      await expect(webFetch(url, options())).rejects.toThrow(message);
      expect(hits.some((hit) => hit.endsWith('/secret'))).toBe(false);
    });
  }

  const literals = [
    'https://127.0.0.1/',
    'https://10.1.2.3/',
    'https://172.16.0.1/',
    'https://192.168.1.1/',
    'https://100.64.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://0.0.0.0/',
    'https://224.0.0.1/',
    'https://255.255.255.255/',
    'https://192.0.2.1/',
    'https://[::1]/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[::]/',
    'https://2130706433/', // decimal 127.0.0.1
    'https://0x7f000001/', // hex
    'https://0177.0.0.1/', // octal
    'https://0x7f.1/', // short hex
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/', // mapped 169.254.169.254
  ];
  for (const url of literals) {
    it(`refuses the private literal ${url}`, async () => {
      reset();
      const error = await webFetch(url, options()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NetGuardError);
      expect((error as Error).message).toMatch(/is not a public address/);
      expect(dialCalls).toEqual([]);
      expect(resolverCalls).toEqual([]);
    });
  }

  it('refuses http://', async () => {
    reset();
    await expect(webFetch('http://public.example/page', options())).rejects.toThrow(/only https URLs can be fetched/);
    expect(hits).toEqual([]);
  });

  it('refuses a name that resolves to loopback (system resolver, localhost)', async () => {
    await expect(resolvePublicAddresses('localhost')).rejects.toThrow(/is not a public address \(loopback\)/);
  });

  it('refuses a redirect loop after the hop limit', async () => {
    reset();
    await expect(webFetch('https://public.example/loop', options({ maxRedirects: 3 }))).rejects.toThrow(/more than 3 redirects/);
    expect(hits.length).toBe(4);
  });

  it('returns the refusal to the model as the tool result, not a crash', async () => {
    reset();
    const context = toolContext();
    const registry = new ToolRegistry().register(createWebFetchTool(options()));
    const run = await registry.run('web_fetch', { url: 'https://public.example/to-loopback' }, context);
    expect(run.ok).toBe(false);
    expect(String(run.output)).toMatch(/not a public address/);
    expect(context.logger.lines.some((line) => line.startsWith('WARNING tool_error tool=web_fetch'))).toBe(true);
  });

  it('reaches loopback only through the explicit test-only allow-list', async () => {
    reset();
    const result = await webFetch(`https://127.0.0.1:${port}/page`, {
      ca,
      unsafeAllowAddressesForTests: ['127.0.0.0/8'],
    });
    expect(result.text).toContain('HELLO PAGE');
  });
});
