// The sign-in throttle's own rules, on a clock the test moves: parallel guesses get no more tries
// than serial ones, quiet keys are forgotten, the state stays bounded, and an IPv6 host's /64
// counts as one address.
import { describe, expect, it } from 'vitest';
import { addressKey, SignInThrottle } from '../../src/platform/sign-in-throttle.ts';

function throttle(options: ConstructorParameters<typeof SignInThrottle>[0] = {}) {
  const clock = { now: 1_000_000 };
  return { clock, throttle: new SignInThrottle({ now: () => clock.now, ...options }) };
}

const fail = (t: SignInThrottle, email: string, address: string | null = null) => {
  const admitted = t.admit(email, address);
  admitted.attempt?.settle(false);
  return admitted.retryAfterSeconds;
};

describe('SignInThrottle', () => {
  it('attempts still being checked count: five guesses in parallel, and the sixth waits', () => {
    const { throttle: t } = throttle({ accountFailures: 5 });
    const inFlight = Array.from({ length: 5 }, () => t.admit('ada@example.com', null).attempt);
    expect(inFlight.every(Boolean)).toBe(true);
    expect(t.admit('ada@example.com', null)).toEqual({ retryAfterSeconds: 1 });
    for (const attempt of inFlight) attempt!.settle(false);
    expect(t.admit('ada@example.com', null)).toEqual({ retryAfterSeconds: 1 });
  });

  it('the account key ignores case and surrounding space', () => {
    const { throttle: t } = throttle({ accountFailures: 2 });
    fail(t, 'Ada@Example.com');
    fail(t, ' ada@example.com ');
    expect(t.admit('ADA@EXAMPLE.COM', null).retryAfterSeconds).toBe(1);
  });

  it('a key not tried for forgetAfterMs starts again; the delay is capped at maxDelayMs', () => {
    const { clock, throttle: t } = throttle({ accountFailures: 1, firstDelayMs: 1000, maxDelayMs: 4000, forgetAfterMs: 60_000 });
    const waits: Array<number | undefined> = [];
    for (let i = 0; i < 5; i++) {
      fail(t, 'ada@example.com');
      waits.push(t.admit('ada@example.com', null).retryAfterSeconds);
      clock.now += 4000;
    }
    expect(waits).toEqual([1, 2, 4, 4, 4]);
    clock.now += 60_000;
    fail(t, 'ada@example.com');
    expect(t.admit('ada@example.com', null).retryAfterSeconds).toBe(1);
  });

  it('holds at most maxKeys keys, dropping the one least recently tried', () => {
    const { throttle: t } = throttle({ accountFailures: 1, maxKeys: 3 });
    for (let i = 0; i < 50; i++) fail(t, `user${i}@example.com`);
    expect(t.size).toBe(3);
    expect(t.admit('user49@example.com', null).retryAfterSeconds).toBe(1);
    expect(t.admit('user0@example.com', null).attempt).toBeDefined();
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped one as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(addressKey('127.0.0.2')).toBe('127.0.0.2');
    const { throttle: t } = throttle({ addressFailures: 2 });
    fail(t, 'a@example.com', '2001:db8:1:2::1');
    fail(t, 'b@example.com', '2001:db8:1:2::2');
    expect(t.admit('c@example.com', '2001:db8:1:2:ffff::3').retryAfterSeconds).toBe(1);
    expect(t.admit('c@example.com', '2001:db8:1:3::3').attempt).toBeDefined();
  });

  it('refuses options that would disable it or forget a shut key early', () => {
    expect(() => new SignInThrottle({ accountFailures: 0 })).toThrow('signInThrottle.accountFailures must be a positive integer, not 0.');
    expect(() => new SignInThrottle({ maxDelayMs: 10_000, forgetAfterMs: 5000 })).toThrow('forgetAfterMs must be at least maxDelayMs');
  });
});
