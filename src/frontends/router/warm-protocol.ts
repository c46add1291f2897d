/**
 * What passes between `acx router` and a warm wake process over the process's IPC channel
 * (router: warm-wakes.ts; the process: src/frontends/cli/warm.ts). No imports: `acx` reads
 * WARM_FLAG before it loads anything else. The router starts
 * `acx --warm-wake <wake command…>` before any event; the process loads what the command needs,
 * says `ready`, and waits. On an event the router sends the rest of the command line (the
 * `--timeline <uuid> [trigger]` a cold wake gets) and the event's environment values; the process
 * runs the command exactly as a cold `acx <wake command…> <rest>` would, once, and exits.
 */
export const WARM_FLAG = '--warm-wake';

/** The variables that belong to one event (wake-env.ts, eventWakeValues): all a warm process takes from the router with it. */
export const EVENT_WAKE_VARIABLES = ['BASECRADLE_BASE_URL', 'BASECRADLE_DELIVERY_ID'] as const;
export type EventWakeVariable = (typeof EVENT_WAKE_VARIABLES)[number];

export interface WarmReady {
  warm: 'ready';
}

export interface WarmEvent {
  warm: 'event';
  /** Appended to the command line the process was started with. */
  args: string[];
  /** Only the event's own variables (EVENT_WAKE_VARIABLES): the rest of the environment was set at start. */
  env: Partial<Record<EventWakeVariable, string>>;
}

export const isWarmReady = (message: unknown): message is WarmReady => (message as WarmReady | null)?.warm === 'ready';

/** A well-formed event: string arguments, and nothing in `env` but the event's variables, as strings. */
export function isWarmEvent(message: unknown): message is WarmEvent {
  const event = message as WarmEvent | null;
  if (event?.warm !== 'event' || !Array.isArray(event.args) || !event.args.every((arg) => typeof arg === 'string')) return false;
  if (typeof event.env !== 'object' || event.env === null) return false;
  return Object.entries(event.env).every(([name, value]) => (EVENT_WAKE_VARIABLES as readonly string[]).includes(name) && typeof value === 'string');
}
