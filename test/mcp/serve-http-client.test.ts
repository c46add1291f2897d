// The MCP SDK's own client against the Streamable HTTP server behind `acx mcp --http`, on
// 127.0.0.1: a client whose SSE stream drops mid-call reconnects with Last-Event-ID and gets the
// result it missed; a client with an OAuth provider that comes without the token is told which
// token to send, and starts no OAuth flow.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHostToolServer } from '../../src/mcp/host-server.ts';
import { serveHttp, TOKEN_REQUIRED, type HttpServing } from '../../src/mcp/serve.ts';
import type { Tool } from '../../src/tools/tool.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A promise with its resolver, to wait on an event. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

async function serve(tools: Tool[]): Promise<HttpServing> {
  const host = createHostToolServer(tools, { name: 'acx-host', version: '0.0.1' });
  const serving = await serveHttp(host, { port: 0 });
  cleanups.push(() => serving.close());
  return serving;
}

describe('acx mcp --http: resumable SSE', () => {
  it('a client whose stream drops mid-call reconnects with Last-Event-ID and gets the result it missed', async () => {
    const started = signal();
    const release = signal();
    const slow: Tool<{ n: number }> = {
      name: 'slow_square',
      description: 'Squares n once released.',
      inputSchema: z.object({ n: z.number() }),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: async ({ n }) => {
        started.resolve();
        await release.promise;
        return `${n * n}`;
      },
    };
    const serving = await serve([slow]);

    // The client's network, as the SDK sees it: the test can drop the call's SSE stream (both
    // ends see the connection go) once its first event — the one that carries an id — arrived.
    const firstEvent = signal();
    let drop: (() => void) | undefined;
    const resumedFrom: string[] = [];
    const network: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      const lastEventId = headers.get('last-event-id');
      if (lastEventId) resumedFrom.push(lastEventId);
      const response = await fetch(input, init);
      const body = response.body;
      const isCall = init?.method === 'POST' && String(init.body).includes('"tools/call"');
      if (!isCall || !body || !response.headers.get('content-type')?.includes('text/event-stream')) return response;
      const upstream = body.getReader();
      const cut = new AbortController();
      drop = () => {
        cut.abort();
        void upstream.cancel();
      };
      const relayed = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const dropped = new Promise<'dropped'>((resolve) => cut.signal.addEventListener('abort', () => resolve('dropped')));
          const next = await Promise.race([upstream.read(), dropped]);
          if (next === 'dropped') return controller.error(new TypeError('network connection lost'));
          if (next.done) return controller.close();
          controller.enqueue(next.value);
          firstEvent.resolve();
        },
      });
      return new Response(relayed, { status: response.status, headers: response.headers });
    };

    const client = new Client({ name: 'resuming-client', version: '1.0.0' });
    // Retries to spare: a reconnection the server answers before it has seen the drop is refused (409) and tried again.
    const reconnectionOptions = { maxRetries: 20, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 };
    await client.connect(new StreamableHTTPClientTransport(new URL(serving.url), { fetch: network, reconnectionOptions, requestInit: { headers: { Authorization: `Bearer ${serving.token}` } } }));
    cleanups.push(() => client.close());

    const call = client.callTool({ name: 'slow_square', arguments: { n: 12 } });
    await Promise.all([started.promise, firstEvent.promise]);
    drop!();
    release.resolve();
    expect(await call).toEqual({ content: [{ type: 'text', text: '144' }] });
    expect(resumedFrom.length, 'the client resumed').toBeGreaterThan(0);
    expect(new Set(resumedFrom).size, 'from the id of the one event it had').toBe(1);
    expect(resumedFrom[0]).toMatch(/^\d+$/);
  });
});

describe('acx mcp --http: a request without the token', () => {
  it('is told which token to send (403, no WWW-Authenticate), and an OAuth-capable client starts no OAuth flow', async () => {
    const serving = await serve([]);
    const asked: string[] = [];
    const oauth: OAuthClientProvider = {
      get redirectUrl() {
        return 'http://127.0.0.1:1/callback';
      },
      get clientMetadata() {
        return { redirect_uris: ['http://127.0.0.1:1/callback'], client_name: 'test' };
      },
      clientInformation: () => void asked.push('clientInformation'),
      tokens: () => undefined,
      saveTokens: () => void asked.push('saveTokens'),
      redirectToAuthorization: () => void asked.push('redirectToAuthorization'),
      saveCodeVerifier: () => void asked.push('saveCodeVerifier'),
      codeVerifier: () => 'verifier',
    };
    const requested: string[] = [];
    const network: typeof fetch = async (input, init) => {
      requested.push(`${init?.method ?? 'GET'} ${new URL(String(input instanceof Request ? input.url : input)).pathname}`);
      return fetch(input, init);
    };
    const client = new Client({ name: 'oauth-capable', version: '1.0.0' });
    const failure = await client.connect(new StreamableHTTPClientTransport(new URL(serving.url), { authProvider: oauth, fetch: network })).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toBe(`Streamable HTTP error: Error POSTing to endpoint: ${JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: TOKEN_REQUIRED }, id: null })}`);
    expect(asked, 'no step of an OAuth flow').toEqual([]);
    expect(requested).toEqual(['POST /mcp']);
    // The message names the token and where it comes from; nothing in it reads as an auth challenge.
    expect(TOKEN_REQUIRED).toContain('Authorization: Bearer <token>');
    expect(TOKEN_REQUIRED).toContain('--token-file');
    expect(TOKEN_REQUIRED).toContain('ACX_MCP_TOKEN');
    expect(TOKEN_REQUIRED).not.toMatch(/401|unauthori[sz]ed/i);

    const bare = await fetch(serving.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(bare.status).toBe(403);
    expect(bare.headers.get('www-authenticate')).toBeNull();
    // An OAuth client that looks for authorization metadata learns there is none.
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server']) {
      const probe = await fetch(new URL(path, serving.url));
      expect(probe.status, path).toBe(404);
      expect(((await probe.json()) as { error: { message: string } }).error.message).toBe('Not found: this acx MCP server does not use OAuth; it takes a bearer token (Authorization: Bearer <token>).');
    }
  });
});
