import { APICallError, EmptyResponseBodyError, InvalidResponseDataError, JSONParseError, StreamProviderError, TypeValidationError } from 'ai';

/**
 * Classifies model-call failures by the nature of the fault, never by vendor. Three classes are
 * transient and retried with backoff — a malformed/truncated response, the provider's own 5xx,
 * and a transport failure (connection refused, reset, timed out) — and a rate limit (429) is
 * retried on its own tighter terms (see RATE_LIMIT_RETRIES). A context overflow has its own
 * remedy (compact and re-run once). Everything else is permanent: re-sending it repeats it.
 */
export type FaultClass =
  | 'transient-malformed'
  | 'transient-server'
  | 'transient-transport'
  | 'rate-limited'
  | 'context-overflow'
  | 'aborted'
  | 'permanent';

/** A 429 is retried at most this many times, and only while the sleeps add up to RATE_LIMIT_SLEEP_MS. */
export const RATE_LIMIT_RETRIES = 2;
export const RATE_LIMIT_SLEEP_MS = 3000;

const OVERFLOW =
  /context[ _-]?(length|window)|context_length_exceeded|prompt is too long|too many tokens|maximum context|exceeds? the (model's )?(maximum|max|context)|input is too long|request too large/i;
const MALFORMED = /unexpected end of json|eof while parsing|unterminated string|json parse|invalid json response/i;
// An exhausted account, not a burst: waiting seconds will not help, so it is not retried.
const QUOTA = /insufficient_quota|exceeded your current quota|billing|credit balance/i;

/** Network error codes that mean "this host name does not exist": a typo, not a blip. */
const UNKNOWN_HOST_CODES = new Set(['ENOTFOUND', 'EAI_NONAME', 'EAI_NODATA']);

function unwrap(error: unknown): unknown {
  // The AI SDK wraps the last attempt in RetryError; we call with maxRetries 0, but be safe.
  const e = error as { lastError?: unknown; cause?: unknown };
  return e && typeof e === 'object' && 'lastError' in e && e.lastError ? e.lastError : error;
}

/** The first `code` string (ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET…) along an error's cause chain. */
export function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z_]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Whether a failed call never reached an HTTP answer because the host name did not resolve. */
export function isUnknownHost(error: unknown): boolean {
  const code = networkCode(unwrap(error));
  return code !== undefined && UNKNOWN_HOST_CODES.has(code);
}

export function classifyFault(raw: unknown): FaultClass {
  const error = unwrap(raw);
  const reported = (error as { fault?: unknown } | null)?.fault;
  if (typeof reported === 'string' && isFaultClass(reported)) return reported;
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return 'aborted';
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    if (status === undefined) {
      // No HTTP answer at all: the request never got through.
      if (isUnknownHost(error)) return 'permanent';
      return networkCode(error) !== undefined || error.isRetryable ? 'transient-transport' : 'permanent';
    }
    const text = `${error.message} ${error.responseBody ?? ''}`;
    if ((status === 400 || status === 413 || status === 422) && OVERFLOW.test(text)) return 'context-overflow';
    if (status === 429) return QUOTA.test(text) ? 'permanent' : 'rate-limited';
    if (status >= 500) return 'transient-server';
    // A 2xx whose body could not be processed (cut mid-JSON, stream dropped mid-event).
    if (status >= 200 && status < 300) return 'transient-malformed';
    return 'permanent';
  }
  // A provider error event after the stream started (Anthropic `overloaded_error`, OpenAI `error`).
  if (StreamProviderError.isInstance(error)) {
    const e = error;
    if (OVERFLOW.test(`${e.message} ${JSON.stringify(e.data ?? '')}`)) return 'context-overflow';
    return (e.statusCode ?? 0) >= 500 ? 'transient-server' : 'permanent';
  }
  if (
    JSONParseError.isInstance(error) ||
    TypeValidationError.isInstance(error) ||
    InvalidResponseDataError.isInstance(error) ||
    EmptyResponseBodyError.isInstance(error)
  ) {
    return 'transient-malformed';
  }
  if (error instanceof Error && MALFORMED.test(error.message)) return 'transient-malformed';
  return 'permanent';
}

const FAULT_CLASSES: ReadonlySet<string> = new Set<FaultClass>([
  'transient-malformed',
  'transient-server',
  'transient-transport',
  'rate-limited',
  'context-overflow',
  'aborted',
  'permanent',
]);

function isFaultClass(value: string): value is FaultClass {
  return FAULT_CLASSES.has(value);
}

export function isTransient(fault: FaultClass): boolean {
  return fault === 'transient-malformed' || fault === 'transient-server' || fault === 'transient-transport';
}

export function backoffMs(attempt: number, baseMs: number): number {
  return baseMs * 2 ** (attempt - 1);
}

/**
 * How long the provider asked us to wait, from `retry-after-ms` or `retry-after` (seconds or an
 * HTTP date), in milliseconds; undefined when it did not say.
 */
export function retryAfterMs(raw: unknown, now: () => number = Date.now): number | undefined {
  const error = unwrap(raw);
  if (!APICallError.isInstance(error)) return undefined;
  const headers = Object.fromEntries(Object.entries(error.responseHeaders ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = headers['retry-after-ms'];
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const after = headers['retry-after']?.trim();
  if (after === undefined || after === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Math.ceil(Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}

/**
 * How long to wait before re-issuing a call that failed with `fault`, or undefined when it must
 * not be re-issued. Transient faults: up to `retries` extra attempts, backing off from `baseMs`.
 * A 429: at most RATE_LIMIT_RETRIES of them (never more than `retries`), each waiting what the
 * provider's Retry-After asks (else the backoff), and only while the waits stay within
 * RATE_LIMIT_SLEEP_MS in total — a provider that asks for longer is answered with a clear error
 * now, not a hang.
 */
export function retryDelayMs(
  fault: FaultClass,
  error: unknown,
  state: { attempt: number; retries: number; baseMs: number; rateLimit: { retried: number; sleptMs: number } },
): number | undefined {
  if (isTransient(fault)) return state.attempt > state.retries ? undefined : backoffMs(state.attempt, state.baseMs);
  if (fault !== 'rate-limited') return undefined;
  if (state.rateLimit.retried >= Math.min(state.retries, RATE_LIMIT_RETRIES)) return undefined;
  const wait = retryAfterMs(error) ?? backoffMs(state.rateLimit.retried + 1, state.baseMs);
  return state.rateLimit.sleptMs + wait > RATE_LIMIT_SLEEP_MS ? undefined : wait;
}
