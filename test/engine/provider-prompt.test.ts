// The provider-level prompt built incrementally (one conversion per transcript message) must be
// exactly what the AI SDK's converter makes of the whole prompt, on every step of a turn and after
// anything that is not pure growth.
import type { LanguageModelV4, LanguageModelV4Prompt } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { convertToLanguageModelPrompt } from '../../src/model/ai-internals.ts';
import { describe, expect, it } from 'vitest';
import { ProviderPrompt } from '../../src/engine/provider-prompt.ts';
import { scriptedModel } from '../support/scripted-model.ts';

const model = scriptedModel(() => ({ text: 'unused' })) as unknown as LanguageModelV4;
const SYSTEM = 'You keep notes.';
const brief = (step: number): ModelMessage[] => [{ role: 'user', content: `[brief] Step ${step} of 24` }];

async function whole(messages: readonly ModelMessage[], volatile: readonly ModelMessage[]): Promise<LanguageModelV4Prompt> {
  return convertToLanguageModelPrompt({
    prompt: { instructions: SYSTEM, messages: [...messages, ...volatile] },
    supportedUrls: {},
    provider: model.provider.split('.')[0],
  } as Parameters<typeof convertToLanguageModelPrompt>[0]);
}

const assistantCall = (id: string, input: unknown): ModelMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: id, toolName: 'note_write', input }],
});
const toolResult = (id: string, value: string): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: id, toolName: 'note_write', output: { type: 'text', value } }],
});

describe('ProviderPrompt', () => {
  it('equals converting the whole prompt on every step of a growing turn', async () => {
    const memo = new ProviderPrompt();
    const transcript: ModelMessage[] = [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Remember this picture.' },
          { type: 'image', image: new Uint8Array([137, 80, 78, 71]), mediaType: 'image/png' },
        ],
      },
    ];
    for (let step = 1; step <= 6; step++) {
      const built = await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(step) });
      expect(built).toEqual(await whole(transcript, brief(step)));
      transcript.push(assistantCall(`call_${step}`, { n: step }), toolResult(`call_${step}`, `saved ${step}`));
    }
  });

  it('starts over when the transcript is not an extension of the last one (compaction, reload)', async () => {
    const memo = new ProviderPrompt();
    const transcript: ModelMessage[] = [{ role: 'user', content: 'first' }, assistantCall('a', {}), toolResult('a', 'ok')];
    await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(1) });
    const compacted: ModelMessage[] = [{ role: 'user', content: '[summary] earlier work' }, { role: 'user', content: 'next' }];
    expect(await memo.build({ model, system: SYSTEM, messages: compacted, volatile: brief(1) })).toEqual(
      await whole(compacted, brief(1)),
    );
    // Equal content in new objects (a transcript reloaded from the journal) is converted afresh too.
    const reloaded = compacted.map((message) => structuredClone(message));
    expect(await memo.build({ model, system: 'Other instructions.', messages: reloaded, volatile: [] })).toEqual(
      await convertToLanguageModelPrompt({
        prompt: { instructions: 'Other instructions.', messages: reloaded },
        supportedUrls: {},
      } as Parameters<typeof convertToLanguageModelPrompt>[0]),
    );
  });

  it("keeps the earlier turns a session's next transcript starts with, and converts only the rest", async () => {
    const memo = new ProviderPrompt();
    const earlier: ModelMessage[] = [{ role: 'user', content: 'first turn' }, assistantCall('a', { n: 1 }), toolResult('a', 'saved 1')];
    const lastTurn: ModelMessage[] = [{ role: 'user', content: 'second turn' }, assistantCall('b', { n: 2 })];
    const first = await memo.build({ model, system: SYSTEM, messages: earlier, volatile: brief(1) });
    const during = [...earlier, ...lastTurn, toolResult('b', 'saved 2')];
    await memo.build({ model, system: SYSTEM, messages: during, volatile: brief(2) });
    // The next turn reads the journal: earlier turns' messages are the same objects (the journal
    // keeps them), the last turn's are new ones (its capped results), then the new question.
    const reloaded = [...earlier, ...during.slice(earlier.length).map((message) => structuredClone(message)), { role: 'user', content: 'third turn' } as ModelMessage];
    const next = await memo.build({ model, system: SYSTEM, messages: reloaded, volatile: brief(1) });
    expect(next).toEqual(await whole(reloaded, brief(1)));
    // The earlier turns were not converted again: their provider messages are the ones built before.
    for (let i = 1; i <= earlier.length; i++) expect(next[i]).toBe(first[i]);
  });

  it('converts again from before a tool run when a reloaded tool message would merge into a kept one', async () => {
    const memo = new ProviderPrompt();
    const kept: ModelMessage[] = [{ role: 'user', content: 'go' }];
    await memo.build({ model, system: SYSTEM, messages: kept, volatile: [] });
    kept.push(assistantCall('x', {}));
    const result = toolResult('x', 'first');
    await memo.build({ model, system: SYSTEM, messages: [...kept, result], volatile: brief(1) });
    // A transcript that keeps the first result and adds a second tool message after it (new objects from there on).
    const reloaded = [...kept, result, toolResult('x', 'amended'), { role: 'user', content: 'next' } as ModelMessage];
    const built = await memo.build({ model, system: SYSTEM, messages: reloaded, volatile: brief(2) });
    expect(built).toEqual(await whole(reloaded, brief(2)));
    expect(built.filter((message) => message.role === 'tool')).toHaveLength(1);
  });

  it('merges a tool message that follows a tool message exactly as the SDK does', async () => {
    const memo = new ProviderPrompt();
    const transcript: ModelMessage[] = [{ role: 'user', content: 'go' }, assistantCall('x', {}), toolResult('x', 'first')];
    await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(1) });
    // A second tool message (a late approval answer, say) merges into the one the memo ends with.
    transcript.push(toolResult('x', 'amended'));
    const built = await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(2) });
    expect(built).toEqual(await whole(transcript, brief(2)));
    expect(built.filter((message) => message.role === 'tool')).toHaveLength(1);
  });

  it('puts the boundary options on the last stable message only, never on the brief or the memo', async () => {
    const memo = new ProviderPrompt();
    const breakpoint = { anthropic: { cacheControl: { type: 'ephemeral' } } };
    const transcript: ModelMessage[] = [{ role: 'user', content: 'hello' }];
    const first = await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(1), boundaryOptions: breakpoint });
    expect(first.map((message) => message.providerOptions)).toEqual([undefined, breakpoint, undefined]);
    transcript.push({ role: 'assistant', content: 'hi' });
    const second = await memo.build({ model, system: SYSTEM, messages: transcript, volatile: brief(2), boundaryOptions: breakpoint });
    expect(second.map((message) => message.providerOptions)).toEqual([undefined, undefined, breakpoint, undefined]);
  });
});
