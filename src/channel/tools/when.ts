import { PlatformToolError } from './kit.ts';

/**
 * When a task activates, as a model writes it: an offset from now (`+90m`, `+2h`, `+1d`,
 * `+2w`, `+1h30m`, `+45s`) or an ISO 8601 time, passed on as given (one with no zone is read in the
 * account's zone by the platform).
 */
const OFFSET = /^\+\s*(?:(\d+)\s*w)?\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m(?:in)?)?\s*(?:(\d+)\s*s)?$/i;
const ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
/** A year: further out than any agent should plan a wake. */
export const MAX_OFFSET_MS = 366 * 24 * 3_600_000;

export function activationTime(when: string, now: Date): string {
  const text = when.trim();
  const offset = OFFSET.exec(text);
  if (offset && offset.slice(1).some((part) => part !== undefined)) {
    const [weeks, days, hours, minutes, seconds] = offset.slice(1).map((part) => Number(part ?? 0));
    const ms = ((((weeks! * 7 + days!) * 24 + hours!) * 60 + minutes!) * 60 + seconds!) * 1000;
    if (ms <= 0) throw new PlatformToolError(`"${when}" is no time from now.`, 'Use a positive offset such as +90m.');
    if (ms > MAX_OFFSET_MS) throw new PlatformToolError(`"${when}" is more than a year away.`, 'Schedule at most a year ahead.');
    return new Date(now.getTime() + ms).toISOString();
  }
  if (ISO.test(text) && !Number.isNaN(Date.parse(/Z|[+-]\d{2}:?\d{2}$/i.test(text) ? text : `${text}Z`))) return text;
  throw new PlatformToolError(`"${when}" is neither an offset nor an ISO time.`, 'Write an offset such as +90m, +2h or +1d12h, or a time such as 2026-06-10T15:00:00Z.');
}
