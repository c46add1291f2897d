import { Option } from 'commander';
import { DEFAULT_REPLAY_WINDOW, type ReplayWindow } from '../router/admission.ts';
import { CliExit } from './output.ts';

/** What `acx router` and `acx platform serve --agents` (a router in-process) share: flags and their reading. */
export interface RouterFlags {
  replayWindow?: string;
}

/** `--replay-window SECONDS`: how old a delivery may be (admission.ts). */
export const replayWindowOption = (): Option =>
  new Option('--replay-window <seconds>', `refuse a delivery whose occurred_at is older than this (env ACX_ROUTER_REPLAY_WINDOW, default ${DEFAULT_REPLAY_WINDOW.pastMs / 1000}: 24 h)`);

/** The flags, else their variables, else the defaults; a bad value is a usage error naming the flag or variable. */
export function resolveRouterFlags(command: string, flags: RouterFlags, env: NodeJS.ProcessEnv): { replayWindow: ReplayWindow } {
  const raw = flags.replayWindow ?? (env.ACX_ROUTER_REPLAY_WINDOW?.trim() || undefined);
  const seconds = raw === undefined ? DEFAULT_REPLAY_WINDOW.pastMs / 1000 : Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    const name = flags.replayWindow !== undefined ? '--replay-window' : 'ACX_ROUTER_REPLAY_WINDOW';
    throw new CliExit('usage', `${command}: ${name} must be a positive number of seconds, not "${raw}" (leave it out for 24 h).`);
  }
  return { replayWindow: { ...DEFAULT_REPLAY_WINDOW, pastMs: seconds * 1000 } };
}
