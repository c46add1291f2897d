import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import { AcxError, ConfigError, errorMessage } from '../../core/errors.ts';
import { silentLogger, type Logger } from '../../util/logger.ts';
import { tokenMatches } from '../../util/secure-compare.ts';
import { describeNetworkError, type EgressGate, serveEgress, UNKNOWN_HOST } from './egress.ts';

/**
 * Credential brokering: the agent process holds placeholder credentials and a base URL that
 * points at this acx-owned loopback proxy. The proxy forwards each request to the real upstream
 * and swaps in the real credential only when the request matches a configured transformation
 * exactly (host, path, method and the placeholder header value). Anything else is forwarded
 * untouched, so a wrong placeholder reaches the upstream as the useless value it is. For an
 * agent confined by the local sandbox it is also the HTTP(S) proxy for everything else, under the
 * network policy (egress.ts).
 */

export interface StringMatch {
  exact?: string;
  prefix?: string;
}

export interface CredentialRequestTransformation {
  match: {
    scheme?: 'http' | 'https';
    host: string;
    port?: number;
    path?: StringMatch;
    method?: readonly string[];
    headers?: ReadonlyArray<{ key: { exact: string }; value: { exact: string } }>;
  };
  transform: { headers: Record<string, string> };
  /** The upstream base URL the proxy serves a route for (set by createCredentialRequestTransformation). */
  upstream?: string;
  /** The agent's environment variable that holds this upstream's base URL; the adapter points it at the proxy. */
  baseUrlEnv?: string;
}

function trimSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}

/** A transformation for requests below `matchUrl` carrying exactly `matchHeaders`. */
export function createCredentialRequestTransformation(options: {
  matchUrl: string;
  matchHeaders: Record<string, string>;
  transformHeaders: Record<string, string>;
  baseUrlEnv?: string;
}): CredentialRequestTransformation {
  let url: URL;
  try {
    url = new URL(options.matchUrl);
  } catch (error) {
    throw new ConfigError(`credential brokering: matchUrl ${JSON.stringify(options.matchUrl)} is not a URL`, { cause: error, hint: 'e.g. https://api.anthropic.com' });
  }
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  const path = trimSlash(url.pathname);
  return {
    match: {
      scheme,
      host: url.hostname,
      port: url.port ? Number(url.port) : scheme === 'https' ? 443 : 80,
      ...(path ? { path: { prefix: path } } : {}),
      headers: Object.entries(options.matchHeaders).map(([key, value]) => ({ key: { exact: key }, value: { exact: value } })),
    },
    transform: { headers: { ...options.transformHeaders } },
    upstream: trimSlash(url.origin + path),
    ...(options.baseUrlEnv ? { baseUrlEnv: options.baseUrlEnv } : {}),
  };
}

/** A fresh placeholder; long and random so it is never mistaken for (or guessed as) a real key. */
export function mintPlaceholder(name: string): string {
  return `acx-placeholder-${name.toLowerCase().replace(/_/g, '-')}-${randomBytes(18).toString('base64url')}`;
}

function matchString(value: string, m: StringMatch | undefined): boolean {
  if (!m) return true;
  if (m.exact !== undefined && value !== m.exact) return false;
  if (m.prefix !== undefined && !(value === m.prefix || value.startsWith(m.prefix.endsWith('/') ? m.prefix : `${m.prefix}/`))) return false;
  return true;
}

export function transformationMatches(t: CredentialRequestTransformation, target: URL, method: string, headers: http.IncomingHttpHeaders): boolean {
  const scheme = target.protocol === 'https:' ? 'https' : 'http';
  const port = target.port ? Number(target.port) : scheme === 'https' ? 443 : 80;
  if (t.match.scheme && t.match.scheme !== scheme) return false;
  if (t.match.host.toLowerCase() !== target.hostname.toLowerCase()) return false;
  if (t.match.port !== undefined && t.match.port !== port) return false;
  if (!matchString(target.pathname, t.match.path)) return false;
  if (t.match.method && !t.match.method.map((m) => m.toUpperCase()).includes(method.toUpperCase())) return false;
  for (const h of t.match.headers ?? []) {
    const raw = headers[h.key.exact.toLowerCase()];
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (!tokenMatches(value, h.value.exact)) return false;
  }
  return true;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

export interface CredentialProxy {
  /** The proxy URL that stands in for `upstream` (same path suffix semantics). */
  routeFor(upstream: string): string | undefined;
  readonly port: number;
  close(): Promise<void>;
}

/** An upstream that stopped answering: the URL as configured (never the proxy's own port), and why. */
export interface UpstreamDown {
  upstream: string;
  /** The agent's variable that held it, when the transformation names one. */
  baseUrlEnv: string | undefined;
  reason: string;
}

export interface CredentialProxyOptions {
  logger?: Logger;
  /**
   * Called once an upstream is down: its host does not exist, or it has failed every request for
   * `downAfterMs` since the first failure. An agent behind the proxy retries a 502 on its own
   * schedule, which can take minutes; this lets acx fail the turn in bounded time instead.
   */
  onUpstreamDown?: (down: UpstreamDown) => void;
  /** How long to wait for a TCP/TLS connection to the upstream (default 10 s). */
  connectTimeoutMs?: number;
  /** How long an upstream may fail without a single answer before it is down (default 20 s). */
  downAfterMs?: number;
  /**
   * Also serve as the confined agent's HTTP(S) proxy (absolute-URI requests and CONNECT), for
   * the destinations this gate lets through. Without it, anything but a route is refused.
   */
  egress?: EgressGate;
}

// 10 s to connect + 20 s of failures = an unreachable upstream is reported within 30 s of the
// first request that could not reach it.
const CONNECT_TIMEOUT_MS = 10_000;
const DOWN_AFTER_MS = 20_000;

export async function startCredentialProxy(transformations: readonly CredentialRequestTransformation[], options: CredentialProxyOptions = {}): Promise<CredentialProxy> {
  const logger = options.logger ?? silentLogger;
  const upstreams = [...new Set(transformations.map((t) => t.upstream).filter((u): u is string => !!u))];
  const health = upstreams.map((upstream) => new UpstreamHealth(upstream, transformations.find((t) => t.upstream === upstream)?.baseUrlEnv, options));
  const server = http.createServer((req, res) => {
    if (options.egress && /^https?:\/\//i.test(req.url ?? '')) return serveEgress.request(options.egress, req, res);
    const incoming = new URL(req.url ?? '/', 'http://127.0.0.1');
    const route = /^\/r\/(\d+)(\/.*)?$/.exec(incoming.pathname);
    const index = route ? Number(route[1]) : -1;
    const base = route ? upstreams[index] : undefined;
    if (!route || base === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('acx credential proxy: unknown route');
      return;
    }
    const target = new URL(base + (route[2] ?? '') + incoming.search);
    const method = req.method ?? 'GET';
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
    const applied = transformations.find((t) => transformationMatches(t, target, method, req.headers));
    if (applied) {
      for (const [k, v] of Object.entries(applied.transform.headers)) {
        for (const existing of Object.keys(headers)) if (existing.toLowerCase() === k.toLowerCase()) delete headers[existing];
        headers[k] = v;
      }
    }
    logger.debug('credential proxy request', { method, host: target.host, path: target.pathname, brokered: applied !== undefined });
    const send = target.protocol === 'https:' ? https.request : http.request;
    const upstreamReq = send(target, { method, headers }, (upstreamRes) => {
      clearTimeout(connecting);
      health[index]!.answered();
      const out: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(upstreamRes.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
      res.writeHead(upstreamRes.statusCode ?? 502, out);
      upstreamRes.pipe(res);
    });
    // Only the connection is timed: a model's stream may legitimately pause for long.
    const connecting = setTimeout(() => upstreamReq.destroy(new Error(`no connection within ${(options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS) / 1000} s`)), options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS);
    upstreamReq.on('socket', (socket) => socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connecting)));
    upstreamReq.on('error', (error) => {
      clearTimeout(connecting);
      const reason = describeNetworkError(error);
      logger.warn('credential proxy upstream failed', { upstream: base, reason });
      if (!res.headersSent) {
        health[index]!.failed(reason, UNKNOWN_HOST.has((error as { code?: string }).code ?? ''));
        // The agent shows this body to its user: it names the configured URL, not this proxy.
        const message = `acx credential proxy: cannot reach ${base}: ${reason}`;
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message } }));
      } else res.destroy();
    });
    res.on('close', () => {
      clearTimeout(connecting);
      upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
  });
  const egress = options.egress;
  if (egress) server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => serveEgress.connect(egress, req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new AcxError('acp-proxy', `The credential proxy could not listen on 127.0.0.1: ${errorMessage(error)}`, { cause: error })));
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    routeFor(upstream) {
      const i = upstreams.indexOf(trimSlash(upstream));
      return i < 0 ? undefined : `http://127.0.0.1:${port}/r/${i}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const h of health) h.stop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Whether one upstream still answers. The first failure starts a clock; any answer stops it;
 * when it runs out (or the host does not exist at all) the upstream is reported down, once.
 */
class UpstreamHealth {
  private timer: NodeJS.Timeout | undefined;
  private lastReason = '';
  private reported = false;

  private readonly upstream: string;
  private readonly baseUrlEnv: string | undefined;
  private readonly options: CredentialProxyOptions;

  constructor(upstream: string, baseUrlEnv: string | undefined, options: CredentialProxyOptions) {
    this.upstream = upstream;
    this.baseUrlEnv = baseUrlEnv;
    this.options = options;
  }

  answered(): void {
    this.stop();
    this.reported = false;
  }

  failed(reason: string, final: boolean): void {
    this.lastReason = reason;
    if (this.reported || !this.options.onUpstreamDown) return;
    if (final) return this.report();
    this.timer ??= setTimeout(() => this.report(), this.options.downAfterMs ?? DOWN_AFTER_MS);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private report(): void {
    this.stop();
    this.reported = true;
    this.options.onUpstreamDown?.({ upstream: this.upstream, baseUrlEnv: this.baseUrlEnv, reason: this.lastReason });
  }
}
