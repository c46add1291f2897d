import { APICallError, EmptyResponseBodyError, InvalidResponseDataError, JSONParseError, StreamProviderError, TypeValidationError } from 'ai';

/**
 * Classifies model-call failures by the nature of the fault, never by vendor. Only two classes
 * are transient — a malformed/truncated response, and the provider's own 5xx — and only those
 * are retried. A context overflow has its own remedy (compact and re-run once).
 */
export type FaultClass = 'transient-malformed' | 'transient-server' | 'context-overflow' | 'aborted' | 'permanent';

const OVERFLOW =
  /context[ _-]?(length|window)|context_length_exceeded|prompt is too long|too many tokens|maximum context|exceeds? the (model's )?(maximum|max|context)|input is too long|request too large/i;
const MALFORMED = /unexpected end of json|eof while parsing|unterminated string|json parse|invalid json response/i;

function unwrap(error: unknown): unknown {
  // The AI SDK wraps the last attempt in RetryError; we call with maxRetries 0, but be safe.
  const e = error as { lastError?: unknown; cause?: unknown };
  return e && typeof e === 'object' && 'lastError' in e && e.lastError ? e.lastError : error;
}

export function classifyFault(raw: unknown): FaultClass {
  const error = unwrap(raw);
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return 'aborted';
  if (APICallError.isInstance(error)) {
    const status = error.statusCode ?? 0;
    const text = `${error.message} ${error.responseBody ?? ''}`;
    if ((status === 400 || status === 413 || status === 422) && OVERFLOW.test(text)) return 'context-overflow';
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

export function isTransient(fault: FaultClass): boolean {
  return fault === 'transient-malformed' || fault === 'transient-server';
}

export function backoffMs(attempt: number, baseMs: number): number {
  return baseMs * 2 ** (attempt - 1);
}
