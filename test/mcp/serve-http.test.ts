// The Streamable HTTP server behind `acx mcp --http` (and an ACP agent's host tools), driven by a
// real HTTP client on 127.0.0.1: a browser page's Origin must be loopback or allowed (DNS-rebinding
// protection), a foreign Host is refused without leaving a session behind, sessions are capped,
// and an idle one is closed after the configured time.
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createHostToolServer, type HostToolServer } from '../../src/mcp/host-server.ts';
import { normalizedOrigin, originAllowed, serveHttp, type HttpServing, type ServeHttpOptions } from '../../src/mcp/serve.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { sampleHostTools } from '../fixtures/mcp/host-tools.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function serve(options: ServeHttpOptions = {}): Promise<{ host: HostToolServer; serving: HttpServing; logger: ReturnType<typeof createMemoryLogger> }> {
  const host = createHostToolServer(sampleHostTools(), { name: 'acx-host', version: '0.0.1' });
  const logger = createMemoryLogger('debug');
  const serving = await serveHttp(host, { port: 0, logger, ...options });
  cleanups.push(() => serving.close());
  return { host, serving, logger };
}

const PROTOCOL = '2025-06-18';
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'curl-like', version: '1' } } };

/** One request as a plain HTTP client sends it, its body read to the end (so the request is over). */
async function request(serving: HttpServing, init: { method?: string; session?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const response = await fetch(serving.url, {
    method: init.method ?? 'POST',
    headers: {
      authorization: `Bearer ${serving.token}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...(init.session ? { 'mcp-session-id': init.session, 'mcp-protocol-version': PROTOCOL } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  return { status: response.status, session: response.headers.get('mcp-session-id') ?? undefined, text: await response.text() };
}

const initialize = (serving: HttpServing, headers: Record<string, string> = {}) => request(serving, { body: INITIALIZE, headers });
const ping = (serving: HttpServing, session: string) => request(serving, { session, body: { jsonrpc: '2.0', id: 2, method: 'ping' } });

/** Holds the session's standing SSE stream (GET) open until released: the session is in use meanwhile. */
async function holdStream(serving: HttpServing, session: string): Promise<() => void> {
  const aborter = new AbortController();
  const response = await fetch(serving.url, {
    headers: { authorization: `Bearer ${serving.token}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL },
    signal: aborter.signal,
  });
  expect(response.status).toBe(200);
  const release = () => aborter.abort();
  cleanups.push(release);
  return release;
}

/** Waits until the server logs that `session` was closed, and returns that line. */
async function closedLine(logger: ReturnType<typeof createMemoryLogger>, session: string): Promise<string> {
  for (;;) {
    const line = logger.lines.find((l) => l.startsWith('INFO mcp http session closed') && l.includes(`session=${session}`));
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('acx mcp --http: Origin (DNS-rebinding protection)', () => {
  it('refuses a browser page from a foreign Origin with 403, token or not, and keeps no session; loopback origins, allowed ones and none are served', async () => {
    const { host, serving } = await serve({ allowedOrigins: ['https://app.example'] });
    for (const origin of ['http://evil.example', `http://evil.example:${serving.port}`, 'null', 'https://app.example.evil.example']) {
      const refused = await initialize(serving, { origin });
      expect(refused.status, origin).toBe(403);
      expect(JSON.parse(refused.text)).toEqual({
        jsonrpc: '2.0',
        error: { code: -32000, message: `Forbidden: a page from ${origin} may not use this server (DNS-rebinding protection): only pages on this machine, or origins it was started with --allow-origin for, may.` },
        id: null,
      });
    }
    expect((await request(serving, { headers: { origin: 'http://evil.example', authorization: 'Bearer wrong' }, body: INITIALIZE })).status).toBe(403);
    expect(host.connectionCount, 'no session was started for a refused page').toBe(0);

    for (const origin of [undefined, `http://127.0.0.1:${serving.port}`, 'http://localhost:6274', 'http://[::1]:3000', 'https://app.example']) {
      const served = await initialize(serving, origin ? { origin } : {});
      expect(served.status, origin ?? 'no Origin (a CLI client)').toBe(200);
      expect(served.session).toMatch(/^[0-9a-f-]{36}$/);
      // A session's later requests are checked too.
      expect((await request(serving, { session: served.session!, headers: { origin: 'http://evil.example' }, body: { jsonrpc: '2.0', id: 2, method: 'ping' } })).status).toBe(403);
    }
  });

  it('a foreign Host is refused (403) and leaves no session behind', async () => {
    const { host, serving } = await serve();
    const status = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify(INITIALIZE);
      const req = http.request(
        { host: '127.0.0.1', port: serving.port, path: '/mcp', method: 'POST', headers: { host: `evil.example:${serving.port}`, authorization: `Bearer ${serving.token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(403);
    expect(host.connectionCount).toBe(0);
  });

  it('origins are compared as a browser sends them; a bad --allow-origin value is a usage error', () => {
    const allowed = new Set(['https://app.example']);
    expect(originAllowed('https://app.example', allowed)).toBe(true);
    expect(originAllowed('http://app.example', allowed)).toBe(false);
    expect(originAllowed('http://127.0.0.9:1', allowed)).toBe(true);
    expect(originAllowed('http://127.0.0.1.evil.example', allowed)).toBe(false);
    expect(originAllowed('http://localhost.evil.example', allowed)).toBe(false);
    expect(originAllowed('file://', allowed)).toBe(false);
    expect(normalizedOrigin('https://App.Example:443')).toBe('https://app.example');
    for (const bad of ['app.example', 'https://app.example/path', 'ftp://app.example', 'https://app.example/']) {
      expect(() => normalizedOrigin(bad), bad).toThrow(expect.objectContaining({ code: 'usage', message: `"${bad}" is not a web origin` }));
    }
  });
});

describe('acx mcp --http: how many sessions, and for how long', () => {
  it('at the cap, the longest idle session is closed for a new one; with every session in use, a new one is refused (503)', async () => {
    const { serving, logger } = await serve({ maxSessions: 2, sessionIdleMs: 0 });
    const first = (await initialize(serving)).session!;
    const second = (await initialize(serving)).session!;
    expect((await ping(serving, second)).status).toBe(200); // now `first` is the longest idle
    const third = await initialize(serving);
    expect(third.status).toBe(200);
    expect(await closedLine(logger, first)).toContain('reason="the session cap (2) was reached and it was idle the longest"');
    expect((await ping(serving, first)).status, 'its client must initialize again').toBe(404);
    expect((await ping(serving, second)).status).toBe(200);

    // Both sessions hold their standing stream open: neither is idle, so a third is refused.
    await holdStream(serving, second);
    const releaseThird = await holdStream(serving, third.session!);
    const refused = await initialize(serving);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text).error.message).toBe(
      'Too many MCP sessions: all 2 are in use. Close one (DELETE /mcp with its Mcp-Session-Id) and initialize again, or serve with a higher --max-sessions.',
    );
    expect(logger.lines).toContain('WARNING mcp http session refused reason="all 2 sessions are in use"');
    // One lets go of its stream: its session is idle again, and makes room.
    releaseThird();
    let next = await initialize(serving);
    // Until the server has seen the stream close.
    while (next.status === 503) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      next = await initialize(serving);
    }
    expect(next.status).toBe(200);
    expect(await closedLine(logger, third.session!)).toContain('session cap (2)');
  });

  it('a session idle for the configured time is closed: its next request is 404, and a new session starts', async () => {
    const { host, serving, logger } = await serve({ sessionIdleMs: 200 });
    const session = (await initialize(serving)).session!;
    expect(host.connectionCount).toBe(1);
    // Waited for by the server's own word, not a guessed sleep.
    expect(await closedLine(logger, session)).toBe(`INFO mcp http session closed session=${session} reason="idle for 0.2 s"`);
    expect(host.connectionCount).toBe(0);
    expect((await ping(serving, session)).status).toBe(404);
    expect((await initialize(serving)).status).toBe(200);
  });

  it('a client that ends its session (DELETE) frees its place at once', async () => {
    const { host, serving } = await serve({ maxSessions: 1 });
    const session = (await initialize(serving)).session!;
    await holdStream(serving, session);
    expect((await request(serving, { method: 'DELETE', session })).status).toBe(200);
    expect(host.connectionCount).toBe(0);
    expect((await initialize(serving)).status).toBe(200);
  });

  it('a flood of requests without the token writes a few WARNING lines, then says how many it held back', async () => {
    const { serving, logger } = await serve();
    for (let i = 0; i < 40; i++) expect((await initialize(serving, { authorization: 'Bearer wrong-token-0000000000' })).status).toBe(403);
    await serving.close(); // writes the summary of the open window
    const lines = logger.lines.filter((line) => line.includes('mcp http unauthorized'));
    expect(lines).toHaveLength(6);
    expect(lines.slice(0, 5).every((line) => line.startsWith('WARNING mcp http unauthorized method=POST path=/mcp'))).toBe(true);
    expect(lines[5]).toMatch(/^WARNING mcp http unauthorized suppressed=35 window=60\.00s/);
  });
});
