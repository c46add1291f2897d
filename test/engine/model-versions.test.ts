// A model made for an earlier AI SDK (specification v3 or v2) still runs a turn: the engine wraps it
// in the SDK's own adapter. One of a specification acx cannot call is refused, naming it.
import { describe, expect, it } from 'vitest';
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { tmpHome } from './helpers.ts';

function v3Model(calls: LanguageModelV3CallOptions[]): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'older.chat',
    modelId: 'older-1',
    supportedUrls: {},
    async doGenerate(options) {
      calls.push(options);
      return {
        content: [{ type: 'text', text: 'Hello from a v3 model.' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: { inputTokens: { total: 12, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: undefined, reasoning: undefined } },
        warnings: [],
      };
    },
    async doStream() {
      throw new Error('not used: generate() calls doGenerate');
    },
  };
}

const agentOn = (model: unknown) =>
  new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(model as LanguageModelV4), home: tmpHome() }), tools: [] });

describe('models of earlier specifications', () => {
  it('a v3 model answers a turn, given its prompt in its own format', async () => {
    const calls: LanguageModelV3CallOptions[] = [];
    const result = await agentOn(v3Model(calls)).generate({ prompt: 'Say hello.' });
    expect(result.text).toBe('Hello from a v3 model.');
    expect(result.usage.inputTokens).toBe(12);
    expect(calls).toHaveLength(1);
    const user = calls[0]!.prompt.filter((message) => message.role === 'user');
    expect(user[0]!.content).toEqual([expect.objectContaining({ type: 'text', text: 'Say hello.' })]);
  });

  it('a v2 model answers a turn, its usage and finish reason read in their older shape', async () => {
    const model = {
      specificationVersion: 'v2',
      provider: 'oldest.chat',
      modelId: 'oldest-1',
      supportedUrls: {},
      doGenerate: async () => ({
        content: [{ type: 'text', text: 'Hello from a v2 model.' }],
        finishReason: 'stop',
        usage: { inputTokens: 21, outputTokens: 4, totalTokens: 25 },
        warnings: [],
      }),
      doStream: async () => {
        throw new Error('not used: generate() calls doGenerate');
      },
    };
    const result = await agentOn(model).generate({ prompt: 'Say hello.' });
    expect(result.text).toBe('Hello from a v2 model.');
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toMatchObject({ inputTokens: 21, outputTokens: 4 });
  });

  it('a model of a specification acx cannot call is refused, naming it', async () => {
    const v1 = { ...v3Model([]), specificationVersion: 'v1' };
    await expect(agentOn(v1).generate({ prompt: 'Say hello.' })).rejects.toThrow(/older\.chat\/older-1 implements specification v1; acx calls models of specification v2, v3 or v4/);
  });
});
