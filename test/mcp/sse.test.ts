import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServers } from '../../src/mcp/client.ts';
import { parseMcpServerEntry } from '../../src/mcp/config.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { startHttpFixture } from '../fixtures/mcp/http-server.ts';
import { startSseFixture } from '../fixtures/mcp/sse-server.ts';
import { byName, context } from './helpers.ts';

/** A server of the older HTTP+SSE transport: named as such, or found out by the 4xx its endpoint gives Streamable HTTP. */
describe('the legacy HTTP+SSE transport', () => {
  let sse: Awaited<ReturnType<typeof startSseFixture>>;
  beforeAll(async () => {
    sse = await startSseFixture();
  });
  afterAll(async () => {
    await sse?.close();
  });

  it('"type": "sse" connects over SSE straight away and its tools work', async () => {
    const before = sse.streamablePosts();
    const connection = await connectMcpServers([parseMcpServerEntry('legacy', { type: 'sse', url: sse.url }, 'test:legacy', process.cwd())], { timeoutMs: 10_000 });
    try {
      expect(connection.servers[0]).toMatchObject({ status: 'ok', transport: 'sse', toolCount: 8, serverInfo: { name: 'fixture-sse' } });
      expect(await byName(connection.tools, 'legacy__add').execute!({ a: 2, b: 3 }, context())).toMatchObject({ structuredContent: { sum: 5 } });
      expect(sse.streamablePosts()).toBe(before);
    } finally {
      await connection.close();
    }
  });

  it('a plain "url" server that answers Streamable HTTP with 405 is tried again over SSE, and says so', async () => {
    const logger = createMemoryLogger('debug');
    const before = sse.streamablePosts();
    const connection = await connectMcpServers([parseMcpServerEntry('auto', { url: sse.url }, 'test:auto', process.cwd())], { timeoutMs: 10_000, logger });
    try {
      expect(connection.servers[0]).toMatchObject({ status: 'ok', transport: 'sse', toolCount: 8 });
      expect(sse.streamablePosts()).toBe(before + 1);
      expect(logger.lines.find((line) => line.startsWith('INFO mcp server falls back to sse'))).toContain('server=auto reason="failed to start or initialize: HTTP 405: Streamable HTTP error: Error POSTing to endpoint: Method Not Allowed"');
      expect(await byName(connection.tools, 'auto__echo').execute!({ text: 'old' }, context())).toBe('echo: old');
    } finally {
      await connection.close();
    }
  });

  it('a server that speaks neither is skipped with both reasons; a 401 is never taken for an old server', async () => {
    const http = await startHttpFixture({ token: 'the-right-token-123' });
    try {
      const nowhere = `${sse.url.replace(/\/sse$/, '')}/nothing`;
      const connection = await connectMcpServers(
        [parseMcpServerEntry('nowhere', { url: nowhere }, 'test:nowhere', process.cwd()), parseMcpServerEntry('locked', { url: http.url, headers: { Authorization: 'Bearer wrong-token-456' } }, 'test:locked', process.cwd())],
        { timeoutMs: 10_000 },
      );
      const [nowhereStatus, locked] = connection.servers;
      expect(nowhereStatus).toMatchObject({ status: 'skipped', transport: 'http' });
      expect(nowhereStatus!.reason).toBe(
        'failed to start or initialize: HTTP 405: Streamable HTTP error: Error POSTing to endpoint: Method Not Allowed; the legacy SSE transport failed too: failed to start or initialize: SSE error: Non-200 status code (405)',
      );
      expect(locked!.reason).toMatch(/^failed to start or initialize: HTTP 401: /);
      expect(locked!.reason).not.toContain('SSE');
      await connection.close();
    } finally {
      await http.close();
    }
  });
});
