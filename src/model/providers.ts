import type { LanguageModelV4 } from '@ai-sdk/provider';
import { AcxError, ConfigError, errorMarker, setMarker } from '../core/errors.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { withToolImagesAsUserMessages } from './chat-tool-images.ts';
import { discoverContextWindow } from './context-window.ts';
import { withRouterMetadata } from './openrouter-routing.ts';
import type { Logger } from '../util/logger.ts';

/**
 * The model seam: `provider:model-id` (from `--model` or `ACX_MODEL`) becomes an AI SDK
 * LanguageModel plus the facts the engine needs about it.
 *
 * How prompt caching is reached differs by vendor and the difference is not cosmetic: an
 * `explicit` provider with no breakpoint silently bills full price. So every provider must
 * declare its `cacheMode`; a test fails when one does not.
 *
 * Provider packages are imported only when chosen, so start-up pays for one, not six.
 */
export type CacheMode = 'automatic' | 'explicit' | 'none';
export type ModelSurface = 'responses' | 'chat' | 'native';

export interface ProviderDefinition {
  /** Names the endpoint vendor in logs. */
  id: string;
  /** Names it for people, in error messages ("OpenAI", "llama.cpp"). */
  label: string;
  cacheMode: CacheMode;
  /** Environment variables that may hold the key, first found wins. Empty = no key needed. */
  keyEnv: readonly string[];
  keyRequired: boolean;
  /** Environment variable that overrides the endpoint. */
  baseUrlEnv?: string;
  defaultBaseUrl?: string;
  surfaces: readonly ModelSurface[];
  create(settings: { modelId: string; apiKey?: string; baseURL?: string; surface: ModelSurface }): Promise<LanguageModelV4>;
}

const openaiCompatible = (id: string, label: string, defaultBaseUrl?: string): ProviderDefinition => ({
  id,
  label,
  cacheMode: 'none',
  keyEnv: ['ACX_API_KEY', 'OPENAI_COMPATIBLE_API_KEY'],
  keyRequired: false,
  baseUrlEnv: 'ACX_BASE_URL',
  ...(defaultBaseUrl ? { defaultBaseUrl } : {}),
  surfaces: ['chat'],
  create: async ({ modelId, apiKey, baseURL }) => {
    if (!baseURL) {
      throw new ConfigError(`The ${id} provider needs a base URL.`, {
        hint: 'Set ACX_BASE_URL (or --base-url), e.g. http://127.0.0.1:8080/v1 for llama.cpp.',
      });
    }
    return chatCompletionsModel(id, baseURL, apiKey, modelId);
  },
});

/** A model on an OpenAI-style Chat Completions endpoint, a tool's images sent the way that wire takes them. */
async function chatCompletionsModel(name: string, baseURL: string, apiKey: string | undefined, modelId: string): Promise<LanguageModelV4> {
  const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
  const chat = createOpenAICompatible({ name, baseURL, ...(apiKey ? { apiKey } : {}), includeUsage: true }).chatModel(modelId) as LanguageModelV4;
  return withToolImagesAsUserMessages(chat);
}

export const PROVIDERS: Readonly<Record<string, ProviderDefinition>> = {
  openai: {
    id: 'openai',
    label: 'OpenAI',
    cacheMode: 'automatic',
    keyEnv: ['OPENAI_API_KEY'],
    keyRequired: true,
    baseUrlEnv: 'OPENAI_BASE_URL',
    surfaces: ['responses', 'chat'],
    create: async ({ modelId, apiKey, baseURL, surface }) => {
      const { createOpenAI } = await import('@ai-sdk/openai');
      const provider = createOpenAI({ apiKey, ...(baseURL ? { baseURL } : {}) });
      // Chat Completions carries no image in a tool message; Responses does.
      return surface === 'chat' ? withToolImagesAsUserMessages(provider.chat(modelId) as LanguageModelV4) : (provider.responses(modelId) as LanguageModelV4);
    },
  },
  anthropic: {
    id: 'anthropic',
    label: 'Anthropic',
    cacheMode: 'explicit',
    keyEnv: ['ANTHROPIC_API_KEY'],
    keyRequired: true,
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    surfaces: ['native'],
    create: async ({ modelId, apiKey, baseURL }) =>
      (await import('@ai-sdk/anthropic')).createAnthropic({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId) as LanguageModelV4,
  },
  xai: {
    id: 'xai',
    label: 'xAI',
    cacheMode: 'automatic',
    keyEnv: ['XAI_API_KEY'],
    keyRequired: true,
    baseUrlEnv: 'XAI_BASE_URL',
    defaultBaseUrl: 'https://api.x.ai/v1',
    surfaces: ['responses', 'chat'],
    create: async ({ modelId, apiKey, baseURL, surface }) => {
      if (surface === 'responses') return (await import('@ai-sdk/xai')).createXai({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId) as LanguageModelV4;
      // xAI's Chat Completions speak the OpenAI wire (the AI SDK's xAI provider has Responses only).
      return chatCompletionsModel('xai', baseURL ?? 'https://api.x.ai/v1', apiKey, modelId);
    },
  },
  openrouter: {
    id: 'openrouter',
    label: 'OpenRouter',
    cacheMode: 'automatic',
    keyEnv: ['OPENROUTER_API_KEY'],
    keyRequired: true,
    baseUrlEnv: 'OPENROUTER_BASE_URL',
    surfaces: ['chat'],
    create: async ({ modelId, apiKey, baseURL }) =>
      withRouterMetadata((await import('@openrouter/ai-sdk-provider')).createOpenRouter({ apiKey, ...(baseURL ? { baseURL } : {}) }).chat(modelId) as unknown as LanguageModelV4),
  },
  google: {
    id: 'google',
    label: 'Google Gemini',
    cacheMode: 'automatic',
    keyEnv: ['GOOGLE_GENERATIVE_AI_API_KEY', 'GEMINI_API_KEY'],
    keyRequired: true,
    baseUrlEnv: 'GOOGLE_GENERATIVE_AI_BASE_URL',
    surfaces: ['native'],
    create: async ({ modelId, apiKey, baseURL }) =>
      (await import('@ai-sdk/google')).createGoogleGenerativeAI({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId) as LanguageModelV4,
  },
  'openai-compatible': openaiCompatible('openai-compatible', 'the OpenAI-compatible server'),
  ollama: openaiCompatible('ollama', 'Ollama', 'http://127.0.0.1:11434/v1'),
  llamacpp: openaiCompatible('llamacpp', 'llama.cpp', 'http://127.0.0.1:8080/v1'),
  vllm: openaiCompatible('vllm', 'vLLM', 'http://127.0.0.1:8000/v1'),
};

/** Every variable a provider reads its key or endpoint from: what a process needs to reach its model. */
export const PROVIDER_ENV_NAMES: readonly string[] = [
  ...new Set(Object.values(PROVIDERS).flatMap((provider) => [...provider.keyEnv, ...(provider.baseUrlEnv ? [provider.baseUrlEnv] : [])])),
];

const MISSING_API_KEY_MARKER = errorMarker('MissingApiKeyError');

/** The provider needs a key and none of the variables it reads holds one. */
export class MissingApiKeyError extends ConfigError {
  /** The variables any of which would do, first preferred. */
  readonly variables: readonly string[];
  constructor(provider: string, variables: readonly string[]) {
    super(`No API key for ${provider}: ${variables.join(' or ')} is not set.`, {
      hint: `Export ${variables[0]}=... (or run offline with --replay FILE).`,
    });
    setMarker(this, MISSING_API_KEY_MARKER);
    this.name = 'MissingApiKeyError';
    this.variables = variables;
  }

  static override isInstance(error: unknown): error is MissingApiKeyError {
    return AcxError.hasMarker(error, MISSING_API_KEY_MARKER);
  }
}

export interface ModelSpec {
  provider: string;
  modelId: string;
}

export function parseModelSpec(spec: string): ModelSpec {
  const index = spec.indexOf(':');
  const provider = index > 0 ? spec.slice(0, index).trim() : '';
  const modelId = index > 0 ? spec.slice(index + 1).trim() : '';
  if (!provider || !modelId) {
    throw new ConfigError(`"${spec}" is not a model spec.`, {
      hint: `Write provider:model-id, e.g. openai:gpt-5.4-mini or anthropic:claude-sonnet-4-5. Providers: ${Object.keys(PROVIDERS).join(', ')}.`,
    });
  }
  if (!PROVIDERS[provider]) {
    throw new ConfigError(`Unknown model provider "${provider}".`, {
      hint: `Use one of: ${Object.keys(PROVIDERS).join(', ')}.`,
    });
  }
  return { provider, modelId };
}

export interface ResolvedModel {
  model: LanguageModelV4;
  provider: string;
  modelId: string;
  surface: ModelSurface;
  cacheMode: CacheMode;
  baseURL: string | undefined;
  /** The provider's own statement of its context window, when it makes one. */
  contextWindowTokens: number | undefined;
  /** Whether image inputs may be sent; unknown models are assumed able (fail open). */
  vision: boolean;
}

export interface ResolveModelOptions {
  spec?: string;
  surface?: ModelSurface;
  baseURL?: string;
  env?: NodeJS.ProcessEnv;
  contextWindowTokens?: number;
  /** Ask the provider for the model's context window when contextWindowTokens is not given. */
  discoverContextWindow?: { logger?: Logger; timeoutMs?: number; fetch?: typeof fetch } | undefined;
  vision?: boolean;
}

/** What a command that calls a model says when none was chosen. */
export function noModelSelected(): ConfigError {
  return new ConfigError('No model selected.', {
    hint: 'Pass --model provider:model-id or set ACX_MODEL (e.g. openai:gpt-5.4-mini), or use --replay FILE to run offline.',
  });
}

/** Describes the provider without building a client: no key needed (resolved-config). */
export function describeModel(options: ResolveModelOptions) {
  const env = options.env ?? process.env;
  const specText = options.spec ?? env.ACX_MODEL;
  if (!specText) throw noModelSelected();
  const spec = parseModelSpec(specText);
  const definition = PROVIDERS[spec.provider]!;
  const surfaceText = options.surface ?? (env.ACX_MODEL_SURFACE as ModelSurface | undefined);
  const surface: ModelSurface = surfaceText ?? definition.surfaces[0]!;
  if (!definition.surfaces.includes(surface)) {
    throw new ConfigError(`The ${spec.provider} provider has no "${surface}" surface.`, {
      hint: `Choose one of: ${definition.surfaces.join(', ')}.`,
    });
  }
  const baseURL =
    options.baseURL ?? (definition.baseUrlEnv ? env[definition.baseUrlEnv] : undefined) ?? definition.defaultBaseUrl;
  return { ...spec, definition, surface, baseURL };
}

/**
 * The provider's API key from its variables (the first that is set); MissingApiKeyError when it
 * needs one and none is set. Checked before any client is built, so `acx acp` can say so early.
 */
export function providerApiKey(provider: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const definition = PROVIDERS[provider]!;
  const keyName = definition.keyEnv.find((name) => env[name]);
  const apiKey = keyName ? env[keyName] : undefined;
  if (definition.keyRequired && !apiKey) throw new MissingApiKeyError(provider, definition.keyEnv);
  return apiKey;
}

export async function resolveModel(options: ResolveModelOptions): Promise<ResolvedModel> {
  const env = options.env ?? process.env;
  const { provider, modelId, definition, surface, baseURL } = describeModel(options);
  const apiKey = providerApiKey(provider, env);
  // Scrubbed from every log line and stored error from now on, even one set after start-up.
  addLiveSecret(apiKey);
  const model = await definition.create({ modelId, ...(apiKey ? { apiKey } : {}), ...(baseURL ? { baseURL } : {}), surface });
  return {
    model,
    provider,
    modelId,
    surface,
    cacheMode: definition.cacheMode,
    baseURL,
    contextWindowTokens:
      options.contextWindowTokens ??
      (options.discoverContextWindow ? await discoverContextWindow({ provider, modelId, baseURL, apiKey, ...options.discoverContextWindow }) : undefined),
    vision: options.vision ?? true,
  };
}

/** Wraps a LanguageModel you built yourself (any AI SDK provider) with the facts the engine needs. */
export function fromLanguageModel(
  model: LanguageModelV4,
  facts: { cacheMode?: CacheMode; contextWindowTokens?: number; vision?: boolean; provider?: string } = {},
): ResolvedModel {
  const providerId = facts.provider ?? model.provider.split('.')[0] ?? model.provider;
  const known = PROVIDERS[providerId];
  return {
    model,
    provider: providerId,
    modelId: model.modelId,
    surface: 'native',
    cacheMode: facts.cacheMode ?? known?.cacheMode ?? 'none',
    baseURL: undefined,
    contextWindowTokens: facts.contextWindowTokens,
    vision: facts.vision ?? true,
  };
}
