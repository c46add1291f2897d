import { PROVIDER_ENV_NAMES } from '../../model/providers.ts';
import { isCredentialName, isFleetSecretName } from '../../tools/sandbox/environment.ts';
import type { EventWakeVariable } from './warm-protocol.ts';

/**
 * The one rule for what environment a router's wake gets. The router holds every hosted agent's
 * platform token and the keys deliveries are signed with; a wake runs a model that may run
 * commands, so it gets only what it needs and never another agent's token or a signing secret:
 *
 * - a small system baseline: PATH, HOME, the user, locale, time zone, temp dirs, terminal,
 *   XDG base dirs, proxies and CA bundles, Node's own options;
 * - acx's settings (`ACX_*`) except any whose name says it is a credential (the sandbox's rule,
 *   isCredentialName: webhook secrets, the MCP bearer token, the signing key's path);
 * - the model providers' key and endpoint variables (src/model/providers.ts);
 * - the names the operator lists with `--pass-env` (never a BASECRADLE_* name or a webhook secret);
 * - its own agent's platform values: BASECRADLE_BASE_URL, BASECRADLE_TOKEN (its own token) and
 *   BASECRADLE_DELIVERY_ID, set last so nothing else can stand in for them.
 */
export interface OwnWakeValues {
  baseUrl: string;
  token: string;
  deliveryId: string;
}

const SYSTEM_NAMES = new Set([
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TMP', 'TEMP', 'TERM',
  'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'XDG_CACHE_HOME', 'XDG_DATA_HOME', 'XDG_RUNTIME_DIR',
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'all_proxy',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS', 'NODE_USE_ENV_PROXY', 'NODE_USE_SYSTEM_CA', 'NODE_OPTIONS',
]);
const SYSTEM_PREFIXES = ['LC_'];
const PROVIDER_NAMES = new Set(PROVIDER_ENV_NAMES);

/** Names `--pass-env` may not list: the router sets the wake's BASECRADLE_* itself, and the fleet's secrets stay with it. */
const neverPassed = (name: string): boolean => name.startsWith('BASECRADLE_') || isFleetSecretName(name);

/** `--pass-env NAME[,NAME…]` (or ACX_ROUTER_PASS_ENV): the names, each checked by checkPassEnvName. */
export function parsePassEnv(value: string | undefined): string[] {
  const names = [...new Set((value ?? '').split(/[\s,]+/).filter(Boolean))];
  for (const name of names) checkPassEnvName(name);
  return names;
}

/** A name the operator may pass to wakes; otherwise a TypeError that says why not. */
export function checkPassEnvName(name: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`--pass-env takes variable names separated by commas, not "${name}".`);
  if (neverPassed(name)) {
    throw new TypeError(
      `--pass-env cannot pass ${name}: a wake gets its own agent's BASECRADLE_TOKEN, BASECRADLE_BASE_URL and BASECRADLE_DELIVERY_ID from the router, and never another agent's token or a webhook signing secret.`,
    );
  }
}

function allowed(name: string, passEnv: ReadonlySet<string>): boolean {
  if (SYSTEM_NAMES.has(name) || SYSTEM_PREFIXES.some((prefix) => name.startsWith(prefix))) return true;
  if (PROVIDER_NAMES.has(name) || (passEnv.has(name) && !neverPassed(name))) return true;
  return name.startsWith('ACX_') && !isCredentialName(name);
}

/**
 * What a wake gets before its event is known: what the rule above allows from `source`, then its
 * own agent's token. A warm wake process (warm-wakes.ts) starts with this and is handed the
 * event's values (eventWakeValues) with its event.
 */
export function standingWakeEnvironment(source: NodeJS.ProcessEnv, token: string, passEnv: readonly string[] = []): NodeJS.ProcessEnv {
  const passed = new Set(passEnv);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && allowed(name, passed)) env[name] = value;
  }
  env.BASECRADLE_TOKEN = token;
  return env;
}

/**
 * What a warm wake process starts with: the standing environment and the platform's URL as the
 * router knows it then, with which the process makes its client before its event
 * (timeline-wake-ahead.ts). The event's own BASECRADLE_BASE_URL is set over it and is the one used.
 */
export function warmWakeEnvironment(source: NodeJS.ProcessEnv, token: string, baseUrl: string, passEnv: readonly string[] = []): NodeJS.ProcessEnv {
  // Not known yet (`acx platform serve` starts its router before its platform): none, rather than an empty one.
  return { ...standingWakeEnvironment(source, token, passEnv), ...(baseUrl ? { BASECRADLE_BASE_URL: baseUrl } : {}) };
}

/** The variables that belong to one event (they are set last, so nothing else stands in for them). */
export function eventWakeValues(own: Pick<OwnWakeValues, 'baseUrl' | 'deliveryId'>): Record<EventWakeVariable, string> {
  return { BASECRADLE_BASE_URL: own.baseUrl, BASECRADLE_DELIVERY_ID: own.deliveryId };
}

/** The environment of one wake: the standing environment, then the event's values. */
export function wakeEnvironment(source: NodeJS.ProcessEnv, own: OwnWakeValues, passEnv: readonly string[] = []): NodeJS.ProcessEnv {
  return { ...standingWakeEnvironment(source, own.token, passEnv), ...eventWakeValues(own) };
}

/** Whether a variable of the router's environment reaches every wake under the rule above (an agent's token variable must not). */
export function reachesWakes(name: string, passEnv: readonly string[] = []): boolean {
  return allowed(name, new Set(passEnv));
}
