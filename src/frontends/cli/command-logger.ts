import { createLogger, parseLogLevel, parseLogTime, type Logger, type LogLevel } from '../../util/logger.ts';

/**
 * The one rule for how much a command logs on stderr, unless ACX_LOG_LEVEL says otherwise:
 * - `answer`: a command a person runs for its output (run, chat, acp, mcp, handshake,
 *   resolved-config …) logs warnings and errors only, as the library does: stdout carries the
 *   answer, stderr stays quiet unless something needs the user's attention;
 * - `service`: a process an operator runs and watches (wake, router, worker, platform serve,
 *   cleanup) also logs its info trail — the bookends of every wake, each delivery, each job —
 *   because its log is how the operator knows what it did.
 * README.md ("Logs") states the same rule.
 */
export type CommandRole = 'answer' | 'service';

export const DEFAULT_LOG_LEVEL: Readonly<Record<CommandRole, LogLevel>> = { answer: 'warn', service: 'info' };

/** The command's logger; a bad ACX_LOG_LEVEL or ACX_LOG_TIME is a usage error naming what to set. */
export function commandLogger(role: CommandRole, env: NodeJS.ProcessEnv = process.env): Logger {
  return createLogger({ level: parseLogLevel(env.ACX_LOG_LEVEL, DEFAULT_LOG_LEVEL[role]), time: parseLogTime(env.ACX_LOG_TIME) });
}
