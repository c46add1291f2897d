import { AcxError } from '../util/errors.ts';
import { scrubSecrets } from '../util/scrub.ts';

/** Exit codes every subcommand shares; documented in the README. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  refused: 3,
  tampered: 4,
} as const;

/** Thrown by a subcommand to end the process with a code after it has printed what it must. */
export class CliExit extends Error {
  readonly exitCode: number;
  constructor(exitCode: number, message = '') {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Prints an error the way every subcommand does: what went wrong, then what to do. */
export function printError(error: unknown): number {
  // A provider's error can echo the key it was sent: no credential reaches the terminal.
  const write = (text: string) => process.stderr.write(scrubSecrets(text));
  if (error instanceof CliExit) {
    if (error.message) write(`${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof AcxError) {
    write(`acx: ${error.describe()}\n`);
    return error.code === 'usage' ? EXIT.usage : EXIT.failure;
  }
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  write(`acx: unexpected error: ${message}\n`);
  return EXIT.failure;
}
