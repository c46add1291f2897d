import type { Logger } from '../util/logger.ts';
import { silentLogger } from '../util/logger.ts';
import type { McpConnection } from './client.ts';
import type { McpServerConfig } from './config.ts';

/** Connects an agent's MCP servers (connectMcpServers, or a kept connection standing in for it). */
export type McpConnector = (configs: readonly McpServerConfig[]) => Promise<McpConnection>;

/** How long a kept server has to answer its ping before it is started again. */
const PING_TIMEOUT_MS = 2_000;

interface Idle {
  connection: McpConnection;
  timer: NodeJS.Timeout;
}

/**
 * MCP connections a long-lived process keeps between the events it answers, so an agent's next
 * event on the same conversation does not start its servers again (a stdio server is a process:
 * starting it and its handshake cost more than a whole answer does). `acx worker` keeps one per
 * timeline: an event's wake takes the timeline's connection, and gives it back when it ends.
 *
 * - A connection serves one wake at a time: two wakes at once get two connections, so a server
 *   never sees two conversations interleaved, as it never did with one connection per event.
 * - Kept per key (the conversation) and per server configuration: a changed drop-in connects anew.
 * - Only a connection whose every server started and is still connected is kept or handed out
 *   again; one whose server exited or was skipped is closed, and the next wake connects afresh.
 * - Idle ones are closed after `idleMs`, the oldest first beyond `maxIdle`, and all on close().
 */
export class KeptMcpConnections {
  private readonly idle = new Map<string, Idle[]>();
  private readonly idleMs: number;
  private readonly maxIdle: number;
  private readonly logger: Logger;
  private closed = false;

  constructor(options: { idleMs?: number; maxIdle?: number; logger?: Logger } = {}) {
    this.idleMs = options.idleMs ?? 5 * 60_000;
    this.maxIdle = options.maxIdle ?? 16;
    this.logger = options.logger ?? silentLogger;
  }

  /** A connector for one conversation: `connect` opens a connection when none is kept for it. */
  connector(key: string, connect: McpConnector): McpConnector {
    return async (configs) => {
      const slot = `${key}\n${JSON.stringify(configs)}`;
      const kept = await this.takeIdle(slot);
      const connection = kept ?? (await connect(configs));
      // Servers switched off in their config are skipped every time; every other one must have started.
      const started = () => configs.every((config) => config.disabled || connection.servers.some((server) => server.name === config.name && server.status === 'ok'));
      let given = false;
      return {
        tools: connection.tools,
        servers: connection.servers,
        alive: () => !given && connection.alive(),
        responsive: async (timeoutMs) => !given && (await connection.responsive(timeoutMs)),
        close: async () => {
          if (given) return;
          given = true;
          await this.giveBack(slot, connection, started());
        },
      };
    };
  }

  /** Closes every kept connection; later give-backs close theirs. */
  async close(): Promise<void> {
    this.closed = true;
    await this.closeIdle();
  }

  /** Closes the connections kept idle now (those in use are kept when given back). */
  async closeIdle(): Promise<void> {
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    for (const entry of all) clearTimeout(entry.timer);
    await Promise.allSettled(all.map((entry) => entry.connection.close()));
  }

  /** How many connections are kept idle (for tests and logs). */
  get size(): number {
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }

  /**
   * An idle connection for `slot` whose servers still answer (a ping each: a server killed a
   * moment ago may not have been noticed yet, and the ping costs far less than a start).
   */
  private async takeIdle(slot: string): Promise<McpConnection | undefined> {
    const list = this.idle.get(slot);
    while (list && list.length > 0) {
      const entry = list.pop()!;
      clearTimeout(entry.timer);
      if (list.length === 0) this.idle.delete(slot);
      if (await entry.connection.responsive(PING_TIMEOUT_MS)) return entry.connection;
      this.logger.info('mcp connection closed', { reason: 'a kept server no longer answers; starting it again' });
      void entry.connection.close();
    }
    return undefined;
  }

  private async giveBack(slot: string, connection: McpConnection, started: boolean): Promise<void> {
    const keepable = !this.closed && started && connection.alive();
    if (!keepable) {
      await connection.close();
      return;
    }
    const entry: Idle = { connection, timer: setTimeout(() => this.expire(slot, entry), this.idleMs) };
    entry.timer.unref();
    const list = this.idle.get(slot) ?? [];
    list.push(entry);
    // Most recently used last: a slot given back moves to the end of the eviction order.
    this.idle.delete(slot);
    this.idle.set(slot, list);
    while (this.size > this.maxIdle) {
      const [oldest, entries] = this.idle.entries().next().value!;
      const evicted = entries.shift()!;
      if (entries.length === 0) this.idle.delete(oldest);
      clearTimeout(evicted.timer);
      this.logger.debug('mcp connection closed', { reason: 'more idle connections than kept' });
      await evicted.connection.close();
    }
  }

  private expire(slot: string, entry: Idle): void {
    const list = this.idle.get(slot);
    const at = list?.indexOf(entry) ?? -1;
    if (!list || at < 0) return;
    list.splice(at, 1);
    if (list.length === 0) this.idle.delete(slot);
    this.logger.debug('mcp connection closed', { reason: `idle for ${Math.round(this.idleMs / 1000)} s` });
    void entry.connection.close();
  }
}
