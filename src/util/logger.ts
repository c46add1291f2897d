import { AcxError } from '../core/errors.ts';
import { scrubSecrets } from './scrub.ts';

/**
 * A logfmt logger: one line per event, `LEVEL event key=value ...`, written to stderr.
 * Values are flattened to one line, scrubbed of credential shapes, length-bounded and quoted
 * when needed, so a tool's error text can neither split a line nor forge a field.
 * Never pass prompts, request/response bodies or keys as fields.
 */
import type { LogFields, Logger, LogLevel } from '../core/logger.ts';

export type { LogFields, Logger, LogLevel };

const LEVEL_RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const LEVEL_LABEL: Record<Exclude<LogLevel, 'silent'>, string> = {
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARNING',
  error: 'ERROR',
};

/** Values longer than this are cut, except fields the caller marks as unbounded. */
const MAX_VALUE_CHARS = 2000;

export interface LogSink {
  write(line: string): void;
}


/**
 * ACX_LOG_LEVEL: a name (debug, info, warn/warning, error, critical) or a number on the usual
 * 10/20/30/40 scale. Unset means the fallback; anything else is an error that says what to set,
 * never a silent fallback that hides the trail someone asked for.
 */
export function parseLogLevel(value: string | undefined, fallback: LogLevel = 'info'): LogLevel {
  const v = value?.trim().toLowerCase() ?? '';
  if (v === '') return fallback;
  if (v === 'warning') return 'warn';
  if (v === 'critical' || v === 'fatal') return 'error';
  if (v in LEVEL_RANK) return v as LogLevel;
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return n <= 10 ? 'debug' : n <= 20 ? 'info' : n <= 30 ? 'warn' : 'error';
  }
  throw new AcxError('usage', `ACX_LOG_LEVEL must be debug, info, warn, error or a number (10-50), not "${value}".`, {
    hint: 'Unset it for the default.',
  });
}

/**
 * ACX_LOG_TIME: `1` (or `true`, `iso`) starts every line with its ISO 8601 UTC time, for a
 * service whose stderr goes to a plain file rather than to journald or a container runtime that
 * stamps lines itself. Unset, `0` or `false`: no time. Anything else is refused, as for the level.
 */
export function parseLogTime(value: string | undefined): boolean {
  const v = value?.trim().toLowerCase() ?? '';
  if (v === '' || v === '0' || v === 'false') return false;
  if (v === '1' || v === 'true' || v === 'iso') return true;
  throw new AcxError('usage', `ACX_LOG_TIME must be 1 (each line starts with its ISO time) or 0, not "${value}".`, {
    hint: 'Unset it for lines without a time.',
  });
}

/** Formats one value: flattened, scrubbed, bounded, quoted when it holds spaces, quotes or '='. */
export function formatLogValue(value: unknown, unbounded = false): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
  else if (value instanceof Error) text = value.message;
  else text = JSON.stringify(value) ?? '';
  text = scrubSecrets(text.replace(/[\r\n\t]+/g, ' '));
  if (!unbounded && text.length > MAX_VALUE_CHARS) {
    text = `${text.slice(0, MAX_VALUE_CHARS)}…(+${text.length - MAX_VALUE_CHARS} chars)`;
  }
  if (text === '' || /[\s"=\\]/.test(text)) return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return text;
}

export function formatLogLine(level: Exclude<LogLevel, 'silent'>, event: string, fields: LogFields): string {
  const parts = [LEVEL_LABEL[level], event];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    parts.push(`${key}=${formatLogValue(value, key === 'text')}`);
  }
  return parts.join(' ');
}

class LogfmtLogger implements Logger {
  readonly level: LogLevel;
  private readonly sink: LogSink;
  private readonly base: LogFields;
  private readonly time: boolean;

  constructor(level: LogLevel, sink: LogSink, base: LogFields, time: boolean) {
    this.level = level;
    this.sink = sink;
    this.base = base;
    this.time = time;
  }

  private emit(level: Exclude<LogLevel, 'silent'>, event: string, fields: LogFields | undefined): void {
    if (LEVEL_RANK[level] < LEVEL_RANK[this.level]) return;
    const line = formatLogLine(level, event, { ...this.base, ...fields });
    this.sink.write(this.time ? `${new Date().toISOString()} ${line}\n` : `${line}\n`);
  }

  debug(event: string, fields?: LogFields): void {
    this.emit('debug', event, fields);
  }
  info(event: string, fields?: LogFields): void {
    this.emit('info', event, fields);
  }
  warn(event: string, fields?: LogFields): void {
    this.emit('warn', event, fields);
  }
  error(event: string, fields?: LogFields): void {
    this.emit('error', event, fields);
  }
  child(fields: LogFields): Logger {
    return new LogfmtLogger(this.level, this.sink, { ...this.base, ...fields }, this.time);
  }
}

export interface CreateLoggerOptions {
  level?: LogLevel;
  sink?: LogSink;
  fields?: LogFields;
  /** Start each line with its ISO time (default: no time). */
  time?: boolean;
}

/**
 * Level defaults to `ACX_LOG_LEVEL`, then warnings and errors: a library stays quiet in its
 * host's stderr unless something needs attention. The sink defaults to stderr.
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const level = options.level ?? libraryLogLevel();
  const sink = options.sink ?? { write: (line: string) => process.stderr.write(line) };
  return new LogfmtLogger(level, sink, options.fields ?? {}, options.time ?? false);
}

/** A logger that collects lines in memory; for tests and for callers that ship logs elsewhere. */
export function createMemoryLogger(level: LogLevel = 'debug'): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ level, sink: { write: (line) => lines.push(line.trimEnd()) } });
  return Object.assign(logger, { lines });
}

export const silentLogger: Logger = createLogger({ level: 'silent' });

/** A library logger never throws over the environment: a bad ACX_LOG_LEVEL means the default. */
function libraryLogLevel(): LogLevel {
  try {
    return parseLogLevel(process.env.ACX_LOG_LEVEL, 'warn');
  } catch {
    return 'warn';
  }
}
