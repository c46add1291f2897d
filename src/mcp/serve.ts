import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { AcxError, errorMessage } from '../core/errors.ts';
import { tokenMatches } from '../util/secure-compare.ts';
import { createLogThrottle } from '../util/log-throttle.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import type { HostToolServer } from './host-server.ts';
import { DEFAULT_SESSION_LIMITS, HttpSessions } from './http-sessions.ts';
import { SessionEventStore } from './event-store.ts';

/**
 * The two ways the host tool server is reached. stdio: one client, our stdin/stdout.
 * Streamable HTTP: 127.0.0.1 only, one MCP session per client, and a bearer token on every
 * request (a loopback port is reachable by every local process, so the token is the boundary).
 * Against DNS rebinding (a web page whose name now points at 127.0.0.1), the Host must be this
 * server's and a browser's Origin a loopback one or one the operator allowed: 403 otherwise; a
 * request without an Origin (a CLI client) is fine. Sessions are capped and expire when idle
 * (./http-sessions.ts). SSE events carry ids and each session keeps its recent ones
 * (./event-store.ts), so a client whose stream dropped resumes with Last-Event-ID.
 *
 * A request without the right token is answered 403 with a message that says which token and
 * where it comes from, and no `WWW-Authenticate`. Not 401: an OAuth-capable MCP client (the
 * SDK's, with an auth provider; the MCP Inspector) takes any 401 for the start of an OAuth flow
 * and shows that flow's failure instead of the message, and this server has no OAuth to offer.
 */

export interface StdioServing {
  close(): Promise<void>;
  /** Resolves when the client goes away (stdin ends) or close() is called. */
  closed: Promise<void>;
}

export async function serveStdio(host: HostToolServer, io: { stdin?: Readable; stdout?: Writable } = {}): Promise<StdioServing> {
  const transport = new StdioServerTransport(io.stdin, io.stdout);
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const server = await host.connect(transport);
  const previous = server.onclose;
  server.onclose = () => {
    previous?.();
    resolveClosed();
  };
  // The SDK transport does not watch for stdin ending; a client that exits must end the serve.
  (io.stdin ?? process.stdin).once('end', () => void server.close());
  return { closed, close: () => server.close() };
}

export interface HttpServing {
  /** The MCP endpoint, e.g. http://127.0.0.1:41234/mcp */
  url: string;
  /** Send as `Authorization: Bearer <token>`. */
  token: string;
  port: number;
  close(): Promise<void>;
}

export interface ServeHttpOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default: 32 random bytes, base64url. */
  token?: string;
  logger?: Logger;
  /** The most sessions at once (default DEFAULT_SESSION_LIMITS.maxSessions). */
  maxSessions?: number;
  /** Idle time after which a session is closed, ms (default DEFAULT_SESSION_LIMITS.idleMs); 0: never. */
  sessionIdleMs?: number;
  /** Browser origins allowed besides loopback ones (`http://localhost:6274`, …), e.g. `https://app.example`. */
  allowedOrigins?: readonly string[];
}

export { tokenMatches };

export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}


function bearer(req: http.IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

function sendJsonError(res: http.ServerResponse, status: number, message: string, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...extraHeaders });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJson(req: http.IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const MAX_BODY = 4 * 1024 * 1024;
/** The reconnection delay SSE clients are told (the `retry` field of a stream's first event), ms. */
export const SSE_RETRY_MS = 1000;

/** What a request without the right token is told: which token, and where it comes from. */
export const TOKEN_REQUIRED =
  'Forbidden: this acx MCP server needs its bearer token, and the request had none or another one. Send the header Authorization: Bearer <token>, where <token> is what acx mcp --http printed on its stdout (or wrote to its --token-file), or the ACX_MCP_TOKEN it was started with.';

/** `origin` in the form a browser sends it (`scheme://host[:port]`), or a thrown usage error naming it. */
export function normalizedOrigin(origin: string): string {
  let url: URL | undefined;
  try {
    url = new URL(origin);
  } catch {
    url = undefined;
  }
  const bare = url && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password && !origin.endsWith('/');
  if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new AcxError('usage', `"${origin}" is not a web origin`, { hint: 'Give it as a browser sends it: scheme, host and port only, e.g. http://localhost:6274.' });
  }
  return url.origin;
}

/** A browser page's Origin may use the server when it is served from this machine (a loopback host, any port) or was allowed. */
export function originAllowed(origin: string, allowed: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (a sandboxed page, a file) and anything malformed
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return allowed.has(url.origin) || url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(url.hostname);
}

export async function serveHttp(host: HostToolServer, options: ServeHttpOptions = {}): Promise<HttpServing> {
  const token = options.token ?? generateToken();
  addLiveSecret(token);
  if (token.length < 16) throw new Error('serveHttp: the token must be at least 16 characters');
  const logger = options.logger ?? silentLogger;
  // Lines a stranger's requests cause, bounded: a flood of them must not fill the log.
  const strangers = createLogThrottle(logger);
  const sessions = new HttpSessions(
    { maxSessions: options.maxSessions ?? DEFAULT_SESSION_LIMITS.maxSessions, idleMs: options.sessionIdleMs ?? DEFAULT_SESSION_LIMITS.idleMs },
    logger,
  );
  const allowedOrigins = new Set((options.allowedOrigins ?? []).map(normalizedOrigin));
  let port = 0;

  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const origin = req.headers.origin;
      if (origin !== undefined && !originAllowed(origin, allowedOrigins)) {
        strangers.log('debug', 'mcp http origin refused', { origin, path: url.pathname });
        sendJsonError(res, 403, `Forbidden: a page from ${origin} may not use this server (DNS-rebinding protection): only pages on this machine, or origins it was started with --allow-origin for, may.`);
        return;
      }
      if (url.pathname.startsWith('/.well-known/')) {
        // An OAuth client looking for authorization metadata learns there is none.
        sendJsonError(res, 404, 'Not found: this acx MCP server does not use OAuth; it takes a bearer token (Authorization: Bearer <token>).');
        return;
      }
      if (!tokenMatches(bearer(req), token)) {
        strangers.log('warn', 'mcp http unauthorized', { method: req.method, path: url.pathname });
        sendJsonError(res, 403, TOKEN_REQUIRED);
        return;
      }
      if (url.pathname !== '/mcp') {
        sendJsonError(res, 404, 'Not found: the MCP endpoint is /mcp');
        return;
      }
      const sessionHeader = req.headers['mcp-session-id'];
      const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
      if (sessionId) {
        const transport = sessions.transport(sessionId);
        if (!transport) {
          sendJsonError(res, 404, 'Unknown or expired MCP session; initialize again');
          return;
        }
        sessions.track(sessionId, res);
        await transport.handleRequest(req, res);
        return;
      }
      if (req.method !== 'POST') {
        sendJsonError(res, 400, 'Bad request: no MCP session; start with an initialize POST');
        return;
      }
      const body = await readJson(req, MAX_BODY);
      if (!isInitializeRequest(body)) {
        sendJsonError(res, 400, 'Bad request: no MCP session; start with an initialize POST');
        return;
      }
      if (!sessions.hasRoom()) {
        logger.warn('mcp http session refused', { reason: `all ${sessions.size} sessions are in use` });
        sendJsonError(
          res,
          503,
          `Too many MCP sessions: all ${sessions.size} are in use. Close one (DELETE /mcp with its Mcp-Session-Id) and initialize again, or serve with a higher --max-sessions.`,
          { 'retry-after': '5' },
        );
        return;
      }
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // Only once the request passed the SDK's Host check and initialized.
        onsessioninitialized: (id: string): void => sessions.add(id, transport, res),
        // The SDK's DNS-rebinding check of the Host (its Origin check matches whole origins only, so
        // the Origin, allowed from any loopback port, is checked above for every request).
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
        eventStore: new SessionEventStore(),
        retryInterval: SSE_RETRY_MS,
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.remove(transport.sessionId);
      };
      const session = await host.connect(transport);
      await transport.handleRequest(req, res, body);
      // Refused (a foreign Host) or not an initialize after all: no session, nothing kept.
      if (!transport.sessionId) await session.close();
    })().catch((error: unknown) => {
      strangers.log('warn', 'mcp http request failed', { reason: errorMessage(error) });
      sendJsonError(res, 400, `Bad request: ${errorMessage(error)}`);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/mcp`;
  logger.info('mcp http serving', { url });

  let closing: Promise<void> | undefined;
  return {
    url,
    token,
    port,
    close() {
      closing ??= (async () => {
        strangers.flush();
        await sessions.closeAll();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}
