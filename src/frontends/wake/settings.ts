import type { BreakerSettings } from '../../store/wake-store.ts';
import { DEFAULT_BREAKER, DEFAULT_MAX_ATTEMPTS } from './session.ts';
import { DEFAULT_PACING, type PacingSettings } from './pacing.ts';
import { DEFAULT_CONTEXT_MESSAGES } from './timeline-work.ts';
import { isSwitchedOff } from '../../app/switches.ts';
import { numberSetting as number } from '../number-setting.ts';

export { DEFAULT_CONTEXT_MESSAGES };

/**
 * Wake mode's tuning from flags, else ACX_* variables, else defaults: one resolution shared by
 * `acx wake` and `acx resolved-config`, so the report shows what a wake would actually use.
 * A malformed value is a usage error naming the flag, its variable and what it must be.
 */
export interface WakeSettings {
  breaker: BreakerSettings;
  pacing: PacingSettings;
  maxAttempts: number;
  /** How many messages a timeline's first wake reads (its backlog, seeded as context); Infinity for all. */
  contextMessages: number;
  /** Whether a timeline wake's brief carries the platform's dashboard.md (ACX_ONBOARD, --no-onboard). */
  onboard: boolean;
}

export interface WakeFlags {
  breakerMax?: unknown;
  breakerWindow?: unknown;
  breakerCooldown?: unknown;
  maxAttempts?: unknown;
  pace?: unknown;
  paceCharsPerSec?: unknown;
  paceFloor?: unknown;
  paceMaxBuilds?: unknown;
  contextMessages?: unknown;
  onboard?: unknown;
}

export function resolveWakeSettings(flags: WakeFlags, env: NodeJS.ProcessEnv = process.env): WakeSettings {
  const windowS = number(flags.breakerWindow, env, 'ACX_WAKE_BREAKER_WINDOW', '--breaker-window', DEFAULT_BREAKER.windowMs / 1000, 'positive seconds');
  return {
    breaker: {
      max: number(flags.breakerMax, env, 'ACX_WAKE_BREAKER_MAX', '--breaker-max', DEFAULT_BREAKER.max, 'integer'),
      windowMs: windowS * 1000,
      cooldownMs: number(flags.breakerCooldown, env, 'ACX_WAKE_BREAKER_COOLDOWN', '--breaker-cooldown', windowS, 'positive seconds') * 1000,
    },
    pacing: {
      enabled: flags.pace !== false && !isSwitchedOff(env.ACX_PACE_ENABLED),
      charsPerSecond: number(flags.paceCharsPerSec, env, 'ACX_PACE_CHARS_PER_SEC', '--pace-chars-per-sec', DEFAULT_PACING.charsPerSecond, 'positive'),
      floorMs: number(flags.paceFloor, env, 'ACX_PACE_FLOOR_SECONDS', '--pace-floor', DEFAULT_PACING.floorMs / 1000, 'non-negative seconds') * 1000,
      maxBuilds: number(flags.paceMaxBuilds, env, 'ACX_PACE_MAX_BUILDS', '--pace-max-builds', DEFAULT_PACING.maxBuilds, 'positive integer'),
    },
    maxAttempts: number(flags.maxAttempts, env, 'ACX_WAKE_MAX_ATTEMPTS', '--max-attempts', DEFAULT_MAX_ATTEMPTS, 'positive integer'),
    contextMessages: contextMessages(flags.contextMessages, env),
    onboard: flags.onboard !== false && !isSwitchedOff(env.ACX_ONBOARD),
  };
}

/** `--context-messages` / ACX_CONTEXT_MESSAGES: a whole number of at least 1, or `all`. */
function contextMessages(flag: unknown, env: NodeJS.ProcessEnv): number {
  const raw = flag !== undefined && flag !== '' ? flag : env.ACX_CONTEXT_MESSAGES?.trim() || undefined;
  if (typeof raw === 'string' && raw.trim().toLowerCase() === 'all') return Number.POSITIVE_INFINITY;
  return number(flag, env, 'ACX_CONTEXT_MESSAGES', '--context-messages', DEFAULT_CONTEXT_MESSAGES, 'positive integer or all');
}
