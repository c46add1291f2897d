import { isIPv6 } from 'node:net';

/**
 * Password guessing, slowed down: failed sign-ins are counted per account (the email address
 * asked for, known or not, so the throttle cannot tell which accounts exist) and per client
 * address. The failure that uses up a key's allowance shuts it for `firstDelayMs`, and each
 * further failure for twice as long as the last, up to `maxDelayMs`. A sign-in on a shut key is
 * refused before its password is checked, even a right one. A success clears its account's count; an address's
 * count only fades (`forgetAfterMs` after its last attempt), or one account of the attacker's
 * own would let it guess at everyone else's.
 *
 * An attempt counts while its password is still being checked, so guesses sent in parallel
 * get no more tries than guesses sent one by one.
 *
 * State is in memory: a restart forgets it. It holds at most `maxKeys` keys; past that the key
 * least recently tried is dropped first.
 */
export interface SignInThrottleOptions {
  /** Failures an account (email address) may have; the last of them shuts it. */
  accountFailures: number;
  /** Failures one client address may have; more, as one address may be many people (NAT). */
  addressFailures: number;
  /** The delay after the first failure past the allowance; each further one doubles it. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** A key not tried for this long is forgotten (at least maxDelayMs). */
  forgetAfterMs: number;
  maxKeys: number;
  /** The clock (milliseconds); tests pass one they can move. */
  now: () => number;
}

export const SIGN_IN_THROTTLE_DEFAULTS: SignInThrottleOptions = {
  accountFailures: 5,
  addressFailures: 20,
  firstDelayMs: 1000,
  maxDelayMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
  maxKeys: 10_000,
  now: Date.now,
};

interface Entry {
  failures: number;
  /** Attempts whose password is being checked now. */
  inFlight: number;
  shutUntil: number;
  lastTried: number;
}

/** One sign-in let through the throttle; settle it once its password has been checked. */
export interface SignInAttempt {
  settle(succeeded: boolean): void;
}

type Admission = { attempt: SignInAttempt; retryAfterSeconds?: undefined } | { attempt?: undefined; retryAfterSeconds: number };

export class SignInThrottle {
  private readonly options: SignInThrottleOptions;
  private readonly entries = new Map<string, Entry>();

  constructor(options: Partial<SignInThrottleOptions> = {}) {
    this.options = { ...SIGN_IN_THROTTLE_DEFAULTS, ...options };
    const { accountFailures, addressFailures, firstDelayMs, maxDelayMs, forgetAfterMs, maxKeys } = this.options;
    for (const [name, value] of Object.entries({ accountFailures, addressFailures, firstDelayMs, maxDelayMs, forgetAfterMs, maxKeys })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`signInThrottle.${name} must be a positive integer, not ${value}.`);
    }
    if (forgetAfterMs < maxDelayMs) throw new TypeError('signInThrottle.forgetAfterMs must be at least maxDelayMs (a shut key must not be forgotten before it opens).');
  }

  /** Lets a sign-in for `email` from `address` through, or says how many seconds until one may be tried. */
  admit(email: string, address: string | null): Admission {
    const now = this.options.now();
    const keys: Array<[string, number]> = [[`account:${email.trim().toLowerCase()}`, this.options.accountFailures]];
    if (address) keys.push([`address:${addressKey(address)}`, this.options.addressFailures]);
    let opensAt = now;
    for (const [key, allowed] of keys) {
      const entry = this.current(key, now);
      if (!entry) continue;
      if (entry.shutUntil > now) opensAt = Math.max(opensAt, entry.shutUntil);
      // While failures are allowed, as many attempts may be in flight as failures are left; past them, one at a time.
      else if (entry.inFlight >= Math.max(1, allowed - entry.failures)) opensAt = Math.max(opensAt, now + 1000);
    }
    if (opensAt > now) return { retryAfterSeconds: Math.ceil((opensAt - now) / 1000) };
    for (const [key] of keys) this.touch(key, now).inFlight++;
    let settled = false;
    return {
      attempt: {
        settle: (succeeded) => {
          if (settled) return;
          settled = true;
          for (const [key, allowed] of keys) this.settle(key, allowed, succeeded);
        },
      },
    };
  }

  private settle(key: string, allowed: number, succeeded: boolean): void {
    const now = this.options.now();
    const entry = this.touch(key, now);
    entry.inFlight = Math.max(0, entry.inFlight - 1);
    if (succeeded) {
      if (key.startsWith('account:')) {
        entry.failures = 0;
        entry.shutUntil = 0;
      }
    } else {
      entry.failures++;
      const past = entry.failures - allowed;
      if (past >= 0) entry.shutUntil = now + Math.min(this.options.maxDelayMs, this.options.firstDelayMs * 2 ** past);
    }
    if (entry.failures === 0 && entry.inFlight === 0) this.entries.delete(key);
  }

  /** The key's entry, unless it has been quiet long enough to be forgotten. */
  private current(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.inFlight === 0 && now - entry.lastTried >= this.options.forgetAfterMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The key's entry, created if need be, moved to the back of the eviction order. */
  private touch(key: string, now: number): Entry {
    const entry = this.current(key, now) ?? { failures: 0, inFlight: 0, shutUntil: 0, lastTried: now };
    this.entries.delete(key);
    entry.lastTried = now;
    this.entries.set(key, entry);
    // A Map iterates in insertion order, so the first key is the one least recently tried.
    while (this.entries.size > this.options.maxKeys) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }

  /** How many keys are held (for tests of the bound). */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * An address as the throttle counts it: IPv4 as is, IPv6 by its /64 (one host commonly holds
 * a whole /64, so counting single IPv6 addresses would give it 2^64 allowances).
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const full = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${full.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`;
}
