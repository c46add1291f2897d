import { HarnessCapabilityUnsupportedError } from '../../core/errors.ts';
import { addLiveSecret } from '../../util/scrub.ts';
import type { ACPSettings, GatewayEnvValue, GatewayPlaceholder, GatewaySource } from './settings.ts';

/**
 * Choosing between direct provider authentication and AI Gateway, and resolving a profile's
 * Gateway environment (placeholders such as `{ $source: 'gateway-base-url', ensureSuffix: '/v1' }`).
 */

export const DEFAULT_GATEWAY_BASE_URL = 'https://ai-gateway.vercel.sh';

export interface AuthSelection {
  mode: 'direct' | 'ai-gateway';
  /** Where credentials are discovered: the `auth` record, or the host environment. */
  authEnv: Record<string, string | undefined>;
  /** The resolved Gateway environment (empty for direct). */
  gatewayEnv: Record<string, string>;
}

function gatewayCredential(env: Record<string, string | undefined>): string | undefined {
  return env.AI_GATEWAY_API_KEY || env.VERCEL_OIDC_TOKEN || undefined;
}

function isPlaceholder(value: unknown): value is GatewayPlaceholder {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && '$source' in value;
}

function resolveValue(value: GatewayEnvValue, sources: Record<GatewaySource, string>): unknown {
  if (isPlaceholder(value)) {
    let resolved = sources[value.$source];
    if (value.ensureSuffix && !resolved.endsWith(value.ensureSuffix)) resolved = resolved.replace(/\/+$/, '') + value.ensureSuffix;
    return resolved;
  }
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, sources));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveValue(v, sources)]));
  return value;
}

/** Structured values are serialized as JSON after their placeholders are resolved. */
export function resolveGatewayEnv(
  env: Record<string, GatewayEnvValue>,
  input: { apiKey: string; baseUrl: string; clientApp: { name: string; version: string } },
): Record<string, string> {
  const sources: Record<GatewaySource, string> = {
    'gateway-api-key': input.apiKey,
    'gateway-base-url': input.baseUrl,
    'gateway-authorization': `Bearer ${input.apiKey}`,
    'client-app': `${input.clientApp.name}/${input.clientApp.version}`,
    'client-app-name': input.clientApp.name,
    'client-app-version': input.clientApp.version,
  };
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const resolved = resolveValue(value, sources);
    out[name] = typeof resolved === 'string' ? resolved : JSON.stringify(resolved);
  }
  return out;
}

export function selectAuth(settings: ACPSettings, hostEnv: Record<string, string | undefined>, clientApp: { name: string; version: string }): AuthSelection {
  const auth = settings.auth ?? 'auto';
  const authEnv = typeof auth === 'object' ? auth : hostEnv;
  const mode = typeof auth === 'object' ? 'auto' : auth;
  const credential = gatewayCredential(authEnv);
  addLiveSecret(credential);
  const gateway = settings.providerAuthentication?.gateway;
  const useGateway = mode === 'ai-gateway' || (mode === 'auto' && credential !== undefined && gateway !== undefined);
  if (!useGateway) return { mode: 'direct', authEnv, gatewayEnv: {} };
  if (!gateway) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId}: AI Gateway authentication needs providerAuthentication.gateway.env.`, {
      hint: "Describe the implementation's Gateway environment in the profile, or use auth: 'direct'.",
    });
  }
  if (!credential) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId}: auth 'ai-gateway' was requested but no Gateway credential is available.`, {
      hint: 'Set AI_GATEWAY_API_KEY or VERCEL_OIDC_TOKEN (or pass them in the auth record).',
    });
  }
  const baseUrl = authEnv.AI_GATEWAY_BASE_URL || DEFAULT_GATEWAY_BASE_URL;
  return { mode: 'ai-gateway', authEnv, gatewayEnv: resolveGatewayEnv(gateway.env, { apiKey: credential, baseUrl, clientApp }) };
}
