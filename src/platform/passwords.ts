import { randomBytes, scrypt } from 'node:crypto';
import { secureEqual } from '../util/secure-compare.ts';
import { invalid } from './problem.ts';

/**
 * Passwords are stored as `scrypt$N$r$p$salt$hash` (node:crypto's scrypt, a memory-hard KDF):
 * the parameters travel with the hash, so they can be raised later without breaking old ones.
 * Every hash and every check runs the KDF through node:crypto's async scrypt, on libuv's
 * threadpool: one sign-in never stalls the server's other requests.
 */
const N = 16384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
export const MIN_PASSWORD_LENGTH = 8;

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** The key derivation: password + salt → key. Replaceable only so tests can count or hold its calls. */
export type PasswordKdf = (password: string, salt: Buffer, keyBytes: number, params: ScryptParams) => Promise<Buffer>;

export const scryptKdf: PasswordKdf = (password, salt, keyBytes, params) =>
  new Promise((resolve, reject) => {
    // maxmem above the 128·N·r bytes scrypt needs, so raised parameters in a stored hash still run.
    scrypt(password, salt, keyBytes, { ...params, maxmem: 256 * params.N * params.r }, (error, key) => (error ? reject(error) : resolve(key)));
  });

/** A stored password hash; only hashPassword makes one, so plaintext cannot be stored by mistake. */
export type PasswordHash = string & { readonly __passwordHash: unique symbol };

const encode = (params: ScryptParams, salt: Buffer, hash: Buffer): string =>
  ['scrypt', params.N, params.r, params.p, salt.toString('base64'), hash.toString('base64')].join('$');

/**
 * What an unknown account (or a malformed hash) is checked against: the current parameters, a
 * random salt and a random "hash" no password derives to. Checking it costs one KDF run, as a
 * wrong password does, so how long a failure takes does not tell whether the account exists.
 */
const NOBODY = encode({ N, r: R, p: P }, randomBytes(SALT_BYTES), randomBytes(KEY_BYTES));

function decode(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } | undefined {
  const [scheme, n, r, p, salt, hash, ...rest] = stored.split('$');
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (scheme !== 'scrypt' || !salt || !hash || rest.length > 0 || !Object.values(params).every((v) => Number.isSafeInteger(v) && v > 0)) return undefined;
  const decoded = { params, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
  return decoded.hash.length > 0 ? decoded : undefined;
}

/** What a new password must be: validation_failed when too short. Cheap, so it can be checked before any KDF run. */
export function acceptablePassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw invalid({ password: [`must be at least ${MIN_PASSWORD_LENGTH} characters`] });
}

export class Passwords {
  private readonly kdf: PasswordKdf;

  constructor(kdf: PasswordKdf = scryptKdf) {
    this.kdf = kdf;
  }

  /** A new password, checked (acceptablePassword) and hashed with the current parameters. */
  async hash(password: string): Promise<PasswordHash> {
    acceptablePassword(password);
    const params = { N, r: R, p: P };
    const salt = randomBytes(SALT_BYTES);
    return encode(params, salt, await this.kdf(password, salt, KEY_BYTES, params)) as PasswordHash;
  }

  /**
   * Whether `password` matches `stored`. Runs the KDF exactly once whatever `stored` is: with no
   * stored hash (an unknown account) it checks against NOBODY, so every failure costs the same.
   */
  async verify(password: string, stored: string | null | undefined): Promise<boolean> {
    const known = stored ? decode(stored) : undefined;
    const { params, salt, hash } = known ?? decode(NOBODY)!;
    const derived = await this.kdf(password, salt, hash.length, params);
    return known !== undefined && secureEqual(derived, hash);
  }
}

/** For what hashes outside a running server (`acx platform user add`): the real KDF. */
export const passwords = new Passwords();
