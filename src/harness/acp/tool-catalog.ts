import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { HostToolServer } from '../../mcp/host-server.ts';
import type { Tool } from '../../tools/tool.ts';

/**
 * The host-tool catalog an ACP agent sees, and who is looking at an old one. `setTools` replaces
 * the tools (the host server sends `notifications/tools/list_changed` to every connection) and
 * bumps a catalog version. Every MCP connection is watched: a `tools/list` records which version
 * it has seen; a `tools/call` for a name the current catalog lacks is answered here with an error
 * result naming the current tools, and recorded. A call to a *removed* tool from a connection
 * that has not listed the tools since the change is a stale call: the agent ignored
 * `list_changed`, and the session fails the turn instead of letting a wrong answer through.
 */

export interface StaleToolCall {
  toolName: string;
  /** True when the connection had refetched tools/list after the last change (a model mistake, not a stale catalog). */
  refreshed: boolean;
  /** True when the tool was in an earlier catalog of this session. */
  removed: boolean;
  catalogVersion: number;
}

export interface ToolCatalog {
  /** The host server to serve: every connection it accepts is watched. */
  readonly host: HostToolServer;
  readonly version: number;
  names(): string[];
  /** Replaces the tool set; connected agents get `notifications/tools/list_changed`. */
  setTools(tools: readonly Tool[]): void;
  /** Calls to tools the current catalog lacks, since the last `drainMissingCalls()`. */
  drainMissingCalls(): StaleToolCall[];
  /** How many times any connection fetched tools/list (tests and diagnostics). */
  readonly listCount: number;
  /**
   * Resolves once every live connection that has listed the tools before has listed the current
   * catalog again (the agent handled list_changed), or after `timeoutMs`. Returns whether all did.
   */
  awaitRefresh(timeoutMs: number): Promise<boolean>;
}

export function missingToolMessage(toolName: string, current: readonly string[], removed: boolean): string {
  const catalog = current.length > 0 ? current.join(', ') : 'none';
  return removed
    ? `Tool "${toolName}" is no longer provided by the acx host: its tool catalog changed. Current tools: ${catalog}. Refetch tools/list before calling tools.`
    : `Tool "${toolName}" is not provided by the acx host. Current tools: ${catalog}.`;
}

export function createToolCatalog(host: HostToolServer): ToolCatalog {
  let version = 0;
  let listCount = 0;
  const everProvided = new Set(host.tools.map((t) => t.name));
  let missing: StaleToolCall[] = [];
  const current = () => host.tools.map((t) => t.name);
  const live = new Set<{ listedVersion: number | undefined }>();
  let waiters: Array<() => void> = [];
  const upToDate = () => [...live].every((c) => c.listedVersion === undefined || c.listedVersion === version);
  const notify = () => {
    if (!upToDate()) return;
    const ready = waiters;
    waiters = [];
    for (const w of ready) w();
  };

  // Called after the SDK Server connected (and set the transport's `onmessage`): messages pass
  // through `intercept` first. (The Node HTTP transport's `onmessage` is an accessor that
  // forwards to an inner transport, so it is wrapped by reading and re-assigning it.)
  function watch(transport: Transport): { listedVersion: number | undefined } {
    const conn = { listedVersion: undefined as number | undefined };
    let handler: Transport['onmessage'];
    const intercept = (message: JSONRPCMessage, extra?: unknown) => {
      const m = message as { id?: string | number; method?: string; params?: { name?: unknown } };
      if (m.method === 'tools/list' && m.id !== undefined) {
        conn.listedVersion = version;
        listCount++;
        notify();
      } else if (m.method === 'tools/call' && m.id !== undefined && typeof m.params?.name === 'string') {
        const name = m.params.name;
        const names = current();
        if (!names.includes(name)) {
          const removed = everProvided.has(name);
          missing.push({ toolName: name, refreshed: conn.listedVersion === version, removed, catalogVersion: version });
          void transport.send(
            { jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: missingToolMessage(name, names, removed) }], isError: true } } as JSONRPCMessage,
            { relatedRequestId: m.id },
          );
          return;
        }
      }
      (handler as ((message: JSONRPCMessage, extra?: unknown) => void) | undefined)?.(message, extra);
    };
    handler = transport.onmessage;
    transport.onmessage = intercept as Transport['onmessage'];
    return conn;
  }

  const wrapped: HostToolServer = {
    get name() {
      return host.name;
    },
    get tools() {
      return host.tools;
    },
    get connectionCount() {
      return host.connectionCount;
    },
    setTools: (tools) => host.setTools(tools),
    async connect(transport) {
      const server = await host.connect(transport);
      const conn = watch(transport);
      live.add(conn);
      const previous = server.onclose;
      server.onclose = () => {
        live.delete(conn);
        notify();
        previous?.();
      };
      return server;
    },
    close: () => host.close(),
  };

  return {
    host: wrapped,
    get version() {
      return version;
    },
    get listCount() {
      return listCount;
    },
    names: current,
    setTools(tools) {
      host.setTools(tools); // throws on a bad tool before anything changes
      version++;
      for (const t of tools) everProvided.add(t.name);
    },
    awaitRefresh(timeoutMs) {
      if (upToDate()) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== done);
          resolve(false);
        }, timeoutMs);
        timer.unref();
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiters.push(done);
      });
    },
    drainMissingCalls() {
      const out = missing;
      missing = [];
      return out;
    },
  };
}
