import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether two secrets are equal, in time that depends only on their lengths: a token, a
 * signature or a hash compared with `===` leaks how many leading characters matched.
 */
export function secureEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const left = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
  const right = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  return left.length === right.length && timingSafeEqual(left, right);
}

/** A presented bearer token against the expected one; hashing first hides even the length. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
