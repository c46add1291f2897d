import { AsyncLocalStorage } from 'node:async_hooks';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type LoggingLevel, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { LogFields, Logger, LogLevel } from '../core/logger.ts';
import { formatLogLine } from '../util/logger.ts';

/**
 * The host's log lines, for MCP clients (`notifications/message`): a logger that writes to the
 * host's own log as before and also hands every line — formatted, and so scrubbed of secrets,
 * exactly as the log shows it — to each connected session whose level admits it. A session's
 * level is the one its client chose with logging/setLevel; until it chooses, the host log's own
 * level (what the operator sees on stderr). A line written while a session's request runs (a tool
 * call) is sent as part of that request — over HTTP on its own stream, ahead of its result.
 */
type Level = Exclude<LogLevel, 'silent'>;

export interface ClientLogFeed {
  /** Pass this logger to everything whose lines clients should see. */
  readonly logger: Logger;
  /** Declares `logging` on one session (before it connects) and forwards lines to it, from its initialization until `detach`. */
  attach(server: Server): () => void;
  /** Runs `work` as `server`'s request `requestId`: the lines it writes are sent related to it. */
  during<T>(server: Server, requestId: string | number, work: () => Promise<T>): Promise<T>;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
/** MCP's eight levels (RFC 5424) on the logger's four. */
const MCP_RANK: Record<LoggingLevel, number> = { debug: 10, info: 20, notice: 25, warning: 30, error: 40, critical: 50, alert: 60, emergency: 70 };
const MCP_LEVEL: Record<Level, LoggingLevel> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };

export function createClientLogFeed(base: Logger): ClientLogFeed {
  const sessions = new Set<{ server: Server; level: number }>();
  const initialLevel = RANK[base.level];
  const request = new AsyncLocalStorage<{ server: Server; requestId: string | number }>();

  const tee = (logger: Logger, fields: LogFields): Logger => {
    const emit = (level: Level, event: string, more?: LogFields) => {
      logger[level](event, more);
      for (const session of sessions) {
        if (RANK[level] < session.level) continue;
        const line = formatLogLine(level, event, { ...fields, ...more });
        // The level is a field of its own: the line goes without its label.
        const data = line.slice(line.indexOf(' ') + 1);
        const current = request.getStore();
        const related = current?.server === session.server ? { relatedRequestId: current.requestId } : undefined;
        // A client that went away misses the line; the host's own log has it.
        session.server.notification({ method: 'notifications/message', params: { level: MCP_LEVEL[level], logger: 'acx', data } }, related).catch(() => {});
      }
    };
    return {
      level: logger.level,
      debug: (event, more) => emit('debug', event, more),
      info: (event, more) => emit('info', event, more),
      warn: (event, more) => emit('warn', event, more),
      error: (event, more) => emit('error', event, more),
      child: (more) => tee(logger.child(more), { ...fields, ...more }),
    };
  };

  return {
    logger: tee(base, {}),
    attach(server) {
      const session = { server, level: initialLevel };
      server.registerCapabilities({ logging: {} });
      // Replaces the SDK's own handler, which sends every level until a client chooses one.
      server.setRequestHandler(SetLevelRequestSchema, async (request) => {
        session.level = MCP_RANK[request.params.level];
        return {};
      });
      // Lines go to a client once it has initialized, never ahead of the initialize answer.
      const previous = server.oninitialized;
      server.oninitialized = () => {
        previous?.();
        sessions.add(session);
      };
      return () => void sessions.delete(session);
    },
    during: (server, requestId, work) => request.run({ server, requestId }, work),
  };
}
