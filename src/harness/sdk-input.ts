import type { ModelMessage, UserContent } from 'ai';
import type { ApprovalDecision } from '../engine/engine.ts';
import { AcxError } from '../core/errors.ts';

/**
 * What a call brings, read from either acx's own `{ prompt }` (text or user content) or the AI
 * SDK's `{ prompt | messages }` (the whole chat as model messages, as createAgentUIStream sends
 * it). A harness keeps the session's history itself, so only the newest input counts: the last
 * user message starts a turn; approval answers after it (a `tool` message of
 * `tool-approval-response` parts) continue the turn that asked.
 */
export type CallInput =
  | { kind: 'message'; prompt: string | UserContent }
  /** `shownCalls`: the tool calls of the chat's message being continued (after its last user message), which the reader has. */
  | { kind: 'approvals'; approvals: ApprovalDecision[]; shownCalls: string[] };

export function isModelMessages(value: unknown): value is ModelMessage[] {
  return Array.isArray(value) && value.length > 0 && value.every((m) => typeof m === 'object' && m !== null && 'role' in m);
}

export function readCallInput(options: { prompt?: string | UserContent | ModelMessage[]; messages?: ModelMessage[] }): CallInput {
  if (options.prompt !== undefined && options.messages !== undefined) {
    throw new AcxError('usage', 'Both `prompt` and `messages` were given.', { hint: 'Give one of them.' });
  }
  const given = options.messages ?? options.prompt;
  if (given === undefined) {
    throw new AcxError('usage', 'No prompt was given.', { hint: 'Pass { prompt: "…" } (or the AI SDK { messages }).' });
  }
  if (!isModelMessages(given)) return { kind: 'message', prompt: given as string | UserContent };

  const lastUser = given.findLastIndex((m) => m.role === 'user');
  const answer = given.slice(lastUser + 1);
  const approvals = answer
    .flatMap((m) => (m.role === 'tool' ? m.content : []))
    .filter((part) => part.type === 'tool-approval-response')
    .map((part) => ({ approvalId: part.approvalId, approved: part.approved, ...(part.reason !== undefined ? { reason: part.reason } : {}) }));
  if (approvals.length > 0) {
    const shownCalls = answer.flatMap((m) => (m.role === 'assistant' && Array.isArray(m.content) ? m.content : [])).flatMap((part) => (part.type === 'tool-call' ? [part.toolCallId] : []));
    return { kind: 'approvals', approvals, shownCalls };
  }
  const user = given[lastUser];
  if (!user || user.role !== 'user') {
    throw new AcxError('usage', 'The messages hold no user message and no approval answers.', {
      hint: 'End the chat with the user message to answer, or with the tool-approval-response parts of the turn that asked.',
    });
  }
  return { kind: 'message', prompt: user.content };
}
