import { CommanderError } from 'commander';
import { AcxError, type AcxErrorCode } from '../../core/errors.ts';

/** Exit codes every subcommand shares; documented in the README. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  refused: 3,
  tampered: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * The one map from an error to the process's exit code. Codes not listed exit 1 (`failure`):
 * the message says what went wrong and what to do.
 */
const EXIT_BY_CODE: Partial<Record<AcxErrorCode, ExitCode>> = {
  usage: EXIT.usage,
  // Refused: nothing was run or written, by design (trust, the contract, the scrub gate).
  refused: EXIT.refused,
  'cartridge-untrusted': EXIT.refused,
  'cartridge-unsupported-harness': EXIT.refused,
  'cartridge-preflight': EXIT.refused,
  'unsupported-harness': EXIT.refused,
  'preflight-refused': EXIT.refused,
  'scrub-blocked': EXIT.refused,
  'rewind-refused': EXIT.refused,
  // Tampered: the file does not match its signature; never run it.
  tampered: EXIT.tampered,
  'cartridge-tampered': EXIT.tampered,
};

/** What commander throws for `--help` and `--version`: not failures. */
const COMMANDER_DONE: ReadonlySet<string> = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/** The exit code for an error a command threw (any copy of acx's AcxError is recognised). */
export function exitCodeFor(error: unknown): ExitCode {
  // The argument parser's own errors (unknown option, missing argument) are usage errors.
  if (error instanceof CommanderError) return COMMANDER_DONE.has(error.code) ? EXIT.ok : EXIT.usage;
  if (!AcxError.isInstance(error)) return EXIT.failure;
  return EXIT_BY_CODE[error.code] ?? EXIT.failure;
}
