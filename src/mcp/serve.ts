import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../core/errors.ts';
import { tokenMatches } from '../util/secure-compare.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import type { HostToolServer } from './host-server.ts';

/**
 * The two ways the host tool server is reached. stdio: one client, our stdin/stdout.
 * Streamable HTTP: 127.0.0.1 only, one MCP session per client, and a bearer token on every
 * request (a loopback port is reachable by every local process, so the token is the boundary).
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

export async function serveHttp(host: HostToolServer, options: ServeHttpOptions = {}): Promise<HttpServing> {
  const token = options.token ?? generateToken();
  addLiveSecret(token);
  if (token.length < 16) throw new Error('serveHttp: the token must be at least 16 characters');
  const logger = options.logger ?? silentLogger;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let port = 0;

  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (!tokenMatches(bearer(req), token)) {
        logger.warn('mcp http unauthorized', { method: req.method, path: url.pathname });
        sendJsonError(res, 401, 'Unauthorized: a valid bearer token is required', { 'www-authenticate': 'Bearer realm="acx-mcp"' });
        return;
      }
      if (url.pathname !== '/mcp') {
        sendJsonError(res, 404, 'Not found: the MCP endpoint is /mcp');
        return;
      }
      const sessionHeader = req.headers['mcp-session-id'];
      const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
      if (sessionId) {
        const transport = transports.get(sessionId);
        if (!transport) {
          sendJsonError(res, 404, 'Unknown or expired MCP session; initialize again');
          return;
        }
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
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, transport);
        },
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await host.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      logger.warn('mcp http request failed', { reason: errorMessage(error) });
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
        await Promise.allSettled([...transports.values()].map((t) => t.close()));
        transports.clear();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}
