import type { ModelMessage, UIMessage } from 'ai';

/**
 * A session's history as the AI SDK's UI messages, for the page a `useChat({ messages })` loads
 * after a reload: the harness keeps the history, so an app needs no store of its own.
 *
 * Each turn is a user message and one assistant message whose steps are separated by
 * `step-start` parts, as the live stream built them. A tool call is a `tool-NAME` part (a
 * harness built-in: `dynamic-tool`) in the state its journal shows: `approval-requested` while
 * it waits, then `output-available`, `output-error` or `output-denied` (a denial or a call never
 * run), with its `approval` when one was asked. What the harness wrote for itself (nudges, repair
 * notes) is left out, and so is what a compaction summarised away: those turns are gone from the
 * history, and its summary is the model's, not the chat's.
 */

/** The history a harness keeps for a session, as uiMessagesOf reads it. */
export interface SessionHistory {
  /** The transcript, oldest first; `kind` says who wrote it (`note` and `summary`: the harness). */
  messages: ReadonlyArray<{ turnId: string | null; kind: 'user' | 'assistant' | 'tool' | 'summary' | 'note'; message: ModelMessage }>;
  /** What the ledger knows of calls (a call is its turn, step and id): approval decisions, and the open step's states and results. */
  calls: ReadonlyArray<{ turnId: string; step: number; callId: string; status: string; approval: { approved: boolean; reason?: string } | null; result: unknown }>;
}

type Part = UIMessage['parts'][number];
type ToolPart = Extract<Part, { toolCallId: string }>;
type Output = { type: string; value?: unknown; reason?: string };

/**
 * `streaming`: the turn whose reply is streaming now (its stream is open). Its reply is left out:
 * the page gets it whole by resuming the stream (resumeUIStreamResponse), which replays it from
 * its start; the part of it already journaled would otherwise show twice.
 */
export function uiMessagesOf(history: SessionHistory, staticTools: ReadonlySet<string>, streaming?: string): UIMessage[] {
  const key = (turnId: string | null, step: number, callId: string) => `${turnId}/${step}/${callId}`;
  const ledger = new Map(history.calls.map((call) => [key(call.turnId, call.step, call.callId), call]));
  const messages: UIMessage[] = [];
  let assistant: UIMessage | undefined;
  let step = 0;
  const tools = new Map<string, ToolPart>();
  for (const { turnId, kind, message } of history.messages) {
    if (kind === 'note' || kind === 'summary') continue;
    if (streaming !== undefined && turnId === streaming && kind !== 'user') continue;
    const id = turnId ?? String(messages.length);
    if (kind === 'user') {
      messages.push({ id: `${id}-user`, role: 'user', parts: userParts(message) });
      assistant = undefined;
      continue;
    }
    if (!assistant) {
      assistant = { id: `${id}-assistant`, role: 'assistant', parts: [] };
      messages.push(assistant);
      tools.clear();
      step = 0;
    }
    if (kind === 'assistant') {
      step += 1;
      assistant.parts.push({ type: 'step-start' });
      for (const part of contentOf(message)) {
        if (part.type === 'text' && part.text) assistant.parts.push({ type: 'text', text: part.text, state: 'done' });
        else if (part.type === 'reasoning' && part.text) assistant.parts.push({ type: 'reasoning', text: part.text, state: 'done' });
        else if (part.type === 'tool-call') {
          const tool = callPart(part, staticTools, ledger.get(key(turnId, step, part.toolCallId)));
          tools.set(part.toolCallId, tool);
          assistant.parts.push(tool);
        } else if (part.type === 'tool-result') answer(tools.get(part.toolCallId), part.output as Output);
      }
    } else if (kind === 'tool') {
      for (const part of contentOf(message)) if (part.type === 'tool-result') answer(tools.get(part.toolCallId), part.output as Output);
    }
  }
  return messages;
}

function contentOf(message: ModelMessage): Array<Record<string, any> & { type: string }> {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as Array<Record<string, any> & { type: string }>);
}

function userParts(message: ModelMessage): Part[] {
  const parts: Part[] = [];
  for (const part of contentOf(message)) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text as string });
    else if (part.type === 'image' || part.type === 'file') {
      const data = part.type === 'image' ? part.image : part.data;
      const mediaType = (part.mediaType as string | undefined) ?? (part.type === 'image' ? 'image/*' : 'application/octet-stream');
      const url = data instanceof URL ? data.href : typeof data === 'string' ? (/^(https?|data):/.test(data) ? data : `data:${mediaType};base64,${data}`) : undefined;
      if (url) parts.push({ type: 'file', mediaType, url, ...(part.filename ? { filename: part.filename as string } : {}) });
    }
  }
  return parts;
}

/** A tool call as its part: waiting for approval, approved and not yet run, or run with its result not yet settled (the open step). */
function callPart(call: Record<string, any>, staticTools: ReadonlySet<string>, recorded: SessionHistory['calls'][number] | undefined): ToolPart {
  const toolCallId = call.toolCallId as string;
  const name = call.toolName as string;
  const base = staticTools.has(name)
    ? { type: `tool-${name}` as const, toolCallId, input: call.input }
    : { type: 'dynamic-tool' as const, toolName: name, toolCallId, input: call.input };
  const extra = call.providerExecuted ? { providerExecuted: true } : {};
  let part = { ...base, ...extra, state: 'input-available' } as ToolPart;
  if (recorded?.status === 'awaiting-approval') part = { ...base, ...extra, state: 'approval-requested', approval: { id: toolCallId } } as ToolPart;
  else if (recorded?.approval) part = { ...base, ...extra, state: 'approval-responded', approval: { id: toolCallId, ...recorded.approval } } as ToolPart;
  if (recorded?.status === 'done' && recorded.result) answer(part, recorded.result as Output);
  return part;
}

/** Puts a call's result on its part: output, error or denial; the approval, if one was given, stays. */
function answer(part: ToolPart | undefined, output: Output): void {
  if (!part) return;
  const target = part as Record<string, unknown>;
  const approval = target.approval as { id: string; approved?: boolean; reason?: string } | undefined;
  delete target.output;
  delete target.errorText;
  switch (output.type) {
    case 'execution-denied':
      target.state = 'output-denied';
      target.approval = { id: approval?.id ?? part.toolCallId, approved: false, ...(output.reason ? { reason: output.reason } : {}) };
      return;
    case 'error-text':
    case 'error-json':
      target.state = 'output-error';
      target.errorText = typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
      if (approval && approval.approved !== true) delete target.approval;
      return;
    default:
      target.state = 'output-available';
      target.output = output.value;
      if (approval && approval.approved !== true) delete target.approval;
  }
}
