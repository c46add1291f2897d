import { createHash } from 'node:crypto';
import type { SharedV4ProviderOptions } from '@ai-sdk/provider';

/**
 * Prompt-cache affinity: providers that route a request to a cache by a key of the caller's
 * choosing get one derived from the session, so every call of a session (across turns, wakes and
 * processes) lands where its prefix is cached. OpenAI takes `prompt_cache_key` (the AI SDK's
 * providerOptions.openai.promptCacheKey), xAI the `x-grok-conv-id` header. The key is a hash, so
 * the session id itself never leaves the machine.
 */
export interface CacheAffinity {
  headers?: Record<string, string>;
  providerOptions?: SharedV4ProviderOptions;
}

export function cacheAffinityKey(sessionId: string): string {
  return `acx-${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}`;
}

export const NO_AFFINITY: CacheAffinity = Object.freeze({});
// One entry per session a process talks for: the hash is taken once, not on every model call.
const keys = new Map<string, string>();

export function cacheAffinity(provider: string, sessionId: string): CacheAffinity {
  if (provider !== 'openai' && provider !== 'xai') return NO_AFFINITY;
  let key = keys.get(sessionId);
  if (key === undefined) {
    if (keys.size >= 1024) keys.clear();
    key = cacheAffinityKey(sessionId);
    keys.set(sessionId, key);
  }
  return provider === 'openai' ? { providerOptions: { openai: { promptCacheKey: key } } } : { headers: { 'x-grok-conv-id': key } };
}

/** The affinity under what the operator set: their own key (model_params.json, --param) wins. */
export function withCacheAffinity(
  set: { headers?: Record<string, string>; providerOptions?: SharedV4ProviderOptions },
  affinity: CacheAffinity,
): { headers: Record<string, string>; providerOptions: SharedV4ProviderOptions | undefined } {
  if (affinity === NO_AFFINITY) return { headers: set.headers ?? {}, providerOptions: set.providerOptions };
  const headers = { ...affinity.headers, ...set.headers };
  let providerOptions = set.providerOptions;
  for (const [provider, options] of Object.entries(affinity.providerOptions ?? {})) {
    providerOptions = { ...providerOptions, [provider]: { ...options, ...providerOptions?.[provider] } };
  }
  return { headers, providerOptions };
}
