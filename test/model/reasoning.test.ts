import { expect, it } from 'vitest';
import { takesReasoningEffort } from '../../src/model/reasoning.ts';

it('counts the model families known to take a reasoning effort, and nothing else', () => {
  const takes = [
    'openai:o3',
    'openai:o4-mini',
    'openai:gpt-5',
    'openai:gpt-5.4-mini',
    'anthropic:claude-sonnet-4-5',
    'anthropic:claude-haiku-4-5',
    'anthropic:claude-3-7-sonnet-latest',
    'google:gemini-2.5-flash',
    'google:gemini-3-pro-preview',
    'xai:grok-3-mini',
  ];
  const not = [
    'openai:gpt-4o',
    'openai:gpt-4.1-mini',
    'openai:gpt-5-chat-latest',
    'openai:gpt-5.1-chat-latest',
    'openai:test',
    'anthropic:claude-3-5-sonnet-latest',
    'google:gemini-2.0-flash',
    'xai:grok-4',
    'ollama:qwen3',
    'openrouter:openai/gpt-5',
  ];
  expect(takes.filter((spec) => !takesReasoningEffort(spec))).toEqual([]);
  expect(not.filter((spec) => takesReasoningEffort(spec))).toEqual([]);
});
