import { type Logger, silentLogger } from '../util/logger.ts';
import { scrubSecrets } from '../util/scrub.ts';
import { bearerToken, type CredentialOptions, type CredentialSource, credentialSource, type Env } from './auth.ts';
import { APIConnectionError, BaseCradleError, errorFromResponse } from './errors.ts';
import type { MintedToken } from './types.ts';

/**
 * The wire under every resource: base URL, Bearer auth, Accept/User-Agent headers, a timeout
 * per attempt, problem+json → typed errors, and the retry policy. Only a GET or a create that
 * carries an Idempotency-Key is sent again, and only after a *transport* failure (no answer:
 * the connection failed or the attempt timed out) — never after an HTTP error answer, and
 * never an unkeyed POST or a DELETE, whose second run could do the thing twice.
 */
export interface TransportOptions extends CredentialOptions {
  /** Default BASECRADLE_BASE_URL, else https://basecradle.com. */
  baseUrl?: string;
  /** Where the BASECRADLE_* variables are read; default process.env. */
  env?: Env;
  /** Per attempt, headers and body; default 30 000. */
  timeoutMs?: number;
  /** Re-sends allowed after a transport failure (GETs and keyed creates only); default 2. */
  maxRetries?: number;
  /** The wait before retry n (0-based); default min(0.5·2ⁿ, 8) s. */
  retryDelayMs?: (retry: number) => number;
  fetch?: typeof globalThis.fetch;
  logger?: Logger;
  /**
   * Called with every answer the client reads, as it came (tests validate each against
   * openapi.yaml). It sees bodies whole — a minted token in POST /session's answer too — so
   * whatever it keeps must be treated as a secret.
   */
  onResponse?: (response: ObservedResponse) => void;
  userAgent?: string;
}

export interface ObservedResponse {
  method: string;
  /** The URL's path and query. */
  path: string;
  status: number;
  headers: Headers;
  /** Parsed JSON, text, bytes (downloads), or undefined for an empty body. */
  body: unknown;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'DELETE';
  /** A path under the base URL (segments already encoded), or an absolute URL. */
  path: string;
  query?: Readonly<Record<string, string | undefined>>;
  json?: unknown;
  form?: FormData;
  /** A raw body (the webhook ingest), sent as given. */
  raw?: { body: string; contentType: string; headers?: Record<string, string> };
  idempotencyKey?: string;
  /** Default true; POST /session, the ingest and file downloads are not. */
  authenticated?: boolean;
  /** Read the body as bytes (and accept any type). */
  bytes?: boolean;
  signal?: AbortSignal;
}

export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export const DEFAULT_BASE_URL = 'https://basecradle.com';
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RETRIES = 2;

/** FACTS.md: min(0.5·2ⁿ, 8) seconds before retry n. */
export function retryDelayMs(retry: number): number {
  return Math.min(500 * 2 ** retry, 8000);
}

export class Transport {
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly credentials: CredentialOptions;
  private readonly env: Env;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly delay: (retry: number) => number;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly logger: Logger;
  private readonly onResponse: ((response: ObservedResponse) => void) | undefined;
  private readonly userAgent: string;
  private source: CredentialSource | undefined;

  constructor(options: TransportOptions = {}) {
    this.env = options.env ?? process.env;
    // An empty variable is an unset one (a blank line in an env file).
    this.baseUrl = checkedBaseUrl(options.baseUrl ?? (this.env.BASECRADLE_BASE_URL?.trim() || undefined) ?? DEFAULT_BASE_URL);
    this.origin = new URL(this.baseUrl).origin;
    this.credentials = { token: options.token, email: options.email, password: options.password, sessionName: options.sessionName };
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = Math.max(0, options.maxRetries ?? DEFAULT_MAX_RETRIES);
    this.delay = options.retryDelayMs ?? retryDelayMs;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.logger = options.logger ?? silentLogger;
    this.onResponse = options.onResponse;
    this.userAgent = options.userAgent ?? 'acx-basecradle';
  }

  /** The token source, checked on first need (a client that only verifies signatures needs none). */
  private credentialSource(): CredentialSource {
    return (this.source ??= credentialSource(this.credentials, this.env));
  }

  /** The Bearer token this client sends (minting it, once per process, when logging in). */
  token(): Promise<string> {
    return bearerToken(this.credentialSource(), this.baseUrl, (body) =>
      this.request<MintedToken>({ method: 'POST', path: '/session', json: body, authenticated: false }).then((answer) => answer.body),
    );
  }

  /** Sends a request and returns the 2xx answer; any other status throws its typed error. */
  async request<T = unknown>(spec: RequestSpec): Promise<Answer<T>> {
    const url = this.url(spec);
    const headers: Record<string, string> = { accept: spec.bytes ? '*/*' : 'application/json', 'user-agent': this.userAgent, ...spec.raw?.headers };
    // Never to another origin: a file URL or an ingest URL elsewhere gets no token.
    if (spec.authenticated !== false && url.origin === this.origin) headers.authorization = `Bearer ${await this.token()}`;
    let body: string | FormData | undefined;
    if (spec.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(spec.json);
    } else if (spec.form) body = spec.form;
    else if (spec.raw) {
      headers['content-type'] = spec.raw.contentType;
      body = spec.raw.body;
    }
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const retriable = spec.method === 'GET' || spec.idempotencyKey !== undefined;
    const where = `${spec.method} ${logPath(url)}`;

    for (let attempt = 0; ; attempt++) {
      let answer: Answer<unknown>;
      try {
        answer = await this.attempt(url, { method: spec.method, headers, body }, spec);
      } catch (error) {
        if (error instanceof BaseCradleError || spec.signal?.aborted) throw error;
        const reason = transportReason(error);
        if (!retriable || attempt >= this.maxRetries) {
          this.logger.warn('basecradle connection failed', { request: where, attempts: attempt + 1, error: reason });
          throw new APIConnectionError({
            code: 'connection_error',
            message: `No answer from BaseCradle for ${where} after ${attempt + 1} attempt${attempt === 0 ? '' : 's'}: ${reason}.`,
            hint: retriable ? `Check that ${this.baseUrl} is reachable (BASECRADLE_BASE_URL).` : `A ${spec.method} without an Idempotency-Key is never sent twice; check what the platform has before trying again.`,
            cause: error,
          });
        }
        const wait = this.delay(attempt);
        this.logger.warn('basecradle retry', { request: where, attempt: attempt + 1, delay_ms: wait, error: reason });
        await sleep(wait, spec.signal);
        continue;
      }
      this.logger.debug('basecradle request', { request: where, status: answer.status, attempts: attempt + 1 });
      this.onResponse?.({ method: spec.method, path: `${url.pathname}${url.search}`, status: answer.status, headers: answer.headers, body: answer.body });
      if (answer.status < 200 || answer.status >= 300) throw errorFromResponse(where, answer.status, answer.headers, answer.body);
      return answer as Answer<T>;
    }
  }

  /** One attempt; throws only when no complete answer came (the caller decides whether to retry). */
  private async attempt(url: URL, init: { method: string; headers: Record<string, string>; body: string | FormData | undefined }, spec: RequestSpec): Promise<Answer<unknown>> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    const response = await this.fetchImpl(url, { ...init, signal, redirect: 'follow' });
    if (spec.bytes && response.ok) return { status: response.status, headers: response.headers, body: new Uint8Array(await response.arrayBuffer()) };
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: parseBody(text, response.headers.get('content-type')) };
  }

  private url(spec: RequestSpec): URL {
    const url = /^https?:\/\//i.test(spec.path) ? new URL(spec.path) : new URL(`${this.baseUrl}${spec.path}`);
    for (const [name, value] of Object.entries(spec.query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    return url;
  }
}

function parseBody(text: string, contentType: string | null): unknown {
  if (text === '') return undefined;
  if (/[/+]json\b/i.test(contentType ?? '')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** The cause of a failed fetch in words (undici hides it under `cause`); never its headers. */
function transportReason(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'the attempt timed out';
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const text = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return scrubSecrets(String(text));
}

/** A path for a log line: ingest and file URLs are capabilities, so their tokens are left out. */
function logPath(url: URL): string {
  return url.pathname.replace(/^\/webhooks\/[^/]+/, '/webhooks/…').replace(/^\/files\/[^/]+/, '/files/…');
}

function checkedBaseUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new BaseCradleError({ code: 'config', message: `The BaseCradle base URL must be an http(s) URL, not "${value}".`, hint: 'Set BASECRADLE_BASE_URL (or the baseUrl option), e.g. http://127.0.0.1:4700 for a local platform.' });
  }
  return url.href.replace(/\/+$/, '');
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', abort, { once: true });
  });
}
