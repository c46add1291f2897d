import { ConfigError } from '../../core/errors.ts';

/**
 * Which hosts a confined ACP agent may reach through acx's broker, in the shape the AI SDK's
 * network sandboxes take: `allow-all`, `deny-all`, or `{ allow: [hosts] }` where a host is a
 * name (`api.example.com`), a wildcard for its subdomains (`*.example.com`) or an IP literal.
 *
 * The model API the profile brokers (the credential routes) is reachable under every policy:
 * it is acx's own configuration, not a destination the agent chose. The policy governs the
 * rest — web fetches, package downloads, telemetry — which the agent sends through the broker
 * as an HTTP(S) proxy. `allow-all` still refuses non-public addresses (the host's loopback
 * services, the private network, cloud metadata) unless a host list names them.
 */
export type NetworkPolicy = 'allow-all' | 'deny-all' | { allow: readonly string[] };

/**
 * The default is `deny-all`: the agent still reaches its model API (above), and a sandbox whose
 * point is that a prompt-injected agent cannot carry the workspace off must not leave the rest
 * of the internet open unless the user asks for it.
 */
export const DEFAULT_NETWORK_POLICY: NetworkPolicy = 'deny-all';

/** The environment variable that sets the policy when the profile does not. */
export const NETWORK_POLICY_ENV = 'ACX_ACP_NETWORK_POLICY';

const HOST = /^(?:\*\.)?(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IP_LITERAL = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[?[0-9A-Fa-f:]+\]?)$/;

function checkHost(setting: string, host: unknown): string {
  if (typeof host !== 'string' || host === '' || !(HOST.test(host) || IP_LITERAL.test(host))) {
    throw new ConfigError(`${setting} has an invalid host ${JSON.stringify(host)}.`, {
      hint: "List host names, '*.example.com' wildcards or IP addresses, without scheme, port or path.",
    });
  }
  return host.toLowerCase().replace(/^\[|\]$/g, '');
}

/** Validates a policy given in code (createACP networkPolicy); returns it normalized. */
export function checkNetworkPolicy(setting: string, value: unknown): NetworkPolicy {
  if (value === 'allow-all' || value === 'deny-all') return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Array.isArray((value as { allow?: unknown }).allow)) {
    return { allow: ((value as { allow: unknown[] }).allow).map((host) => checkHost(`${setting}.allow`, host)) };
  }
  throw new ConfigError(`${setting} must be 'allow-all', 'deny-all' or { allow: [hosts] }, got ${JSON.stringify(value)}.`, {
    hint: "e.g. networkPolicy: { allow: ['registry.npmjs.org', '*.github.com'] }",
  });
}

/** Reads the policy from its variable: `allow-all`, `deny-all`, or a comma-separated host list. */
export function parseNetworkPolicy(text: string): NetworkPolicy {
  const trimmed = text.trim();
  if (trimmed === 'allow-all' || trimmed === 'deny-all') return trimmed;
  const hosts = trimmed.split(',').map((h) => h.trim()).filter((h) => h !== '');
  if (hosts.length === 0) {
    throw new ConfigError(`${NETWORK_POLICY_ENV} is empty.`, { hint: "Set it to allow-all, deny-all or a comma-separated host list (e.g. 'registry.npmjs.org,*.github.com')." });
  }
  return { allow: hosts.map((host) => checkHost(NETWORK_POLICY_ENV, host)) };
}

/** The policy in effect: the profile's setting, else the environment's, else the default. */
export function resolveNetworkPolicy(setting: NetworkPolicy | undefined, env: Record<string, string | undefined>): NetworkPolicy {
  if (setting !== undefined) return checkNetworkPolicy('networkPolicy', setting);
  const fromEnv = env[NETWORK_POLICY_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return parseNetworkPolicy(fromEnv);
  return DEFAULT_NETWORK_POLICY;
}

/** Whether a host list names `host` (exactly, or as a subdomain of a `*.` entry). */
export function listedHost(policy: NetworkPolicy, host: string): boolean {
  if (typeof policy === 'string') return false;
  const name = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return policy.allow.some((entry) => (entry.startsWith('*.') ? name.endsWith(entry.slice(1)) : name === entry));
}

/** The policy in words, for logs, errors and resolved-config. */
export function describeNetworkPolicy(policy: NetworkPolicy): string {
  return typeof policy === 'string' ? policy : `allow ${policy.allow.join(', ')}`;
}
