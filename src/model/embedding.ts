import type { EmbeddingModel } from 'ai';
import { ConfigError } from '../core/errors.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { PROVIDERS } from './providers.ts';

/**
 * Text embeddings for memory: an Embedder turns texts into vectors, tagged with the engine that
 * made them (vectors from different engines are never compared). A provider's embedding model is
 * called through the AI SDK's `embedMany`, with the same key and base-URL variables its language
 * models use.
 */
export interface Embedder {
  /** The engine tag stored with each vector, e.g. `openai:text-embedding-3-small`. */
  readonly id: string;
  embed(values: readonly string[]): Promise<number[][]>;
}

/** Each provider's embedding model when the agent names none (providers absent here have none). */
export const DEFAULT_EMBEDDING_MODELS: Readonly<Record<string, string>> = {
  openai: 'text-embedding-3-small',
  google: 'gemini-embedding-001',
  openrouter: 'openai/text-embedding-3-small',
};

/** Whether the provider's key is set (a provider that needs no key always counts as keyed). */
export function providerKeyPresent(provider: string, env: NodeJS.ProcessEnv): boolean {
  const definition = PROVIDERS[provider];
  if (!definition) return false;
  return !definition.keyRequired || definition.keyEnv.some((name) => Boolean(env[name]));
}

/**
 * The AI SDK embedding model for `provider:model-id`. A provider acx does not know, or one
 * whose key is missing, is a ConfigError saying what to set.
 */
export async function providerEmbeddingModel(spec: string, env: NodeJS.ProcessEnv): Promise<EmbeddingModel> {
  const colon = spec.indexOf(':');
  const provider = colon > 0 ? spec.slice(0, colon) : '';
  const modelId = colon > 0 ? spec.slice(colon + 1) : '';
  const definition = PROVIDERS[provider];
  if (!definition || !modelId) {
    throw new ConfigError(`The embedding "${spec}" is not "local-hash-128" or "provider:model-id" with a provider acx knows.`, {
      hint: `Use local-hash-128, or e.g. openai:text-embedding-3-small (providers: ${Object.keys(PROVIDERS).join(', ')}).`,
    });
  }
  const keyName = definition.keyEnv.find((name) => env[name]);
  const apiKey = keyName ? env[keyName] : undefined;
  if (definition.keyRequired && !apiKey) {
    throw new ConfigError(`The embedding model ${spec} needs an API key: ${definition.keyEnv.join(' or ')} is not set.`, {
      hint: 'Set the key, or choose the local embedding (ACX_MEMORY_EMBEDDING=local-hash-128).',
    });
  }
  addLiveSecret(apiKey);
  const baseURL = (definition.baseUrlEnv ? env[definition.baseUrlEnv] : undefined) ?? definition.defaultBaseUrl;
  const common = { ...(apiKey ? { apiKey } : {}), ...(baseURL ? { baseURL } : {}) };
  switch (provider) {
    case 'openai':
      return (await import('@ai-sdk/openai')).createOpenAI(common).embedding(modelId);
    case 'google':
      return (await import('@ai-sdk/google')).createGoogleGenerativeAI(common).embedding(modelId);
    case 'openrouter':
      return (await import('@openrouter/ai-sdk-provider')).createOpenRouter(common).textEmbeddingModel(modelId) as unknown as EmbeddingModel;
    case 'anthropic':
    case 'xai':
      throw new ConfigError(`${definition.label} has no embedding models acx can call.`, {
        hint: 'Choose another provider\'s embedding model (e.g. openai:text-embedding-3-small) or local-hash-128.',
      });
    default: {
      if (!baseURL) throw new ConfigError(`The embedding model ${spec} needs a base URL.`, { hint: `Set ${definition.baseUrlEnv ?? 'ACX_BASE_URL'}.` });
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      return createOpenAICompatible({ name: provider, baseURL, ...(apiKey ? { apiKey } : {}) }).embeddingModel(modelId);
    }
  }
}

/** An Embedder over an AI SDK embedding model: one `embedMany` call per batch. */
export function createSdkEmbedder(id: string, model: EmbeddingModel, options: { maxRetries?: number } = {}): Embedder {
  return {
    id,
    async embed(values) {
      if (values.length === 0) return [];
      const { embedMany } = await import('./ai-calls.ts');
      const { embeddings } = await embedMany({ model, values: [...values], maxRetries: options.maxRetries ?? 2 });
      return embeddings;
    },
  };
}
