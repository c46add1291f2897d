import { type Logger } from '../../util/logger.ts';
import { AcxError, ConfigError } from '../../core/errors.ts';
import { addLiveSecret } from '../../util/scrub.ts';
import { selectAuth } from './auth.ts';
import { type CredentialProxy, type CredentialRequestTransformation, mintPlaceholder, startCredentialProxy, type UpstreamDown } from './credential-proxy.ts';
import type { NetworkPolicy } from './network-policy.ts';
import type { ACPSettings } from './settings.ts';

/**
 * The agent's launch environment, built from nothing: isolation variables from the sandbox,
 * forwardEnv from the host, the profile's persistent env, the Gateway env when selected, and
 * credentials — placeholders when they are brokered through acx's proxy, real values only when
 * a credential cannot be brokered (no brokering callback, or a transformation the local proxy
 * cannot route).
 */

export interface LaunchEnv {
  env: Record<string, string>;
  authMode: 'direct' | 'ai-gateway';
  proxy: CredentialProxy | undefined;
  /** Credential names whose real value had to be forwarded. */
  forwardedReal: string[];
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

/** Writes `value` at `path` into a copy of `base` (used for _meta and JSON launch variables). */
export function withPath(base: Record<string, unknown> | undefined, path: readonly string[], value: unknown): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(base ?? {})) as Record<string, unknown>;
  setPath(copy, path, value);
  return copy;
}

export function applyLaunchEnvJson(env: Record<string, string>, variable: string, path: readonly string[], value: unknown): void {
  let base: Record<string, unknown> = {};
  const current = env[variable];
  if (current !== undefined && current.trim() !== '') {
    try {
      const parsed = JSON.parse(current) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      base = parsed as Record<string, unknown>;
    } catch (error) {
      throw new ConfigError(`${variable} must hold a JSON object to carry the instructions.`, { cause: error, hint: `Fix the value of ${variable} or choose another instructionMapping.` });
    }
  }
  env[variable] = JSON.stringify(withPath(base, path, value));
}

function routable(t: CredentialRequestTransformation): boolean {
  return typeof t.upstream === 'string';
}

export async function buildLaunchEnv(
  settings: ACPSettings,
  input: {
    hostEnv: Record<string, string | undefined>;
    bootstrapEnv: Record<string, string>;
    sandboxEnv: Record<string, string>;
    supportsRequestTransformations: boolean;
    clientApp: { name: string; version: string };
    logger: Logger;
    /** Told when an upstream behind the credential proxy stops answering (see CredentialProxyOptions). */
    onUpstreamDown?: (down: UpstreamDown) => void;
    /**
     * The agent is confined (no network of its own): the broker always runs, is its HTTP(S)
     * proxy, and lets through what this policy allows.
     */
    egress?: NetworkPolicy;
  },
): Promise<LaunchEnv> {
  const { hostEnv } = input;
  const auth = selectAuth(settings, hostEnv, input.clientApp);
  const credentialNames = new Set(settings.credentialEnv ?? []);
  const env: Record<string, string> = {};
  for (const name of settings.forwardEnv ?? []) {
    const value = hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, input.bootstrapEnv);
  for (const [name, value] of Object.entries(auth.gatewayEnv)) if (!credentialNames.has(name)) env[name] = value;

  // The effective runtime environment the brokering callback sees; Gateway values win.
  const effective: Record<string, string | undefined> = { ...hostEnv };
  for (const name of credentialNames) effective[name] = auth.authEnv[name];
  Object.assign(effective, auth.gatewayEnv);

  const brokering = settings.credentialBrokering !== undefined && input.supportsRequestTransformations;
  const placeholders = new Map<string, string>();
  for (const name of credentialNames) {
    const real = effective[name];
    if (real === undefined || real === '') continue;
    addLiveSecret(real);
    let value = real;
    if (brokering) {
      value = mintPlaceholder(name);
      placeholders.set(name, value);
    }
    if (settings.credentialForwarding) value = await settings.credentialForwarding(value, name);
    env[name] = value;
  }
  const forwardedReal: string[] = [];
  let proxy: CredentialProxy | undefined;
  const startBroker = (usable: readonly CredentialRequestTransformation[]) =>
    startCredentialProxy(usable, {
      logger: input.logger,
      ...(input.onUpstreamDown ? { onUpstreamDown: input.onUpstreamDown } : {}),
      ...(input.egress !== undefined ? { egress: { policy: input.egress, logger: input.logger } } : {}),
    });
  if (settings.credentialBrokering) {
    if (!input.supportsRequestTransformations) {
      // Sandboxes that cannot rewrite requests keep the legacy behaviour: real values.
      for (const name of credentialNames) if (env[name] !== undefined) forwardedReal.push(name);
    } else {
      const transformations: readonly CredentialRequestTransformation[] = settings.credentialBrokering({ env: effective, sandboxEnv: { ...env } }) ?? [];
      if (!Array.isArray(transformations as unknown)) throw new ConfigError(`${settings.harnessId}: credentialBrokering must return an array of transformations.`);
      // A transformation helps only if the agent's requests can reach the proxy: through the
      // variable it names (baseUrlEnv), or a launch variable that holds its upstream URL.
      const reachesProxy = (t: CredentialRequestTransformation) =>
        t.baseUrlEnv !== undefined || Object.entries(env).some(([name, value]) => !credentialNames.has(name) && value.includes(t.upstream!));
      const unreachable = transformations.filter((t) => routable(t) && !reachesProxy(t));
      if (unreachable.length > 0) {
        input.logger.warn('acp credential transformation unreachable', {
          harness: settings.harnessId,
          upstream: unreachable.map((t) => t.upstream).join(','),
          hint: 'give it a baseUrlEnv naming the variable the agent reads its base URL from, or forward that variable',
        });
      }
      const usable = transformations.filter((t) => routable(t) && reachesProxy(t));
      // A placeholder that no usable transformation can swap would just fail upstream:
      // forward the real value for it (what a sandbox without request rewriting does).
      for (const [name, placeholder] of placeholders) {
        const covered = usable.some((t) => (t.match.headers ?? []).some((h) => h.value.exact.includes(placeholder)));
        if (!covered) {
          env[name] = settings.credentialForwarding ? await settings.credentialForwarding(effective[name]!, name) : effective[name]!;
          forwardedReal.push(name);
        }
      }
      if (usable.length > 0) {
        proxy = await startBroker(usable);
        for (const t of usable) {
          const route = proxy.routeFor(t.upstream!);
          if (!route) continue;
          if (t.baseUrlEnv) env[t.baseUrlEnv] = route;
          for (const [name, value] of Object.entries(env)) {
            if (!credentialNames.has(name) && value.includes(t.upstream!)) env[name] = value.split(t.upstream!).join(route);
          }
        }
      }
    }
  } else {
    for (const name of credentialNames) if (env[name] !== undefined) forwardedReal.push(name);
  }
  if (input.egress !== undefined) {
    proxy ??= await startBroker([]);
    // Everything but acx's own loopback endpoints (the routes, the host-tool bridge) goes through the broker.
    const url = `http://127.0.0.1:${proxy.port}`;
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) env[name] = url;
    for (const name of ['NO_PROXY', 'no_proxy']) env[name] = '127.0.0.1,localhost,::1';
    env.NODE_USE_ENV_PROXY = '1'; // Node >= 24's fetch and http honour the variables above only with this
    // A forwarded base URL that no transformation routes is reached, if at all, only through the
    // proxy under the policy — and never when it is this machine's loopback.
    for (const name of settings.forwardEnv ?? []) {
      const value = env[name];
      if (value === undefined || !/^https?:\/\//i.test(value) || value.startsWith(url)) continue;
      input.logger.warn('acp sandbox: forwarded URL not brokered', {
        variable: name,
        host: URL.canParse(value) ? new URL(value).host : value,
        hint: 'the confined agent reaches it only through the network policy, and a loopback URL not at all; broker it (credentialBrokering with baseUrlEnv) or allow its host',
      });
    }
  }
  if (forwardedReal.length > 0) input.logger.warn('acp credential forwarded without brokering', { harness: settings.harnessId, names: forwardedReal.join(',') });
  // Isolation variables always win: forwardEnv must not point the agent at the host's HOME.
  Object.assign(env, input.sandboxEnv);
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new AcxError('acp-env', `Launch environment value ${name} is not a string.`);
  }
  return { env, authMode: auth.mode, proxy, forwardedReal };
}
