// The host's log lines for MCP clients: each session gets the lines its client's level admits
// (the host log's level until it chooses), scrubbed as the log scrubs them, and the host's own
// log is unchanged. The MCP SDK's client and server, linked in memory.
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { createHostToolServer } from '../../src/mcp/host-server.ts';
import { createClientLogFeed } from '../../src/mcp/client-log.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';

async function connected(feed: ReturnType<typeof createClientLogFeed>) {
  const host = createHostToolServer([], { name: 'acx', version: '0', clientLog: feed, logger: feed.logger });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await host.connect(serverSide);
  const client = new Client({ name: 't', version: '1' });
  const received: LoggingMessageNotification['params'][] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void received.push(n.params));
  await client.connect(clientSide);
  await client.ping(); // the server has seen the client's `initialized` by the time it answers
  return { client, received, close: () => host.close() };
}

/** Waits until `client` has handled everything sent before this (a ping's answer comes after). */
const settled = (client: Client) => client.ping();

describe('the host log, for MCP clients', () => {
  it("sends each session the lines at its client's level, scrubbed; until a client chooses, the host log's level", async () => {
    const hostLog = createMemoryLogger('warn');
    const feed = createClientLogFeed(hostLog);
    const first = await connected(feed);
    const second = await connected(feed);
    try {
      feed.logger.info('not yet', {});
      feed.logger.warn('provider refused', { detail: 'key sk-ant-api03-abcdefghijklmnopqrstuvwx was rejected' });
      await settled(first.client);
      expect(first.received).toEqual([{ level: 'warning', logger: 'acx', data: 'provider refused detail="key [REDACTED] was rejected"' }]);

      await first.client.setLoggingLevel('debug');
      feed.logger.child({ tool: 'memory_read' }).debug('mcp host call', { ok: true });
      await settled(first.client);
      await settled(second.client);
      expect(first.received.at(-1)).toEqual({ level: 'debug', logger: 'acx', data: 'mcp host call tool=memory_read ok=true' });
      expect(second.received.map((line) => line.data), 'the other session still wants warnings only').toEqual(['provider refused detail="key [REDACTED] was rejected"']);
      expect(hostLog.lines, "the host's own log keeps its level").toEqual(['WARNING provider refused detail="key [REDACTED] was rejected"']);

      await first.client.setLoggingLevel('error');
      feed.logger.warn('a warning', {});
      feed.logger.error('an error', {});
      await settled(first.client);
      expect(first.received.map((line) => line.data).slice(-1)).toEqual(['an error']);
      expect(first.received.some((line) => line.data === 'a warning')).toBe(false);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
