// The models an editor's selector offers: the one in use, ACX_MODELS, and the well-known models of
// each provider whose key is set.
import { expect, it } from 'vitest';
import { reachableModels } from '../../src/model/catalog.ts';

it('lists the current model first, then ACX_MODELS, then well-known models of providers with a key, each once', () => {
  const { models, rejected } = reachableModels({
    current: 'openai:gpt-5.4-mini',
    env: { ACX_MODELS: ' ollama:qwen3 ,openai:gpt-5.4-mini,, anthropic:claude-sonnet-4-5', GEMINI_API_KEY: 'g', ANTHROPIC_API_KEY: 'a' },
  });
  expect(models).toEqual([
    'openai:gpt-5.4-mini',
    'ollama:qwen3',
    'anthropic:claude-sonnet-4-5',
    'anthropic:claude-haiku-4-5',
    'google:gemini-2.5-pro',
    'google:gemini-2.5-flash',
  ]);
  expect(rejected).toEqual([]);
});

it('offers only the current model when no key is set, and names the ACX_MODELS entries it skipped', () => {
  const { models, rejected } = reachableModels({ current: 'llamacpp:local', env: { ACX_MODELS: 'gpt-5, nowhere:model' } });
  expect(models).toEqual(['llamacpp:local']);
  expect(rejected.map((r) => r.spec)).toEqual(['gpt-5', 'nowhere:model']);
  expect(rejected[0]!.reason).toContain('is not a model spec');
  expect(rejected[1]!.reason).toContain('Unknown model provider "nowhere"');
});
