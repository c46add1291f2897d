// stream() as the AI SDK's StreamTextResult: usable at once and awaitable, AI SDK parts in
// fullStream, acx's own parts in harnessStream, each stream readable on its own; and how a call's
// input is read (text, or the chat as model messages) and which session it joins.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent, type HarnessAgentSettings } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { lastUserText, scriptedModel, type ScriptFn } from '../support/scripted-model.ts';

function agentWith(script: ScriptFn, settings: Partial<HarnessAgentSettings> = {}) {
  const model = scriptedModel(script);
  const harness = createEngineHarness({ model: fromLanguageModel(model), home: mkdtempSync(join(tmpdir(), 'acx-stream-')), retries: 0 });
  return { agent: new HarnessAgent({ harness, ...settings }), model };
}

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

describe('stream()', () => {
  it('awaited, gives the same result (not a thenable); fullStream has AI SDK parts, harnessStream acx parts, each readable after the other', async () => {
    const { agent } = agentWith(() => ({ reasoning: 'Think.', text: 'Hi there.' }));
    const streamed = agent.stream({ prompt: 'hi' });
    const awaited = await streamed;
    expect((awaited as { then?: unknown }).then).toBeUndefined();
    const sdk = await collect(awaited.fullStream);
    expect(sdk.map((p) => p.type)).toEqual([
      'start',
      'start-step',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(sdk.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop', rawFinishReason: 'stop', totalUsage: { inputTokens: 100, outputTokens: 10 } });
    const acx = await collect(streamed.harnessStream);
    expect(acx[0]).toMatchObject({ type: 'start', resumed: false, sessionId: expect.any(String) });
    expect(acx.map((p) => p.type)).toEqual(['start', 'start-step', 'reasoning-delta', 'text-delta', 'finish-step', 'finish']);
    expect(await collect(streamed.textStream)).toEqual(['Hi there.']);
    expect(await awaited.text).toBe('Hi there.');
    expect(await awaited.reasoningText).toBe('Think.');
    expect((await streamed.steps).map((s) => s.text)).toEqual(['Hi there.']);
    expect(await streamed.toTextStreamResponse().text()).toBe('Hi there.');
  });

  it('a failed turn: an error part ends fullStream, and result rejects with the error', async () => {
    const { agent } = agentWith(() => ({ error: Object.assign(new Error('bad request: nope'), { statusCode: 400 }) }));
    const streamed = agent.stream({ prompt: 'hi' });
    const parts = await collect(streamed.fullStream);
    expect(parts.at(-1)?.type).toBe('error');
    await expect(streamed.result).rejects.toThrow(/nope/);
  });
});

describe('the input of a call', () => {
  it('from the chat as model messages, only the newest user message is sent: the session keeps the history', async () => {
    const { agent, model } = agentWith((options) => ({ text: `you said ${lastUserText(options)}` }), { sessionId: 'chat-1' });
    const first: ModelMessage[] = [{ role: 'user', content: 'one' }];
    expect((await agent.generate({ prompt: first })).text).toBe('you said one');
    const chat: ModelMessage[] = [...first, { role: 'assistant', content: 'you said one' }, { role: 'user', content: [{ type: 'text', text: 'two' }] }];
    expect((await agent.generate({ messages: chat })).text).toBe('you said two');
    // The default session (settings.sessionId) took both: the second call saw the first turn once.
    const userTexts = model.calls[1]!.prompt.filter((m) => m.role === 'user').map((m) => (m.content as Array<{ text?: string }>).map((p) => p.text).join(''));
    expect(userTexts.filter((t) => !t.startsWith('<acx-brief>'))).toEqual(['one', 'two']);
  });

  it('prompt and messages together, or neither, are refused saying what to give', async () => {
    const { agent } = agentWith(() => ({ text: 'x' }));
    await expect(agent.generate({ prompt: 'a', messages: [{ role: 'user', content: 'b' }] })).rejects.toMatchObject({ code: 'usage', message: 'Both `prompt` and `messages` were given.' });
    await expect(agent.generate({})).rejects.toMatchObject({ code: 'usage', hint: expect.stringMatching(/prompt/) });
    await expect(agent.generate({ messages: [{ role: 'system', content: 'be nice' }] })).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(/no user message/) });
  });
});
