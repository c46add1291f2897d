import { AcxError, type AcxErrorCode, errorMarker, setMarker } from '../../core/errors.ts';
import { parseLogLevel } from '../../util/logger.ts';
import { scrubSecrets } from '../../util/scrub.ts';
import { exitCodeFor } from './exit-codes.ts';

export { EXIT, exitCodeFor } from './exit-codes.ts';

const CLI_EXIT_MARKER = errorMarker('CliExit');

/**
 * Thrown by a subcommand to end the process after it has printed what it must. Its text is
 * printed exactly as written (some are machine lines, e.g. JSON-RPC); an empty one prints
 * nothing. The exit code follows from `code`, as for every error (exit-codes.ts).
 */
export class CliExit extends AcxError {
  constructor(code: AcxErrorCode, message = '', options: { details?: Record<string, unknown> } = {}) {
    super(code, message, options);
    setMarker(this, CLI_EXIT_MARKER);
    this.name = 'CliExit';
  }

  static override isInstance(error: unknown): error is CliExit {
    return AcxError.hasMarker(error, CLI_EXIT_MARKER);
  }
}

/**
 * How an error reaches the user, whatever the command:
 * - as text on stderr: `acx: <what went wrong>` and, when there is one, `  → <what to do>`;
 *   a stack trace only at ACX_LOG_LEVEL=debug (a user's mistake is not a crash);
 * - under `--json`: one JSON object on stdout, `{"error":{"code","message","hint"}}`, so a
 *   program reading stdout always gets JSON.
 */
export interface ErrorReport {
  exitCode: number;
  code: string;
  message: string;
  hint: string | undefined;
  details: Record<string, unknown> | undefined;
  /** Printed only at debug level. */
  stack: string | undefined;
}

export function errorReport(error: unknown): ErrorReport {
  if (CliExit.isInstance(error)) {
    const { message, hint } = splitHint(error.message);
    return { exitCode: exitCodeFor(error), code: error.code, message, hint, details: error.details, stack: undefined };
  }
  if (AcxError.isInstance(error)) {
    return { exitCode: exitCodeFor(error), code: error.code, message: error.message, hint: error.hint, details: error.details, stack: stackOf(error) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    exitCode: exitCodeFor(error),
    code: 'internal',
    message: `unexpected error: ${message}`,
    hint: 'Unless it names something on your side (a path, a permission), this is a bug in acx: run again with ACX_LOG_LEVEL=debug for the stack trace and report it.',
    details: undefined,
    stack: stackOf(error),
  };
}

/** Prints an error the way every subcommand does (see ErrorReport) and returns the exit code. */
export function printError(error: unknown, options: { json?: boolean } = {}): number {
  const report = errorReport(error);
  if (options.json) {
    // A command that printed its own JSON result before failing throws an empty CliExit.
    if (report.message === '' && report.hint === undefined) return report.exitCode;
    const body = { code: report.code, message: report.message.replace(/^acx: /, ''), ...(report.hint ? { hint: report.hint } : {}), ...report.details };
    writeFinal(process.stdout, `${JSON.stringify({ error: body })}\n`);
    return report.exitCode;
  }
  const lines: string[] = [];
  // A CliExit's text is printed as its command wrote it (some are machine lines, e.g. JSON-RPC).
  if (report.message) lines.push(CliExit.isInstance(error) || /^acx[: ]/.test(report.message) ? report.message : `acx: ${report.message}`);
  if (report.hint) lines.push(`  → ${report.hint}`);
  if (report.stack && debugging()) lines.push(report.stack);
  if (lines.length > 0) writeFinal(process.stderr, `${lines.join('\n')}\n`);
  return report.exitCode;
}

/** Every error text leaves through here (chat's inline errors too): the one place a last scrub of what is printed applies. */
export function writeFinal(stream: NodeJS.WritableStream, text: string): void {
  // A provider's error can echo the key it was sent: no credential reaches the terminal.
  stream.write(scrubSecrets(text));
}

/** A message that ends in `\n  → hint` (the text form) split back into its two parts. */
function splitHint(text: string): { message: string; hint: string | undefined } {
  const at = text.lastIndexOf('\n  → ');
  if (at < 0) return { message: text, hint: undefined };
  return { message: text.slice(0, at), hint: text.slice(at + '\n  → '.length) || undefined };
}

/** The stack, with each cause's below it: what a bug report needs. */
function stackOf(error: unknown): string | undefined {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.stack) parts.push(depth === 0 ? current.stack : `caused by: ${current.stack}`);
    current = current.cause;
  }
  return parts.length > 0 ? parts.join('\n') : undefined;
}

function debugging(): boolean {
  try {
    return parseLogLevel(process.env.ACX_LOG_LEVEL, 'warn') === 'debug';
  } catch {
    return false; // a bad ACX_LOG_LEVEL is reported by the command that reads it
  }
}
