// A loopback HTTP proxy in front of a real server that fails the way networks do, on request:
// it cuts the connection before forwarding (the request never arrives), after the upstream has
// answered (the work was done, the answer is lost), in the middle of the answer's body (a stream
// cut after its first chunk), or never answers at all (a hang); it stalls an answer after its
// first chunk, or answers in the upstream's place the way a busy provider does (429 with
// Retry-After, 503). Every request that reached it is recorded, so a test can count what a
// client sent again.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Failure = 'drop-before' | 'drop-after' | 'hang' | 'cut-mid-body' | 'stall' | 'rate-limit' | 'unavailable';

/** A provider-shaped error body (OpenAI's `error` object) for the answers the proxy makes itself. */
const PROVIDER_ERRORS = {
  'rate-limit': { status: 429, type: 'rate_limit_exceeded', message: 'Rate limit reached (test proxy).' },
  unavailable: { status: 503, type: 'server_error', message: 'The server is overloaded (test proxy).' },
} as const;

export interface FlakyProxy {
  url: string;
  /** `METHOD /path` of every request that reached the proxy, in order. */
  arrivals: string[];
  /** The next `count` requests fail this way; later ones pass through. */
  fail(count: number, how: Failure): void;
  /** Requests forwarded and not yet answered in full: a model call in flight. */
  inFlight(): number;
  /** Every request to this path (no query) is answered with this status instead of forwarded. */
  refuse(path: string, status: number): void;
  /** Requests to this path are forwarded again. */
  allow(path: string): void;
  close(): Promise<void>;
}

export interface FlakyProxyOptions {
  /** How long a 'stall' holds the answer after its first chunk (default 5 s). */
  stallMs?: number;
  /** The Retry-After (seconds) a 'rate-limit' answer carries (default 1). */
  retryAfterSeconds?: number;
}

export async function startFlakyProxy(upstreamUrl: string, options: FlakyProxyOptions = {}): Promise<FlakyProxy> {
  const upstream = new URL(upstreamUrl);
  const stallMs = options.stallMs ?? 5000;
  let inFlight = 0;
  const arrivals: string[] = [];
  const failures: Failure[] = [];
  const refused = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    arrivals.push(`${req.method} ${path}`);
    const status = refused.get(path);
    if (status !== undefined) {
      req.resume();
      res.writeHead(status, { 'content-type': 'application/problem+json' });
      return void res.end(JSON.stringify({ type: 'about:blank', title: 'Refused by the test proxy', status, code: 'internal_error' }));
    }
    const failure = failures.shift();
    if (failure === 'drop-before') return void req.socket.destroy();
    if (failure === 'hang') return void req.resume();
    if (failure === 'rate-limit' || failure === 'unavailable') {
      const { status, type, message } = PROVIDER_ERRORS[failure];
      req.resume();
      const retryAfter = failure === 'rate-limit' ? { 'retry-after': String(options.retryAfterSeconds ?? 1) } : {};
      res.writeHead(status, { 'content-type': 'application/json', ...retryAfter });
      return void res.end(JSON.stringify({ error: { message, type, code: type } }));
    }
    inFlight++;
    let settled = false;
    const settle = () => {
      if (!settled) inFlight--;
      settled = true;
    };
    res.on('close', settle);
    // The upstream checks Host against its own address, as it would for a client pointed at it.
    const headers = { ...req.headers, host: upstream.host };
    const forward = http.request({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      if (failure === 'drop-after') {
        answer.resume();
        answer.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (failure === 'cut-mid-body' || failure === 'stall') {
        // The first chunk goes through (the client has started reading), then the answer breaks.
        answer.once('data', (first: Buffer) => {
          res.write(first);
          if (failure === 'cut-mid-body') {
            answer.destroy();
            return void req.socket.destroy();
          }
          answer.pause();
          setTimeout(() => (res.destroyed ? answer.destroy() : answer.pipe(res)), stallMs);
        });
        return;
      }
      answer.pipe(res);
    });
    forward.on('error', () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    fail: (count, how) => failures.push(...Array.from({ length: count }, () => how)),
    inFlight: () => inFlight,
    refuse: (path, status) => void refused.set(path, status),
    allow: (path) => void refused.delete(path),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A loopback server that answers every request with the status, headers and body a test gives. */
export async function startCannedServer(answer: () => { status: number; headers?: Record<string, string>; body?: string }): Promise<{ url: string; requests: http.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const requests: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.headers);
    req.resume();
    const { status, headers, body } = answer();
    res.writeHead(status, headers);
    res.end(body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
