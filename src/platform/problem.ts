/**
 * Every error the platform answers is an RFC 9457 problem document
 * (`application/problem+json`) whose `code` is one of the platform's codes; clients choose
 * their error class by the code, not the HTTP status.
 */
export type ProblemCode =
  | 'unauthorized'
  | 'invalid_credentials'
  | 'account_suspended'
  | 'not_a_viewer'
  | 'not_timeline_owner'
  | 'not_task_author'
  | 'timeline_locked'
  | 'not_found'
  | 'task_not_pending'
  | 'validation_failed'
  | 'current_password_incorrect'
  | 'password_confirmation_mismatch'
  | 'rate_limited'
  | 'invalid_cursor'
  | 'invalid_filter'
  | 'endpoint_disabled'
  | 'payload_too_large';

const STATUS: Record<ProblemCode, number> = {
  unauthorized: 401,
  invalid_credentials: 401,
  account_suspended: 403,
  not_a_viewer: 403,
  not_timeline_owner: 403,
  not_task_author: 403,
  timeline_locked: 403,
  not_found: 404,
  task_not_pending: 409,
  validation_failed: 422,
  current_password_incorrect: 422,
  password_confirmation_mismatch: 422,
  rate_limited: 429,
  invalid_cursor: 400,
  invalid_filter: 400,
  endpoint_disabled: 410,
  payload_too_large: 413,
};

const TITLE: Record<ProblemCode, string> = {
  unauthorized: 'Unauthorized',
  invalid_credentials: 'Invalid credentials',
  account_suspended: 'Account suspended',
  not_a_viewer: 'Not a viewer',
  not_timeline_owner: 'Not the timeline owner',
  not_task_author: 'Not the task author',
  timeline_locked: 'Timeline locked',
  not_found: 'Not found',
  task_not_pending: 'Task not pending',
  validation_failed: 'Validation failed',
  current_password_incorrect: 'Current password incorrect',
  password_confirmation_mismatch: 'Password confirmation mismatch',
  rate_limited: 'Rate limited',
  invalid_cursor: 'Invalid cursor',
  invalid_filter: 'Invalid filter',
  endpoint_disabled: 'Endpoint disabled',
  payload_too_large: 'Payload too large',
};

/** A refusal the platform answers with a problem document. Thrown anywhere below a route. */
export class PlatformError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  /** validation_failed: the messages per field, as `{field: [message]}`. */
  readonly errors: Record<string, string[]> | undefined;
  /** rate_limited: seconds until a retry may succeed (the Retry-After header). */
  readonly retryAfter: number | undefined;

  constructor(code: ProblemCode, detail: string, options: { errors?: Record<string, string[]>; retryAfter?: number } = {}) {
    super(detail);
    this.name = 'PlatformError';
    this.code = code;
    this.status = STATUS[code];
    this.errors = options.errors;
    this.retryAfter = options.retryAfter;
  }
}

/** A validation_failed whose detail names each field and what is wrong with it. */
export function invalid(errors: Record<string, string[]>): PlatformError {
  const detail = Object.entries(errors)
    .map(([field, messages]) => `${field === 'base' ? '' : `${field} `}${messages.join(', ')}`)
    .join('; ');
  return new PlatformError('validation_failed', `${detail.charAt(0).toUpperCase()}${detail.slice(1)}.`, { errors });
}

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  instance: string;
  errors?: Record<string, string[]>;
}

/**
 * `type` is the BaseCradle documentation of the code (the codes mean what they mean there);
 * `instance` identifies this occurrence (the request's id), so a report can name it.
 */
export function problemDocument(error: PlatformError, instance: string): ProblemDocument {
  return {
    type: `https://basecradle.com/docs/api#error-${error.code}`,
    title: TITLE[error.code],
    status: error.status,
    code: error.code,
    detail: error.message,
    instance,
    ...(error.errors ? { errors: error.errors } : {}),
  };
}
