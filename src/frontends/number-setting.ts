import { AcxError } from '../core/errors.ts';

export type NumberKind = 'integer' | 'positive integer' | 'positive integer or all' | 'positive' | 'positive seconds' | 'non-negative seconds';

const RULES: Record<NumberKind, { ok: (value: number) => boolean; must: string }> = {
  integer: { ok: Number.isInteger, must: 'a whole number' },
  'positive integer': { ok: (v) => Number.isInteger(v) && v >= 1, must: 'a whole number of at least 1' },
  // "all" itself is read by the caller; a number here must be a whole one of at least 1.
  'positive integer or all': { ok: (v) => Number.isInteger(v) && v >= 1, must: 'a whole number of at least 1, or "all"' },
  positive: { ok: (v) => Number.isFinite(v) && v > 0, must: 'a positive number' },
  'positive seconds': { ok: (v) => Number.isFinite(v) && v > 0, must: 'a positive number of seconds' },
  'non-negative seconds': { ok: (v) => Number.isFinite(v) && v >= 0, must: 'zero or more seconds' },
};

/**
 * A number setting of a command: its flag, else its ACX_* variable, else the default. A malformed
 * value is a usage error naming the flag or variable it came from, what it must be, and the default.
 */
export function numberSetting(flag: unknown, env: NodeJS.ProcessEnv, variable: string, name: string, fallback: number, kind: NumberKind): number {
  const fromFlag = flag !== undefined && flag !== '';
  const raw = fromFlag ? flag : env[variable]?.trim() || undefined;
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!RULES[kind].ok(value)) {
    throw new AcxError('usage', `${fromFlag ? name : variable} must be ${RULES[kind].must}, not "${String(raw)}".`, {
      hint: `Set ${name} (or ${variable}), or leave it out for the default (${fallback}).`,
    });
  }
  return value;
}
