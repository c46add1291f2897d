// Wake mode's tuning resolves flag > ACX_* variable > default, and a malformed value is a usage
// error that names the flag or the variable it came from.
import { describe, expect, it } from 'vitest';
import { resolveWakeSettings } from '../../../src/frontends/wake/settings.ts';
import { AcxError } from '../../../src/core/errors.ts';

describe('resolveWakeSettings', () => {
  it('defaults: 10 wakes per 60 s, cooldown = window, 3 attempts, pacing on at 17 chars/s with a 20 s floor and 3 builds', () => {
    expect(resolveWakeSettings({}, {})).toEqual({
      breaker: { max: 10, windowMs: 60_000, cooldownMs: 60_000 },
      pacing: { enabled: true, charsPerSecond: 17, floorMs: 20_000, maxBuilds: 3 },
      maxAttempts: 3,
      contextMessages: 50,
      onboard: true,
    });
  });

  it('the first-wake backlog: a number or "all" (flag over variable)', () => {
    expect(resolveWakeSettings({}, { ACX_CONTEXT_MESSAGES: 'all' }).contextMessages).toBe(Number.POSITIVE_INFINITY);
    expect(resolveWakeSettings({ contextMessages: '20' }, { ACX_CONTEXT_MESSAGES: 'all' }).contextMessages).toBe(20);
    expect(resolveWakeSettings({ contextMessages: 'ALL' }, {}).contextMessages).toBe(Number.POSITIVE_INFINITY);
  });

  it('a flag wins over its variable; the cooldown follows the window unless set', () => {
    const env = { ACX_WAKE_BREAKER_MAX: '4', ACX_WAKE_BREAKER_WINDOW: '30', ACX_PACE_ENABLED: 'off', ACX_PACE_FLOOR_SECONDS: '0' };
    expect(resolveWakeSettings({ breakerMax: '0' }, env)).toMatchObject({
      breaker: { max: 0, windowMs: 30_000, cooldownMs: 30_000 },
      pacing: { enabled: false, floorMs: 0 },
    });
    expect(resolveWakeSettings({ pace: false }, {}).pacing.enabled).toBe(false);
    expect(resolveWakeSettings({ paceMaxBuilds: '1' }, { ACX_PACE_MAX_BUILDS: '5' }).pacing.maxBuilds).toBe(1);
    expect(resolveWakeSettings({}, { ACX_PACE_MAX_BUILDS: '5' }).pacing.maxBuilds).toBe(5);
  });

  it.each([
    [{ breakerWindow: '-1' }, {}, /--breaker-window must be a positive number of seconds, not "-1"/],
    [{}, { ACX_WAKE_MAX_ATTEMPTS: '0' }, /ACX_WAKE_MAX_ATTEMPTS must be a whole number of at least 1, not "0"/],
    [{ breakerMax: '2.5' }, {}, /--breaker-max must be a whole number, not "2.5"/],
    [{}, { ACX_PACE_CHARS_PER_SEC: 'fast' }, /ACX_PACE_CHARS_PER_SEC must be a positive number, not "fast"/],
    [{ paceMaxBuilds: '0' }, {}, /--pace-max-builds must be a whole number of at least 1, not "0"/],
    [{}, { ACX_CONTEXT_MESSAGES: '0' }, /ACX_CONTEXT_MESSAGES must be a whole number of at least 1, or "all", not "0"/],
    [{ contextMessages: 'many' }, {}, /--context-messages must be a whole number of at least 1, or "all", not "many"/],
  ])('refuses %o %o', (flags, env, message) => {
    let error: unknown;
    try {
      resolveWakeSettings(flags, env);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AcxError);
    expect((error as AcxError).code).toBe('usage');
    expect((error as AcxError).message).toMatch(message);
  });
});
