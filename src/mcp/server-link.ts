import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AcxError, errorMessage } from '../core/errors.ts';
import type { ToolEffect } from '../core/tool.ts';
import { untilSettledOrAborted } from '../util/abortable.ts';
import type { Logger } from '../util/logger.ts';
import type { McpServerConfig } from './config.ts';
import type { ElicitationRouter } from './elicitation.ts';

/** How many times one connection starts a server again after it exited (one that keeps dying stays down). */
export const MAX_SERVER_RESTARTS = 3;

/** A tool as the server describes it (bridge.ts's McpToolDescriptor; only its name is read here). */
interface OfferedTool {
  name: string;
}

/** What a started server gives the link (client.ts's Connected, the fields the link uses). */
export interface LinkedConnection {
  client: Client;
  remote: OfferedTool[];
  disconnected(): boolean;
  /** Whether the server gave the connection a session (an HTTP server's 404 then means it forgot it). */
  inSession(): boolean;
  /** Who answers the server's questions; a server started again keeps it. */
  elicitations: ElicitationRouter;
  close(options?: { endSession?: boolean }): Promise<void>;
}

/** Starts the server again, its elicitations still answered by the same router; `signal` gives the start up. */
export type Reconnect = (restart: { elicitations: ElicitationRouter; signal: AbortSignal }) => Promise<LinkedConnection>;

/**
 * One drop-in server for the life of an McpConnection (a wake, or a worker's kept connection).
 * A server whose transport closed (a stdio server that exited or was killed) is started again on
 * the next call, up to MAX_SERVER_RESTARTS times, so one crash does not fail every later call of
 * the turn. (The SDK marks the transport closed in the same tick as it stops sending, so a call
 * that finds it open is sent.) A call the server died under is sent again to the new server only
 * when its tool's effect says a re-run is safe, as crash recovery decides; an unsafe one fails,
 * since nobody can know whether it ran.
 *
 * An HTTP server that answers 404 to a call has forgotten the session (restarted, or ended it):
 * MCP has the client initialize a new one. The call was refused unread, so it is sent again
 * there whatever its effect; that counts as a restart.
 */
export class ServerLink {
  readonly config: McpServerConfig;
  /** The tools the server offered when it first started: the bridged tools were made from these. */
  readonly offered: OfferedTool[];
  private current: LinkedConnection;
  private restarting: Promise<LinkedConnection> | undefined;
  private restarts = 0;
  private closed = false;
  /** A connection whose HTTP session the server no longer knows: connected anew before the next call. */
  private expired: LinkedConnection | undefined;
  /** Aborted by close(): a start under way is given up (its process ended) rather than waited for. */
  private readonly closing = new AbortController();
  private readonly reconnect: Reconnect;
  private readonly elicitations: ElicitationRouter;
  private readonly logger: Logger;

  constructor(config: McpServerConfig, first: LinkedConnection, reconnect: Reconnect, logger: Logger) {
    this.config = config;
    this.reconnect = reconnect;
    this.elicitations = first.elicitations;
    this.logger = logger;
    this.offered = first.remote;
    this.current = first;
  }

  /** Whether the server first started is still the one connected, and still connected (one started again has used a restart). */
  untouched(): boolean {
    return !this.closed && this.restarts === 0 && !this.gone(this.current);
  }

  private gone(connection: LinkedConnection): boolean {
    return connection === this.expired || connection.disconnected();
  }

  /** The client to list the server's tools with now. */
  get client(): Client {
    return this.current.client;
  }

  /** Runs one call of `tool` on the server, starting it again first if it exited (see the class). */
  async call<T>(tool: OfferedTool, effect: ToolEffect, signal: AbortSignal, run: (client: Client) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const connection = await this.usable(tool, signal);
      try {
        return await run(connection.client);
      } catch (error) {
        if (attempt > 1 || signal.aborted || this.closed) throw error;
        if (isSessionUnknown(error) && connection.inSession()) {
          this.expired = connection;
          this.logger.warn('mcp session expired; sending the call again in a new one', { server: this.config.name, tool: tool.name });
          continue;
        }
        if (!(isConnectionClosed(error) && connection.disconnected() && effect !== 'unsafe')) throw error;
        this.logger.warn('mcp call lost with its server; sending it again', { server: this.config.name, tool: tool.name, effect });
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort(new Error('the connection was closed'));
    const restarting = this.restarting;
    await this.current.close().catch(() => {});
    // A restart under way when the connection closed is closed as soon as it is made.
    if (restarting) await restarting.then((late) => late.close(), () => {});
  }

  private async usable(tool: OfferedTool, signal: AbortSignal): Promise<LinkedConnection> {
    if (this.closed) throw new AcxError('mcp-unavailable', `the connection to the MCP server ${this.config.name} is closed`);
    if (this.gone(this.current)) {
      this.restarting ??= this.restart().finally(() => (this.restarting = undefined));
      await untilSettledOrAborted(this.restarting, signal);
    }
    const now = this.current;
    if (now.remote !== this.offered) {
      const same = now.remote.find((offered) => offered.name === tool.name);
      if (!same || JSON.stringify(same) !== JSON.stringify(tool)) {
        throw new AcxError('mcp-unavailable', `the MCP server ${this.config.name} was started again and no longer offers ${tool.name} as it did`, {
          hint: 'A new turn sees the tools the server offers now.',
        });
      }
    }
    return now;
  }

  private async restart(): Promise<LinkedConnection> {
    const server = this.config.name;
    if (this.restarts >= MAX_SERVER_RESTARTS) {
      throw new AcxError('mcp-unavailable', `the MCP server ${server} exited or lost its session ${this.restarts + 1} times; it is not started again until the next turn connects anew`, {
        hint: "Read the server's own log for why it keeps exiting.",
      });
    }
    this.restarts += 1;
    const why = this.current === this.expired ? 'mcp session expired; connecting again' : 'mcp server exited; starting it again';
    this.logger.warn(why, { server, restart: this.restarts, of: MAX_SERVER_RESTARTS });
    // A session the server has forgotten is not ended there (it would only answer 404 again).
    await this.current.close({ endSession: this.current !== this.expired }).catch(() => {});
    let next: LinkedConnection;
    try {
      next = await this.reconnect({ elicitations: this.elicitations, signal: this.closing.signal });
    } catch (error) {
      throw new AcxError('mcp-unavailable', `the MCP server ${server} exited and could not be started again: ${errorMessage(error)}`, { cause: error });
    }
    if (this.closed) {
      await next.close().catch(() => {});
      throw new AcxError('mcp-unavailable', `the connection to the MCP server ${server} is closed`);
    }
    this.current = next;
    this.logger.info('mcp server started again', { server, tools: next.remote.length });
    return next;
  }
}

/** A Streamable HTTP server's 404 to a request in a session: the session is unknown to it. */
function isSessionUnknown(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404;
}

function isConnectionClosed(error: unknown): boolean {
  return error instanceof McpError && error.code === ErrorCode.ConnectionClosed;
}
