import type { LanguageModelV4, LanguageModelV4Message, LanguageModelV4Prompt, SharedV4ProviderOptions } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { convertToLanguageModelPrompt } from '../model/ai-internals.ts';

/**
 * The transcript in the provider's own prompt format (LanguageModelV4), converted by the AI SDK's
 * converter one message at a time and remembered between the calls of a turn, and between the
 * turns of a session (SessionPrompts).
 *
 * Why: a turn's transcript only grows, and the AI SDK's loop re-converts (and re-scans for
 * assets to download) the whole history before every step — cost that grows with the turn, and
 * a session's every turn would pay for its whole history again. Here each step converts only
 * what the previous one appended, and a turn only what the last turn added. Messages are
 * recognised by identity; whatever is not a kept prefix (after a compaction, other instructions,
 * another model: everything) is converted again, so the result is always what converting the
 * whole prompt would give.
 */
export interface ProviderPromptInput {
  model: LanguageModelV4;
  system: string;
  /**
   * The stable transcript, oldest first. Messages are recognised by identity, so never mutate one;
   * an array given again must only have grown since (give a new array for anything else).
   */
  messages: readonly ModelMessage[];
  /** Volatile messages spliced after the stable ones for this call only (the brief). */
  volatile: readonly ModelMessage[];
  /** Provider options for the last stable message: a cache breakpoint at the stable/volatile boundary. */
  boundaryOptions?: SharedV4ProviderOptions | undefined;
  abortSignal?: AbortSignal | undefined;
}

export class ProviderPrompt {
  private model: LanguageModelV4 | undefined;
  private system: LanguageModelV4Message | undefined;
  private systemText: string | undefined;
  /** The stable messages converted so far, and what they converted to (tool runs merged, as the SDK does). */
  private sources: ModelMessage[] = [];
  private converted: LanguageModelV4Message[] = [];
  /**
   * Where each build's conversion ended ({ sources, converted } lengths), oldest first: the only
   * places the memo can be cut back to, because one conversion may merge its messages together.
   */
  private ends: Array<{ sources: number; converted: number }> = [];
  /** The array the last build was given: the engine passes the same one, grown, on every step. */
  private lastMessages: readonly ModelMessage[] | undefined;

  async build(input: ProviderPromptInput): Promise<LanguageModelV4Prompt> {
    if (input.model !== this.model || input.system !== this.systemText) {
      this.model = input.model;
      this.systemText = input.system;
      this.system = input.system ? { role: 'system', content: input.system } : undefined;
      this.cutTo(0);
    }
    this.keepCommonPrefix(input.messages);
    this.lastMessages = input.messages;
    const added = input.messages.slice(this.sources.length);
    if (added.length > 0) {
      const converted = await convert(input.model, added, input.abortSignal);
      for (const message of added) this.sources.push(message);
      for (const message of converted) this.converted.push(message);
      this.ends.push({ sources: this.sources.length, converted: this.converted.length });
    }

    const last = this.converted.at(-1);
    if (input.volatile[0]?.role === 'tool' && last?.role === 'tool') {
      throw new Error('A volatile tool message cannot follow the transcript: it would merge into the stable prompt.');
    }
    const volatile = input.volatile.length > 0 ? await convert(input.model, input.volatile, input.abortSignal) : [];
    // One copy of the memo per call, made in one allocation (the model may keep the prompt it was
    // given); the memo itself is never handed out, so the boundary options land on the copy only.
    const head: LanguageModelV4Message[] = this.system ? [this.system] : [];
    const prompt = head.concat(this.converted, volatile);
    if (last && input.boundaryOptions) {
      prompt[head.length + this.converted.length - 1] = { ...last, providerOptions: { ...last.providerOptions, ...input.boundaryOptions } };
    }
    return prompt;
  }

  /**
   * Keeps the longest part of the memo that `messages` still starts with, cut at a build's end,
   * and not where a tool message would follow a tool message (the SDK merges the two, which only
   * a conversion of both does). Pure growth keeps everything; a transcript reloaded from the
   * journal for the next turn keeps the messages of earlier turns (the journal gives the same
   * objects again, see JournalStore.transcript) and converts the last turn's again; a compaction
   * keeps nothing.
   */
  private keepCommonPrefix(messages: readonly ModelMessage[]): void {
    const common = this.commonPrefix(messages);
    let end = this.ends.length - 1;
    for (; end >= 0; end--) {
      const cut = this.ends[end]!.sources;
      if (cut <= common && !(this.sources[cut - 1]!.role === 'tool' && messages[cut]?.role === 'tool')) break;
    }
    if (end < this.ends.length - 1) this.cutTo(end + 1);
  }

  /**
   * How many of the converted messages `messages` starts with. The engine's own array only grows
   * (transcript.ts, messagesOf), so for it the check is constant-time: the same array, and the
   * last converted message still where it was. Any other array is compared message by message.
   */
  private commonPrefix(messages: readonly ModelMessage[]): number {
    const count = this.sources.length;
    if (messages === this.lastMessages && count <= messages.length && (count === 0 || messages[count - 1] === this.sources[count - 1])) return count;
    let i = 0;
    while (i < count && i < messages.length && messages[i] === this.sources[i]) i++;
    return i;
  }

  /** Forgets all but the first `builds` conversions. */
  private cutTo(builds: number): void {
    const end = builds > 0 ? this.ends[builds - 1]! : { sources: 0, converted: 0 };
    this.ends.length = builds;
    this.sources.length = end.sources;
    this.converted.length = end.converted;
  }
}

/**
 * The memo of each session whose turns an engine ran, kept between turns so a long session's next
 * turn converts only what its last turn added. A turn takes its session's memo for itself and
 * gives it back when it ends, so two turns never share one; a few sessions are kept, the least
 * recently used forgotten.
 */
export class SessionPrompts {
  private readonly memos = new Map<string, ProviderPrompt>();
  private readonly limit: number;
  constructor(limit = 4) {
    this.limit = limit;
  }

  take(sessionId: string): ProviderPrompt {
    const memo = this.memos.get(sessionId) ?? new ProviderPrompt();
    this.memos.delete(sessionId);
    return memo;
  }

  giveBack(sessionId: string, memo: ProviderPrompt): void {
    this.memos.delete(sessionId);
    this.memos.set(sessionId, memo);
    if (this.memos.size > this.limit) this.memos.delete(this.memos.keys().next().value!);
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
