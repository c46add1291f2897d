import { AcxError, BASECRADLE_PROBLEM_CODES, type BaseCradleProblemCode } from '../core/errors.ts';
import { scrubSecrets } from '../util/scrub.ts';

/**
 * The platform's refusals as typed errors, chosen by the problem+json `code` (never by the
 * HTTP status alone: two codes share 403 and mean different things). Each class has a
 * `Symbol.for` marker and an `isInstance()` static, so a check works across two installed
 * copies of acx, where `instanceof` does not.
 */

/** An RFC 9457 problem document as the platform sends it. */
export interface ProblemDocument {
  type?: string;
  title?: string;
  status?: number;
  code?: unknown;
  detail?: string;
  instance?: string;
  errors?: Record<string, string[]>;
  [more: string]: unknown;
}

/** The platform's problem codes (FACTS.md's table), as core/errors.ts lists them for the one code union. */
export const PROBLEM_CODES = BASECRADLE_PROBLEM_CODES;
export type ProblemCode = BaseCradleProblemCode;

/**
 * Every `code` a BaseCradle error can carry: the platform's, plus the client's own. One closed
 * union, so a misspelled code does not compile; a code the platform sends that is not in the
 * table becomes `basecradle` (the raw one stays in `.problem.code`).
 */
export type BaseCradleCode =
  | ProblemCode
  | 'basecradle'
  | 'connection_error'
  | 'missing_credentials'
  | 'invalid_argument'
  | 'invalid_response'
  | 'config';

export function isProblemCode(value: unknown): value is ProblemCode {
  return typeof value === 'string' && (PROBLEM_CODES as readonly string[]).includes(value);
}

export interface BaseCradleErrorInit {
  message: string;
  /** The HTTP status; undefined when no answer came (a connection error). */
  status?: number;
  /** The problem's code, or `basecradle` when there was none (or one not in the table). */
  code?: BaseCradleCode;
  title?: string;
  detail?: string;
  instance?: string;
  problem?: ProblemDocument;
  hint?: string;
  cause?: unknown;
  /** rate_limited: seconds from the Retry-After header. */
  retryAfter?: number;
}

const MARKER_PREFIX = 'acx.channel.';

type ErrorClass = { readonly marker: symbol; prototype: BaseCradleError };

/** Root of every error the BaseCradle client raises. */
export class BaseCradleError extends AcxError {
  static readonly marker: symbol = Symbol.for(`${MARKER_PREFIX}BaseCradleError`);
  readonly status: number | undefined;
  readonly title: string | undefined;
  readonly detail: string | undefined;
  readonly instance: string | undefined;
  /** The whole problem document, when the platform sent one. */
  readonly problem: ProblemDocument | undefined;

  constructor(init: BaseCradleErrorInit) {
    // A problem's detail is the platform's text; scrubbed all the same, as everything a user reads is.
    super(init.code ?? 'basecradle', scrubSecrets(init.message), { ...(init.hint ? { hint: init.hint } : {}), ...(init.cause === undefined ? {} : { cause: init.cause }) });
    this.name = new.target.name;
    this.status = init.status;
    this.title = init.title;
    this.detail = init.detail;
    this.instance = init.instance;
    this.problem = init.problem;
    // Every class from this one down to the instance's own carries its marker.
    for (let klass: unknown = new.target; klass && klass !== AcxError; klass = Object.getPrototypeOf(klass)) {
      if (Object.hasOwn(klass as object, 'marker')) Object.defineProperty(this, (klass as ErrorClass).marker, { value: true });
    }
  }

  /** `error instanceof this class`, also for an error made by another copy of acx. */
  static override isInstance<T extends ErrorClass>(this: T, error: unknown): error is T['prototype'] {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[this.marker] === true;
  }
}

const marker = (name: string) => Symbol.for(`${MARKER_PREFIX}${name}`);

// Each class below declares a private brand (type-only, nothing at run time): it makes the
// classes nominal, so a failed isInstance() check narrows to the other classes, not to never.

export class AuthenticationError extends BaseCradleError {
  static override readonly marker = marker('AuthenticationError');
  declare private readonly brandAuthenticationError: true;
}
export class UnauthorizedError extends AuthenticationError {
  static override readonly marker = marker('UnauthorizedError');
  declare private readonly brandUnauthorizedError: true;
}
export class InvalidCredentialsError extends AuthenticationError {
  static override readonly marker = marker('InvalidCredentialsError');
  declare private readonly brandInvalidCredentialsError: true;
}
export class InvalidSignatureError extends AuthenticationError {
  static override readonly marker = marker('InvalidSignatureError');
  declare private readonly brandInvalidSignatureError: true;
}
/** Not a ForbiddenError: the account itself is stopped, not this one action. */
export class AccountSuspendedError extends BaseCradleError {
  static override readonly marker = marker('AccountSuspendedError');
  declare private readonly brandAccountSuspendedError: true;
}
export class ForbiddenError extends BaseCradleError {
  static override readonly marker = marker('ForbiddenError');
  declare private readonly brandForbiddenError: true;
}
export class NotAViewerError extends ForbiddenError {
  static override readonly marker = marker('NotAViewerError');
  declare private readonly brandNotAViewerError: true;
}
export class NotTimelineOwnerError extends ForbiddenError {
  static override readonly marker = marker('NotTimelineOwnerError');
  declare private readonly brandNotTimelineOwnerError: true;
}
export class NotTaskAuthorError extends ForbiddenError {
  static override readonly marker = marker('NotTaskAuthorError');
  declare private readonly brandNotTaskAuthorError: true;
}
export class TimelineLockedError extends ForbiddenError {
  static override readonly marker = marker('TimelineLockedError');
  declare private readonly brandTimelineLockedError: true;
}
export class NotFoundError extends BaseCradleError {
  static override readonly marker = marker('NotFoundError');
  declare private readonly brandNotFoundError: true;
}
export class ConflictError extends BaseCradleError {
  static override readonly marker = marker('ConflictError');
  declare private readonly brandConflictError: true;
}
export class TaskNotPendingError extends ConflictError {
  static override readonly marker = marker('TaskNotPendingError');
  declare private readonly brandTaskNotPendingError: true;
}

/** A 422: `.errors` holds the messages per field, as `{field: [message]}`. */
export class ValidationError extends BaseCradleError {
  static override readonly marker = marker('ValidationError');
  declare private readonly brandValidationError: true;
  readonly errors: Record<string, string[]>;
  constructor(init: BaseCradleErrorInit) {
    super(init);
    const errors = init.problem?.errors;
    this.errors = errors && typeof errors === 'object' ? errors : {};
  }
}
export class ValidationFailedError extends ValidationError {
  static override readonly marker = marker('ValidationFailedError');
  declare private readonly brandValidationFailedError: true;
}
export class CurrentPasswordIncorrectError extends ValidationError {
  static override readonly marker = marker('CurrentPasswordIncorrectError');
  declare private readonly brandCurrentPasswordIncorrectError: true;
}
export class PasswordConfirmationMismatchError extends ValidationError {
  static override readonly marker = marker('PasswordConfirmationMismatchError');
  declare private readonly brandPasswordConfirmationMismatchError: true;
}

/** A 429: `.retryAfter` is the Retry-After header in seconds (undefined when it was absent). */
export class RateLimitedError extends BaseCradleError {
  static override readonly marker = marker('RateLimitedError');
  declare private readonly brandRateLimitedError: true;
  readonly retryAfter: number | undefined;
  constructor(init: BaseCradleErrorInit) {
    super(init);
    this.retryAfter = init.retryAfter;
  }
}
export class InvalidRequestError extends BaseCradleError {
  static override readonly marker = marker('InvalidRequestError');
  declare private readonly brandInvalidRequestError: true;
}
export class InvalidCursorError extends InvalidRequestError {
  static override readonly marker = marker('InvalidCursorError');
  declare private readonly brandInvalidCursorError: true;
}
export class InvalidFilterError extends InvalidRequestError {
  static override readonly marker = marker('InvalidFilterError');
  declare private readonly brandInvalidFilterError: true;
}
/** A 410 from a webhook ingest URL whose endpoint is disabled. */
export class EndpointDisabledError extends BaseCradleError {
  static override readonly marker = marker('EndpointDisabledError');
  declare private readonly brandEndpointDisabledError: true;
}
export class PayloadTooLargeError extends BaseCradleError {
  static override readonly marker = marker('PayloadTooLargeError');
  declare private readonly brandPayloadTooLargeError: true;
}

/** No answer came: the connection failed or timed out (after the retries the request was allowed). */
export class APIConnectionError extends BaseCradleError {
  static override readonly marker = marker('APIConnectionError');
  declare private readonly brandAPIConnectionError: true;
}

/** Neither a token nor email + password was given. */
export class MissingCredentialsError extends BaseCradleError {
  static override readonly marker = marker('MissingCredentialsError');
  declare private readonly brandMissingCredentialsError: true;
}

type ProblemClass = new (init: BaseCradleErrorInit) => BaseCradleError;

/** FACTS.md's table: each code has its own class. */
export const ERROR_CLASS_BY_CODE: Readonly<Record<ProblemCode, ProblemClass>> = {
  unauthorized: UnauthorizedError,
  invalid_credentials: InvalidCredentialsError,
  invalid_signature: InvalidSignatureError,
  account_suspended: AccountSuspendedError,
  not_a_viewer: NotAViewerError,
  not_timeline_owner: NotTimelineOwnerError,
  not_task_author: NotTaskAuthorError,
  timeline_locked: TimelineLockedError,
  not_found: NotFoundError,
  task_not_pending: TaskNotPendingError,
  validation_failed: ValidationFailedError,
  current_password_incorrect: CurrentPasswordIncorrectError,
  password_confirmation_mismatch: PasswordConfirmationMismatchError,
  rate_limited: RateLimitedError,
  invalid_cursor: InvalidCursorError,
  invalid_filter: InvalidFilterError,
  endpoint_disabled: EndpointDisabledError,
  payload_too_large: PayloadTooLargeError,
};

/**
 * The error for a non-2xx answer. A problem document with a known code gets that code's class;
 * an unknown or non-string code, or a body that is not a problem document, gets a plain
 * BaseCradleError that still says what came back.
 */
export function errorFromResponse(request: string, status: number, headers: Headers, body: unknown): BaseCradleError {
  const type = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const problem = type === 'application/problem+json' && typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as ProblemDocument) : undefined;
  const saidCode = typeof problem?.code === 'string' ? problem.code : undefined;
  const code = isProblemCode(saidCode) ? saidCode : undefined;
  const Class = code ? ERROR_CLASS_BY_CODE[code] : BaseCradleError;
  const detail = typeof problem?.detail === 'string' ? problem.detail : undefined;
  const title = typeof problem?.title === 'string' ? problem.title : undefined;
  const said = detail ?? title ?? (typeof body === 'string' && body.trim() ? body.trim().slice(0, 200) : undefined);
  return new Class({
    message: `BaseCradle refused ${request}: ${status}${saidCode ? ` ${saidCode}` : ''}${said ? ` — ${said}` : ''}`,
    status,
    code: code ?? 'basecradle',
    title,
    detail,
    instance: typeof problem?.instance === 'string' ? problem.instance : undefined,
    problem,
    retryAfter: retryAfterSeconds(headers.get('retry-after')),
    hint: code ? HINTS[code] : undefined,
  });
}

const HINTS: Partial<Record<ProblemCode, string>> = {
  unauthorized: 'Check BASECRADLE_TOKEN (or BASECRADLE_EMAIL and BASECRADLE_PASSWORD): the token is missing, revoked or was never issued.',
  invalid_credentials: 'Check BASECRADLE_EMAIL and BASECRADLE_PASSWORD.',
  rate_limited: 'Wait for the time the platform named, then try again.',
};

/** Retry-After as seconds: a number of seconds, or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
