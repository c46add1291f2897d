import { randomBytes, scryptSync } from 'node:crypto';
import { secureEqual } from '../util/secure-compare.ts';

/**
 * Passwords are stored as `scrypt$N$r$p$salt$hash` (node:crypto's scrypt, a memory-hard KDF):
 * the parameters travel with the hash, so they can be raised later without breaking old ones.
 */
const N = 16384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, KEY_BYTES, { N, r: R, p: P });
  return ['scrypt', N, R, P, salt.toString('base64'), hash.toString('base64')].join('$');
}

export function verifyPassword(password: string, stored: string): boolean {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = scryptSync(password, Buffer.from(salt, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return secureEqual(actual, expected);
}
