import type { Logger } from '../util/logger.ts';
import { silentLogger } from '../util/logger.ts';
import type { McpConnection } from './client.ts';
import type { McpServerConfig } from './config.ts';

/** Connects an agent's MCP servers (connectMcpServers, or a kept connection standing in for it). */
export type McpConnector = (configs: readonly McpServerConfig[]) => Promise<McpConnection>;

/** How long a kept server has to list its tools again before it is started again. */
const CHECK_TIMEOUT_MS = 2_000;

interface Idle {
  connection: McpConnection;
  generation: number;
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
 * - Handed out again only if every server started, is still connected and was never started
 *   again (so each connection begins with all its restarts, server-link.ts), no call to it was
 *   given up while it may still be running, and it lists the same tools when asked again (a
 *   server that died a moment ago, hangs, or changed its tools is closed, and the event connects
 *   afresh).
 * - `closeIdle()` (the agent's files changed) retires every connection made before it, idle or
 *   in use: those in use are closed when given back.
 * - Idle ones are closed after `idleMs`, the oldest first beyond `maxIdle`, and all on close().
 */
export class KeptMcpConnections {
  private readonly idle = new Map<string, Idle[]>();
  private readonly idleMs: number;
  private readonly maxIdle: number;
  private readonly logger: Logger;
  private generation = 0;
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
      const generation = this.generation;
      const connection = (await this.takeIdle(slot)) ?? (await connect(configs));
      // Servers switched off in their config are skipped every time; every other one must have started.
      const started = () => configs.every((config) => config.disabled || connection.servers.some((server) => server.name === config.name && server.status === 'ok'));
      let given = false;
      return {
        tools: connection.tools,
        servers: connection.servers,
        alive: () => !given && connection.alive(),
        unchanged: async (timeoutMs) => !given && (await connection.unchanged(timeoutMs)),
        close: async () => {
          if (given) return;
          given = true;
          await this.giveBack(slot, connection, generation, started());
        },
      };
    };
  }

  /** Closes every kept connection; later give-backs close theirs. */
  async close(): Promise<void> {
    this.closed = true;
    await this.closeIdle();
  }

  /** Retires every connection made so far: idle ones close now, those in use when given back. */
  async closeIdle(): Promise<void> {
    this.generation += 1;
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

  private async takeIdle(slot: string): Promise<McpConnection | undefined> {
    const list = this.idle.get(slot);
    while (list && list.length > 0) {
      // Taken off the list before the check is awaited: no other event can take it meanwhile.
      const entry = list.pop()!;
      clearTimeout(entry.timer);
      if (list.length === 0 && this.idle.get(slot) === list) this.idle.delete(slot);
      if (entry.generation === this.generation && (await entry.connection.unchanged(CHECK_TIMEOUT_MS))) return entry.connection;
      this.logger.info('mcp connection closed', { reason: 'a kept server no longer answers as it did; starting it again' });
      void entry.connection.close();
    }
    return undefined;
  }

  private async giveBack(slot: string, connection: McpConnection, generation: number, started: boolean): Promise<void> {
    const keepable = !this.closed && generation === this.generation && started && connection.alive();
    if (!keepable) {
      await connection.close();
      return;
    }
    const entry: Idle = { connection, generation, timer: setTimeout(() => this.expire(slot, entry), this.idleMs) };
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
      // Not awaited: closing a stdio server can take seconds, and this event's wake has ended.
      void evicted.connection.close();
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
