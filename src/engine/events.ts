import type { JSONValue } from '@ai-sdk/provider';

/**
 * The parts a turn streams, shaped like the AI SDK's `fullStream` parts so acx fits where an
 * AI SDK Agent fits, plus a few acx parts (compaction, unspoken narration, retries).
 */
export interface Usage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  totalTokens: number | undefined;
  cachedInputTokens: number | undefined;
}

export type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'tool-approval' | 'error' | 'other';

export interface ApprovalRequest {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export type HarnessStreamPart =
  | { type: 'start'; sessionId: string; turnId: string; resumed: boolean }
  | { type: 'start-step'; step: number }
  | { type: 'text-delta'; id: string; text: string }
  | { type: 'reasoning-delta'; id: string; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; input: unknown; error: string }
  | ({ type: 'tool-approval-request' } & ApprovalRequest)
  | { type: 'tool-output-denied'; toolCallId: string; toolName: string; reason: string | undefined }
  | { type: 'finish-step'; step: number; finishReason: FinishReason; usage: Usage }
  | { type: 'retry'; attempt: number; error: string }
  | { type: 'compaction'; before: number; after: number; summarized: number }
  | { type: 'unspoken'; text: string }
  | { type: 'plan'; entries: Array<{ content: string; status: string; priority?: string }> }
  | { type: 'data'; name: string; value: JSONValue }
  | { type: 'finish'; finishReason: FinishReason; totalUsage: Usage }
  | { type: 'abort' }
  | { type: 'error'; error: unknown };

export const emptyUsage = (): Usage => ({
  inputTokens: undefined,
  outputTokens: undefined,
  totalTokens: undefined,
  cachedInputTokens: undefined,
});

export function addUsage(a: Usage, b: Usage): Usage {
  const sum = (x: number | undefined, y: number | undefined) =>
    x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0);
  return {
    inputTokens: sum(a.inputTokens, b.inputTokens),
    outputTokens: sum(a.outputTokens, b.outputTokens),
    totalTokens: sum(a.totalTokens, b.totalTokens),
    cachedInputTokens: sum(a.cachedInputTokens, b.cachedInputTokens),
  };
}
