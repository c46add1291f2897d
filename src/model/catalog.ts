import { parseModelSpec, PROVIDERS } from './providers.ts';

/**
 * The models a user can switch to (an editor's model selector): the model in use, those listed in
 * ACX_MODELS, and a few well-known models of every provider whose key is set. acx has no live
 * catalogue: a provider may serve many more ids, which ACX_MODELS (or --model) names.
 */
const WELL_KNOWN: Readonly<Record<string, readonly string[]>> = {
  openai: ['gpt-5.4', 'gpt-5.4-mini'],
  anthropic: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
  google: ['gemini-2.5-pro', 'gemini-2.5-flash'],
  xai: ['grok-4'],
};

export interface ReachableModelsOptions {
  /** The `provider:model-id` in use; always listed, first. */
  current: string;
  env: NodeJS.ProcessEnv;
}

export interface ReachableModels {
  /** `provider:model-id` specs, each once, the current one first. */
  models: string[];
  /** ACX_MODELS entries that are not model specs, with what is wrong. */
  rejected: Array<{ spec: string; reason: string }>;
}

export function reachableModels({ current, env }: ReachableModelsOptions): ReachableModels {
  const rejected: ReachableModels['rejected'] = [];
  const listed = (env.ACX_MODELS ?? '')
    .split(',')
    .map((spec) => spec.trim())
    .filter((spec) => {
      if (!spec) return false;
      try {
        parseModelSpec(spec);
        return true;
      } catch (error) {
        rejected.push({ spec, reason: error instanceof Error ? error.message : String(error) });
        return false;
      }
    });
  const keyed = Object.entries(WELL_KNOWN).flatMap(([provider, ids]) => {
    const definition = PROVIDERS[provider]!;
    return definition.keyEnv.some((name) => env[name]) ? ids.map((id) => `${provider}:${id}`) : [];
  });
  return { models: [...new Set([current, ...listed, ...keyed])], rejected };
}
