import type { JSONValue } from '@ai-sdk/provider';
import type { LanguageModelUsage } from 'ai';
import type { FileChange } from '../tools/tool.ts';

/**
 * The parts a turn streams, shaped like the AI SDK's `fullStream` parts so acx fits where an
 * AI SDK Agent fits, plus a few acx parts (compaction, unspoken narration, retries).
 */
/**
 * Token usage in the AI SDK v7 shape (`LanguageModelUsage` without the provider's raw record):
 * cache reads and writes under `inputTokenDetails`, reasoning under `outputTokenDetails`.
 */
export type Usage = Omit<LanguageModelUsage, 'raw'>;

export type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'tool-approval' | 'error' | 'other';

export interface ApprovalRequest {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/**
 * A compaction that happened: what set it off, the summary that now replaces the older turns, and
 * the transcript's size before and after. On the engine, tokens are estimated from characters at
 * the same CHARS_PER_TOKEN the context budget uses (the provider reports no count for a transcript
 * it has not been sent) and `before`/`after` count messages. An ACP agent that compacts its own
 * context (`trigger: 'agent'`, ACP's compaction_update) says only its summary; the sizes are then
 * absent, except `tokensBefore` when the agent reported its context use (usage_update) first.
 */
export interface CompactionReport {
  trigger: 'threshold' | 'overflow' | 'manual' | 'agent';
  summary: string;
  tokensBefore?: number | undefined;
  tokensAfter?: number | undefined;
  before?: number | undefined;
  after?: number | undefined;
  summarized?: number | undefined;
}

/** A file a tool call changed (fs_write, or a command run by execute): see ToolContext.onFileChange. */
export type { FileChange } from '../tools/tool.ts';

export type HarnessStreamPart =
  | { type: 'start'; sessionId: string; turnId: string; resumed: boolean }
  | { type: 'start-step'; step: number }
  | { type: 'text-delta'; id: string; text: string }
  | { type: 'reasoning-delta'; id: string; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  /** A URL the provider's web search cited (the AI SDK's `source` part). */
  | { type: 'source'; sourceType: 'url'; id: string; url: string; title?: string }
  | { type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; input: unknown; error: string }
  | ({ type: 'tool-approval-request' } & ApprovalRequest)
  /** `input`: the call's arguments, where the harness has them (a reader that never saw the call needs them to show it). */
  | { type: 'tool-output-denied'; toolCallId: string; toolName: string; reason: string | undefined; input?: unknown }
  /** `costUsd`: what the step's model call cost, when the provider states it (OpenRouter, AI Gateway). */
  | { type: 'finish-step'; step: number; finishReason: FinishReason; usage: Usage; costUsd?: number }
  | { type: 'retry'; attempt: number; error: string }
  | ({ type: 'compaction' } & CompactionReport)
  | ({ type: 'file-change'; toolCallId: string; toolName: string } & Pick<FileChange, 'path' | 'kind'>)
  | { type: 'unspoken'; text: string }
  | { type: 'plan'; entries: Array<{ content: string; status: string; priority?: string }> }
  | { type: 'data'; name: string; value: JSONValue }
  | { type: 'finish'; finishReason: FinishReason; totalUsage: Usage }
  | { type: 'abort' }
  | { type: 'error'; error: unknown };

export const emptyUsage = (): Usage => ({
  inputTokens: undefined,
  inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: undefined, cacheWriteTokens: undefined },
  outputTokens: undefined,
  outputTokenDetails: { textTokens: undefined, reasoningTokens: undefined },
  totalTokens: undefined,
});

/** Usage from the SDK's own record: the same fields, the provider's raw record dropped (it is not ours to keep). */
export function usageOf(usage: LanguageModelUsage): Usage {
  const none = emptyUsage();
  return {
    inputTokens: usage.inputTokens,
    inputTokenDetails: { ...none.inputTokenDetails, ...usage.inputTokenDetails },
    outputTokens: usage.outputTokens,
    outputTokenDetails: { ...none.outputTokenDetails, ...usage.outputTokenDetails },
    totalTokens: usage.totalTokens,
  };
}

export function addUsage(a: Usage, b: Usage): Usage {
  const sum = (x: number | undefined, y: number | undefined) =>
    x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0);
  return {
    inputTokens: sum(a.inputTokens, b.inputTokens),
    inputTokenDetails: {
      noCacheTokens: sum(a.inputTokenDetails.noCacheTokens, b.inputTokenDetails.noCacheTokens),
      cacheReadTokens: sum(a.inputTokenDetails.cacheReadTokens, b.inputTokenDetails.cacheReadTokens),
      cacheWriteTokens: sum(a.inputTokenDetails.cacheWriteTokens, b.inputTokenDetails.cacheWriteTokens),
    },
    outputTokens: sum(a.outputTokens, b.outputTokens),
    outputTokenDetails: {
      textTokens: sum(a.outputTokenDetails.textTokens, b.outputTokenDetails.textTokens),
      reasoningTokens: sum(a.outputTokenDetails.reasoningTokens, b.outputTokenDetails.reasoningTokens),
    },
    totalTokens: sum(a.totalTokens, b.totalTokens),
  };
}

/** Where a turn's parts go: the streaming sink, the observer, both, or nowhere. */
export function partSink(hooks: { emit?: ((part: HarnessStreamPart) => void) | undefined; observe?: ((part: HarnessStreamPart) => void) | undefined }): (part: HarnessStreamPart) => void {
  const { emit, observe } = hooks;
  if (emit && observe) return (part) => (emit(part), observe(part));
  return emit ?? observe ?? (() => {});
}
