/**
 * acx's errors: one `code` vocabulary and classes a caller can recognise across copies of acx.
 *
 * Errors that reach a user carry a stable `code` and a `hint` that says what to do next. Every
 * layer throws AcxError (or a subclass) for conditions a user can act on.
 *
 * Recognising an error: `instanceof` fails when two installed copies of acx meet in one process
 * (an app and a plugin that each depend on acx), because each copy has its own classes. Every
 * class here therefore also has a static `isInstance()` that checks a `Symbol.for` marker, which
 * is shared process-wide, the way the AI SDK's errors do (`APICallError.isInstance`). Narrow on
 * the class with `PolicyError.isInstance(error)` or on the code with
 * `AcxError.hasCode(error, 'policy')`.
 */

import type { GuardrailTrip } from './hooks.ts';

/** Every `code` an AcxError can carry. A code not listed here does not compile. */
/** The BaseCradle platform's problem+json codes (FACTS.md's table): the one list the client's error classes key on. */
export const BASECRADLE_PROBLEM_CODES = [
  'unauthorized',
  'invalid_credentials',
  'invalid_signature',
  'account_suspended',
  'not_a_viewer',
  'not_timeline_owner',
  'not_task_author',
  'timeline_locked',
  'not_found',
  'task_not_pending',
  'validation_failed',
  'current_password_incorrect',
  'password_confirmation_mismatch',
  'rate_limited',
  'invalid_cursor',
  'invalid_filter',
  'endpoint_disabled',
  'payload_too_large',
] as const;
export type BaseCradleProblemCode = (typeof BASECRADLE_PROBLEM_CODES)[number];

export type AcxErrorCode =
  // The CLI's own outcomes (their exit codes: src/frontends/cli/exit-codes.ts)
  | 'usage'
  | 'failed'
  | 'refused'
  | 'tampered'
  | 'internal'
  // Settings, policy and the harness seam
  | 'config'
  | 'policy'
  | 'net-guard'
  | 'harness-capability-unsupported'
  | 'harness-model'
  | 'sandbox-unavailable'
  | 'workspace-path'
  | 'output-invalid'
  | 'not-running'
  | 'session-not-found'
  | 'agent-definition'
  | 'spec-missing'
  // A turn
  | 'aborted'
  | 'turn-claimed'
  | 'session-busy'
  | 'turn-compacted'
  | 'turn-id-taken'
  | 'turn-id-unsupported'
  | 'turn-suspended'
  | 'turn-unfinished'
  | 'turn-interrupted'
  | 'no-unfinished-turn'
  | 'no-running-turn'
  | 'session-detached'
  | 'session-state-invalid'
  | 'rewind-refused'
  | 'unsupported-content'
  // Hooks and guardrails (harness/guards.ts)
  | 'guardrail-tripped'
  | 'hook-failed'
  // Tools
  | 'tool-input'
  | 'tool-invalid'
  | 'self-authorship-input'
  | 'self-authorship-target'
  | 'media-input'
  | 'media-failed'
  // The model and its record/replay cassettes
  | 'replay-mismatch'
  | 'replay-incomplete'
  | 'provider-auth'
  | 'provider-context-overflow'
  | 'provider-forbidden'
  | 'provider-malformed'
  | 'provider-model-not-found'
  | 'provider-not-found'
  | 'provider-quota'
  | 'provider-rate-limited'
  | 'provider-rejected'
  | 'provider-server'
  | 'provider-unknown-host'
  | 'provider-unreachable'
  // Storage and memory
  | 'store-open'
  | 'store-migration-not-additive'
  | 'lease-lost'
  | 'memory-closed'
  | 'memory-invalid-input'
  | 'memory-merge'
  | 'memory-not-found'
  | 'memory-provider'
  | 'memory-repo'
  | 'memory-salt'
  | 'memory-tier'
  // MCP
  | 'mcp-call-failed'
  | 'mcp-cancelled'
  | 'mcp-host-tool'
  | 'mcp-invalid-input'
  | 'mcp-needs-approval'
  | 'mcp-protocol-revision'
  | 'mcp-timeout'
  | 'mcp-tool-error'
  | 'mcp-unavailable'
  | 'mcp-login-required'
  | 'mcp-auth-failed'
  | 'mcp-credentials'
  // ACP harnesses
  | 'acp-agent-exited'
  | 'acp-bootstrap-failed'
  | 'acp-bootstrap-locked'
  | 'acp-env'
  | 'acp-message-too-large'
  | 'acp-no-paused-turn'
  | 'acp-no-turn'
  | 'acp-outcome-unknown'
  | 'acp-output-invalid'
  | 'acp-port-unavailable'
  | 'acp-prompt-failed'
  | 'acp-proxy'
  | 'acp-sandbox'
  | 'acp-session-closed'
  | 'acp-skill'
  | 'acp-startup-timeout'
  | 'acp-turn-in-progress'
  | 'acp-turn-lost'
  | 'acp-turn-paused'
  | 'acp-turn-pausing'
  | 'acp-unknown-tool-call'
  | 'acp-upstream-unreachable'
  | 'cache-entry-busy'
  | 'cache-entry-unknown'
  // The ACP server (acx acp): files read and written, commands run, through the editor
  | 'client-file'
  | 'client-terminal'
  // The BaseCradle client (channel/): the platform's problem codes (FACTS.md), then the client's own
  | BaseCradleProblemCode
  | 'basecradle'
  | 'connection_error'
  | 'missing_credentials'
  | 'invalid_argument'
  | 'invalid_response'
  // The platform tools: a refusal the model reads
  | 'platform_tool'
  // Cartridges: the container, keys, signatures, build, strip, SAVE
  | 'cartridge-entry'
  | 'cartridge-exists'
  | 'cartridge-format'
  | 'cartridge-missing'
  | 'cartridge-not-a-file'
  | 'cartridge-path'
  | 'cartridge-rom'
  | 'cartridge-schema'
  | 'cartridge-tampered'
  | 'cartridge-too-large'
  | 'cartridge-unreadable'
  | 'cartridge-version'
  | 'dsse-malformed'
  | 'dsse-statement'
  | 'key-exists'
  | 'key-invalid'
  | 'key-location'
  | 'key-missing'
  | 'trust-registry'
  | 'build-duplicate'
  | 'build-internal'
  | 'build-key-location'
  | 'build-output'
  | 'build-publisher'
  | 'scrub-blocked'
  | 'strip-mismatch'
  | 'strip-output'
  | 'save-touched-rom'
  | 'save-zone'
  // Booting a cartridge: the refusals (CartridgeBootRefusal)
  | 'cartridge-untrusted'
  | 'cartridge-unsupported-harness'
  | 'cartridge-preflight'
  // The harness contract
  | 'contract-host-tools'
  | 'contract-model-facts'
  | 'contract-role-binding'
  | 'contract-scopes'
  | 'harness-requirements-invalid'
  | 'unsupported-harness'
  | 'preflight-refused';

export interface AcxErrorOptions {
  hint?: string;
  cause?: unknown;
  /** Extra members of the error's JSON form (e.g. a scrub gate's findings). */
  details?: Record<string, unknown>;
}

const ACX_ERROR = 'acx.error';

/** The marker of a subclass: `acx.error.<ClassName>`. */
export function errorMarker(className: string): string {
  return `${ACX_ERROR}.${className}`;
}

/**
 * Sets a marker on an error. Non-enumerable, so it stays out of JSON and logs; keyed by
 * `Symbol.for`, so every copy of acx in the process sees the same key.
 */
export function setMarker(error: Error, marker: string): void {
  Object.defineProperty(error, Symbol.for(marker), { value: true, enumerable: false });
}

export class AcxError extends Error {
  readonly code: AcxErrorCode;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: AcxErrorCode, message: string, options: AcxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    setMarker(this, ACX_ERROR);
    this.name = 'AcxError';
    this.code = code;
    this.hint = options.hint;
    this.details = options.details;
  }

  /** Whether `error` is an AcxError of any copy of acx (instanceof sees only this copy's). */
  static isInstance(error: unknown): error is AcxError {
    return AcxError.hasMarker(error, ACX_ERROR);
  }

  /** Whether `error` is an AcxError with this code; narrows `error.code` to it. */
  static hasCode<C extends AcxErrorCode>(error: unknown, code: C): error is AcxError & { readonly code: C } {
    return AcxError.isInstance(error) && error.code === code;
  }

  static hasMarker(error: unknown, marker: string): boolean {
    const key = Symbol.for(marker);
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[key] === true;
  }

  /** One human-readable paragraph: what went wrong, then what to do. */
  describe(): string {
    return this.hint ? `${this.message}\n  → ${this.hint}` : this.message;
  }
}

const CONFIG_ERROR = errorMarker('ConfigError');

/** A configuration value is missing or malformed. Raised at start-up, before any work. */
export class ConfigError extends AcxError {
  constructor(message: string, options: AcxErrorOptions = {}) {
    super('config', message, options);
    setMarker(this, CONFIG_ERROR);
    this.name = 'ConfigError';
  }

  static override isInstance(error: unknown): error is ConfigError {
    return AcxError.hasMarker(error, CONFIG_ERROR);
  }
}

const POLICY_ERROR = errorMarker('PolicyError');

/** A tool or capability was refused by the active Policy. */
export class PolicyError extends AcxError {
  constructor(message: string, options: AcxErrorOptions = {}) {
    super('policy', message, options);
    setMarker(this, POLICY_ERROR);
    this.name = 'PolicyError';
  }

  static override isInstance(error: unknown): error is PolicyError {
    return AcxError.hasMarker(error, POLICY_ERROR);
  }
}

const CAPABILITY_UNSUPPORTED = errorMarker('HarnessCapabilityUnsupportedError');

/** The chosen harness cannot do what was asked; thrown instead of silently degrading. */
export class HarnessCapabilityUnsupportedError extends AcxError {
  constructor(message: string, options: AcxErrorOptions = {}) {
    super('harness-capability-unsupported', message, options);
    setMarker(this, CAPABILITY_UNSUPPORTED);
    this.name = 'HarnessCapabilityUnsupportedError';
  }

  static override isInstance(error: unknown): error is HarnessCapabilityUnsupportedError {
    return AcxError.hasMarker(error, CAPABILITY_UNSUPPORTED);
  }
}

const GUARDRAIL_TRIPPED_MARKER = errorMarker('GuardrailTrippedError');

/** What a tripped guardrail stopped, for the hint. */
const TRIP_HINTS: Record<GuardrailTrip['kind'], string> = {
  input: 'The message was not sent to the model and nothing of it was recorded; send another message.',
  tool: 'The call did not run (nor did the other calls of its step); the turn is recorded as failed.',
  output: 'The reply was withheld: it is not returned, and the journal keeps a note in its place; the turn is recorded as failed.',
};

/**
 * A guardrail tripped: the turn ended before what it guards happened (`kind` input: before the
 * model was called; tool: before the call ran; output: before the reply was returned).
 */
export class GuardrailTrippedError extends AcxError {
  readonly guardrail: string;
  readonly kind: GuardrailTrip['kind'];
  readonly reason: string;
  constructor(trip: GuardrailTrip) {
    super('guardrail-tripped', `The ${trip.kind} guardrail "${trip.guardrail}" tripped: ${trip.reason}`, {
      hint: TRIP_HINTS[trip.kind],
      details: { guardrail: trip.guardrail, kind: trip.kind, reason: trip.reason },
    });
    setMarker(this, GUARDRAIL_TRIPPED_MARKER);
    this.name = 'GuardrailTrippedError';
    this.guardrail = trip.guardrail;
    this.kind = trip.kind;
    this.reason = trip.reason;
  }

  static override isInstance(error: unknown): error is GuardrailTrippedError {
    return AcxError.hasMarker(error, GUARDRAIL_TRIPPED_MARKER);
  }
}

const REPLAY_MISMATCH_MARKER = errorMarker('ReplayMismatchError');

/** A replayed model call does not match the cassette's recording (acx run --replay). */
export class ReplayMismatchError extends AcxError {
  constructor(message: string, hint: string) {
    super('replay-mismatch', message, { hint });
    setMarker(this, REPLAY_MISMATCH_MARKER);
    this.name = 'ReplayMismatchError';
  }

  static override isInstance(error: unknown): error is ReplayMismatchError {
    return AcxError.hasMarker(error, REPLAY_MISMATCH_MARKER);
  }
}

const TURN_ABORTED_MARKER = errorMarker('TurnAbortedError');

/** The turn was cancelled (an abort signal); named AbortError, as the platform's aborts are. */
export class TurnAbortedError extends AcxError {
  constructor() {
    super('aborted', 'The turn was cancelled.', { hint: 'The journal is consistent; send the next message when ready.' });
    setMarker(this, TURN_ABORTED_MARKER);
    this.name = 'AbortError';
  }

  static override isInstance(error: unknown): error is TurnAbortedError {
    return AcxError.hasMarker(error, TURN_ABORTED_MARKER);
  }
}

const REWIND_REFUSED_MARKER = errorMarker('RewindRefusedError');

/** Why a rewind cannot restore a file: someone else changed it since the agent's tool last did, or the content to restore was never recorded. */
export interface RewindRefusal {
  path: string;
  reason: 'changed-since' | 'not-recorded';
}

/** `session.rewind({ files: true })` refused: it names each file it cannot restore, and changed nothing. */
export class RewindRefusedError extends AcxError {
  readonly files: readonly RewindRefusal[];

  constructor(sessionId: string, files: readonly RewindRefusal[]) {
    const listed = files.map((file) => `${file.path} (${file.reason === 'changed-since' ? 'changed by someone else since the agent last wrote it' : 'its earlier content was not recorded'})`).join(', ');
    super('rewind-refused', `Cannot rewind session ${sessionId}: ${files.length === 1 ? 'a file' : `${files.length} files`} cannot be restored: ${listed}. Nothing was changed.`, {
      hint: 'Put those files back as the agent left them (or keep them, and rewind without restoring files).',
      details: { files },
    });
    setMarker(this, REWIND_REFUSED_MARKER);
    this.name = 'RewindRefusedError';
    this.files = files;
  }

  static override isInstance(error: unknown): error is RewindRefusedError {
    return AcxError.hasMarker(error, REWIND_REFUSED_MARKER);
  }
}

/**
 * Whether `error` says a lease was lost (code `lease-lost`): the session or items it covered may
 * be another holder's now, so the work stops and writes nothing more to them.
 */
export function isLeaseLost(error: unknown): error is AcxError {
  return AcxError.isInstance(error) && error.code === 'lease-lost';
}

/** Whether `test` holds for `error` or for an error it was caused by (a wrapper's `cause`, a few levels deep). */
export function someCause(error: unknown, test: (error: unknown) => boolean): boolean {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    if (test(at)) return true;
  }
  return false;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  // An error copied into a plain object (pg-boss's background errors are) keeps its message:
  // that, not the whole object with its stack, is what a log line or a reason should say.
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : JSON.stringify(error);
}
