/**
 * Errors that reach a user carry a stable `code` and a `hint` that says what to do next.
 * Every layer throws AcxError (or a subclass) for conditions a user can act on.
 */
export class AcxError extends Error {
  readonly code: string;
  readonly hint: string | undefined;

  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AcxError';
    this.code = code;
    this.hint = options.hint;
  }

  /** One human-readable paragraph: what went wrong, then what to do. */
  describe(): string {
    return this.hint ? `${this.message}\n  → ${this.hint}` : this.message;
  }
}

/** A configuration value is missing or malformed. Raised at start-up, before any work. */
export class ConfigError extends AcxError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('config', message, options);
    this.name = 'ConfigError';
  }
}

/** A tool or capability was refused by the active Policy. */
export class PolicyError extends AcxError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('policy', message, options);
    this.name = 'PolicyError';
  }
}

/** The chosen harness cannot do what was asked; thrown instead of silently degrading. */
export class HarnessCapabilityUnsupportedError extends AcxError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('harness-capability-unsupported', message, options);
    this.name = 'HarnessCapabilityUnsupportedError';
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}
