// Usage crosses the ACP seam in both directions; on acx's side it is the AI SDK v7 shape.
import { describe, expect, it } from 'vitest';
import { promptUsage } from '../../../src/frontends/acp-server/updates.ts';
import { usageOf } from '../../../src/harness/acp/translate.ts';

describe('usage over ACP', () => {
  it("an agent's PromptResponse usage becomes v7 usage, cache reads under inputTokenDetails", () => {
    expect(usageOf({ usage: { inputTokens: 1200, outputTokens: 30, totalTokens: 1230, cachedReadTokens: 800 } })).toEqual({
      inputTokens: 1200,
      inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: 800, cacheWriteTokens: undefined },
      outputTokens: 30,
      outputTokenDetails: { textTokens: undefined, reasoningTokens: undefined },
      totalTokens: 1230,
    });
  });

  it('acx as an ACP agent reports cache reads as cachedReadTokens', () => {
    const usage = usageOf({ usage: { inputTokens: 1200, outputTokens: 30, cachedReadTokens: 800 } });
    expect(promptUsage(usage)).toEqual({ inputTokens: 1200, outputTokens: 30, totalTokens: 1230, cachedReadTokens: 800 });
  });
});
