import type { LanguageModelV4, LanguageModelV4Message, LanguageModelV4Prompt, SharedV4ProviderOptions } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { convertToLanguageModelPrompt } from '../model/ai-internals.ts';

/**
 * The transcript in the provider's own prompt format (LanguageModelV4), converted by the AI SDK's
 * converter one message at a time and remembered between the calls of a turn.
 *
 * Why: a turn's transcript only grows, and the AI SDK's loop re-converts (and re-scans for
 * assets to download) the whole history before every step — cost that grows with the turn. Here
 * each step converts only what the previous step appended. Anything other than pure growth (a
 * compaction, a transcript reloaded from the journal, other instructions, another model) starts
 * over from scratch, so the result is always what converting the whole prompt would give.
 */
export interface ProviderPromptInput {
  model: LanguageModelV4;
  system: string;
  /** The stable transcript, oldest first. Messages are recognised by identity, so never mutate one. */
  messages: readonly ModelMessage[];
  /** Volatile messages spliced after the stable ones for this call only (the brief). */
  volatile: readonly ModelMessage[];
  /** Provider options for the last stable message: a cache breakpoint at the stable/volatile boundary. */
  boundaryOptions?: SharedV4ProviderOptions | undefined;
  abortSignal?: AbortSignal | undefined;
}

export class ProviderPrompt {
  private model: LanguageModelV4 | undefined;
  private system: string | undefined;
  /** The stable messages converted so far, and what they converted to (tool runs merged, as the SDK does). */
  private sources: ModelMessage[] = [];
  private converted: LanguageModelV4Message[] = [];

  async build(input: ProviderPromptInput): Promise<LanguageModelV4Prompt> {
    if (input.model !== this.model || input.system !== this.system || !this.extends(input.messages)) {
      this.model = input.model;
      this.system = input.system;
      this.sources = [];
      this.converted = [];
    }
    const added = input.messages.slice(this.sources.length);
    if (added.length > 0) {
      // A tool message right after a tool message merges into it; only a full conversion does that.
      if (added[0]!.role === 'tool' && this.converted.at(-1)?.role === 'tool') {
        this.sources = [];
        this.converted = [];
        return this.build(input);
      }
      const converted = await convert(input.model, added, input.abortSignal);
      this.sources.push(...added);
      this.converted.push(...converted);
    }

    const stable = [...this.converted];
    const last = stable.at(-1);
    if (last && input.boundaryOptions) {
      stable[stable.length - 1] = { ...last, providerOptions: { ...last.providerOptions, ...input.boundaryOptions } };
    }
    if (input.volatile[0]?.role === 'tool' && last?.role === 'tool') {
      throw new Error('A volatile tool message cannot follow the transcript: it would merge into the stable prompt.');
    }
    const volatile = input.volatile.length > 0 ? await convert(input.model, input.volatile, input.abortSignal) : [];
    const system: LanguageModelV4Message[] = input.system ? [{ role: 'system', content: input.system }] : [];
    return [...system, ...stable, ...volatile];
  }

  private extends(messages: readonly ModelMessage[]): boolean {
    if (messages.length < this.sources.length) return false;
    for (let i = 0; i < this.sources.length; i++) if (messages[i] !== this.sources[i]) return false;
    return true;
  }
}

async function convert(
  model: LanguageModelV4,
  messages: readonly ModelMessage[],
  abortSignal: AbortSignal | undefined,
): Promise<LanguageModelV4Message[]> {
  return convertToLanguageModelPrompt({
    prompt: { messages: [...messages] },
    supportedUrls: await model.supportedUrls,
    abortSignal,
    provider: model.provider.split('.')[0],
  } as Parameters<typeof convertToLanguageModelPrompt>[0]);
}
