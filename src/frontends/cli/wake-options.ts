import type { Command } from 'commander';
import { DEFAULT_BREAKER, DEFAULT_MAX_ATTEMPTS, DEFAULT_PACING } from '../wake/session.ts';
import { DEFAULT_CONTEXT_MESSAGES } from '../wake/settings.ts';

/**
 * The wake-mode tuning flags (read-speed pacing, the circuit breaker, attempts per event) that
 * `acx wake` and `acx worker` share; `resolveWakeSettings` reads them.
 */
export function addWakeTuningOptions(command: Command): Command {
  return command
    .option('--no-pace', 'no read-speed pacing (with --timeline: per timeline) and no rebuild for messages that arrive mid-turn (env ACX_PACE_ENABLED=0)')
    .option('--pace-chars-per-sec <n>', `simulated reading speed in characters per second (env ACX_PACE_CHARS_PER_SEC; default ${DEFAULT_PACING.charsPerSecond})`)
    .option('--pace-floor <seconds>', `shortest read of a peer AI's message (env ACX_PACE_FLOOR_SECONDS; default ${DEFAULT_PACING.floorMs / 1000})`)
    .option(
      '--pace-max-builds <n>',
      `most builds of a turn when messages arrive while it generates; 1 answers once (env ACX_PACE_MAX_BUILDS; default ${DEFAULT_PACING.maxBuilds})`,
    )
    .option('--breaker-max <n>', `most wakes per session (with --timeline: per timeline) within the window; 0 disables (env ACX_WAKE_BREAKER_MAX; default ${DEFAULT_BREAKER.max})`)
    .option('--breaker-window <seconds>', `the breaker's rolling window in seconds (env ACX_WAKE_BREAKER_WINDOW; default ${DEFAULT_BREAKER.windowMs / 1000})`)
    .option('--breaker-cooldown <seconds>', 'how long a tripped breaker waits before it may reset, in seconds (env ACX_WAKE_BREAKER_COOLDOWN; default the window)')
    .option('--max-attempts <n>', `attempts an event gets before it is set aside as failed (env ACX_WAKE_MAX_ATTEMPTS; default ${DEFAULT_MAX_ATTEMPTS})`)
    .option('--context-messages <n|all>', `with --timeline: how many messages a first wake reads, the backlog it sees as context (env ACX_CONTEXT_MESSAGES; default ${DEFAULT_CONTEXT_MESSAGES})`)
    .option('--no-onboard', "with --timeline: leave the platform's dashboard.md out of the brief (env ACX_ONBOARD=0)");
}
