import { AcxError, errorMarker, setMarker } from '../core/errors.ts';

/**
 * Memory keys are short slugs a model can type back exactly: letters, digits and `. _ - / :`,
 * starting with a letter or digit. `/` groups keys (`observed/<session>/...`) so `list` can
 * filter by prefix.
 */
export const MAX_KEY_CHARS = 200;
const KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/;
const KEY_PREFIX = /^[A-Za-z0-9._:/-]*$/;

const MEMORY_INPUT_MARKER = errorMarker('MemoryInputError');

export class MemoryInputError extends AcxError {
  constructor(message: string, hint: string) {
    super('memory-invalid-input', message, { hint });
    setMarker(this, MEMORY_INPUT_MARKER);
    this.name = 'MemoryInputError';
  }

  static override isInstance(error: unknown): error is MemoryInputError {
    return AcxError.hasMarker(error, MEMORY_INPUT_MARKER);
  }
}

/** A best-effort slug of `text`, for hints and for generated keys. */
export function slugifyKey(text: string, maxChars = 64): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._:/-]+/g, '_')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, maxChars)
    .replace(/[_.:/-]+$/, '');
  return slug;
}

export function validateMemoryKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new MemoryInputError('A memory key is required.', 'Pass a short key such as "home_city".');
  }
  if (key.length > MAX_KEY_CHARS) {
    throw new MemoryInputError(
      `The memory key is ${key.length} characters long; the limit is ${MAX_KEY_CHARS}.`,
      'Use a short key that names the fact, and put the detail in the value.',
    );
  }
  if (!KEY.test(key)) {
    const suggestion = slugifyKey(key);
    // The suggestion is in the message too: a model sees the message, not always the hint.
    const tryThis = suggestion ? `Try ${JSON.stringify(suggestion)}.` : 'Try a key such as "home_city".';
    throw new MemoryInputError(
      `The memory key ${JSON.stringify(key)} is not valid: use letters, digits and . _ - / : only, starting with a letter or digit. ${tryThis}`,
      tryThis,
    );
  }
  return key;
}

export function validateKeyPrefix(prefix: unknown): string {
  if (prefix === undefined || prefix === null) return '';
  if (typeof prefix !== 'string' || prefix.length > MAX_KEY_CHARS || !KEY_PREFIX.test(prefix)) {
    throw new MemoryInputError(
      `The key prefix ${JSON.stringify(prefix)} is not valid.`,
      'A prefix uses the same characters as a key: letters, digits and . _ - / :',
    );
  }
  return prefix;
}

/** Levenshtein distance, case-insensitive; rows are reused so a call allocates two arrays. */
export function keyDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (s === t) return 0;
  let previous = new Array<number>(t.length + 1);
  let current = new Array<number>(t.length + 1);
  for (let j = 0; j <= t.length; j++) previous[j] = j;
  for (let i = 1; i <= s.length; i++) {
    current[0] = i;
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
    }
    [previous, current] = [current, previous];
  }
  return previous[t.length]!;
}

/** Orders candidate keys nearest-first to `wanted` and keeps `limit` of them. */
export function nearestKeys(wanted: string, candidates: Iterable<string>, limit: number): string[] {
  const scored = [...new Set(candidates)].map((key) => {
    let distance = keyDistance(wanted, key);
    // A key that contains the wanted one (or the reverse) is a near miss whatever its length.
    const lw = wanted.toLowerCase();
    const lk = key.toLowerCase();
    if (lk.includes(lw) || lw.includes(lk)) distance = Math.min(distance, Math.abs(lk.length - lw.length) / 4);
    return { key, distance };
  });
  scored.sort((x, y) => x.distance - y.distance || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  return scored.slice(0, limit).map((entry) => entry.key);
}
