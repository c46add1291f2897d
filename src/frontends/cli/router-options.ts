import { Option } from 'commander';
import { DEFAULT_REPLAY_WINDOW, type ReplayWindow } from '../router/admission.ts';
import { parsePassEnv } from '../router/wake-env.ts';
import { CliExit } from './output.ts';
import { isSwitchedOff } from '../../app/switches.ts';

/** What `acx router` and `acx platform serve --agents` (a router in-process) share: flags and their reading. */
export interface RouterFlags {
  passEnv?: string;
  replayWindow?: string;
  /** false with --no-warm. */
  warm?: boolean;
}

/** `--pass-env NAME[,NAME…]`: more variables each wake gets (wake-env.ts has the rule). */
export const passEnvOption = (): Option =>
  new Option(
    '--pass-env <names>',
    "more variables each wake gets, comma-separated; otherwise a wake gets only a system baseline, acx's ACX_* settings, the model providers' key and endpoint variables and its own agent's BASECRADLE_* values (env ACX_ROUTER_PASS_ENV)",
  );

/** `--replay-window SECONDS`: how old a delivery may be (admission.ts). */
export const replayWindowOption = (): Option =>
  new Option('--replay-window <seconds>', `refuse a delivery whose occurred_at is older than this many seconds (env ACX_ROUTER_REPLAY_WINDOW; default ${DEFAULT_REPLAY_WINDOW.pastMs / 1000}, 24 h)`);

/** `--no-warm`: start each wake's process when its event arrives, instead of one per agent ahead of it (warm-wakes.ts). */
export const noWarmOption = (): Option =>
  new Option(
    '--no-warm',
    "start each wake's process only when its event arrives, instead of keeping one per acx agent started ahead of its next event (which answers it without paying start-up) (env ACX_ROUTER_WARM=0)",
  );

/** The flags, else their variables, else the defaults; a bad value is a usage error naming the flag or variable. */
export function resolveRouterFlags(command: string, flags: RouterFlags, env: NodeJS.ProcessEnv): { passEnv: string[]; replayWindow: ReplayWindow; warm: boolean } {
  let passEnv: string[];
  try {
    passEnv = parsePassEnv(flags.passEnv ?? env.ACX_ROUTER_PASS_ENV);
  } catch (error) {
    throw new CliExit('usage', `${command}: ${(error as Error).message}`);
  }
  const raw = flags.replayWindow ?? (env.ACX_ROUTER_REPLAY_WINDOW?.trim() || undefined);
  const seconds = raw === undefined ? DEFAULT_REPLAY_WINDOW.pastMs / 1000 : Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    const name = flags.replayWindow !== undefined ? '--replay-window' : 'ACX_ROUTER_REPLAY_WINDOW';
    throw new CliExit('usage', `${command}: ${name} must be a positive number of seconds, not "${raw}" (leave it out for 24 h).`);
  }
  const warm = flags.warm !== false && !isSwitchedOff(env.ACX_ROUTER_WARM);
  return { passEnv, replayWindow: { ...DEFAULT_REPLAY_WINDOW, pastMs: seconds * 1000 }, warm };
}
