// The seam between the server core and each provider's wire format.
import type { RequestView, ScriptedHosted, ViewMessage, Wire } from './types.ts';

/** A scripted response after defaults are applied and ids assigned. */
export interface PlannedResponse {
  /** Unique per server; adapters derive item/message ids from it. */
  serial: number;
  model: string;
  /** Unix seconds. */
  created: number;
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; input: unknown; arguments: string }>;
  usage: {
    inputTokens: number;
    outputTokens: number;
    cachedInputTokens: number;
    cacheWriteInputTokens: number;
    reasoningTokens: number;
    cost: number | undefined;
  };
  finishReason: 'stop' | 'tool-calls' | 'length';
  hosted: ScriptedHosted | undefined;
  routing: Array<{ provider: string; selected?: boolean }> | undefined;
  provider: string | undefined;
}

export interface PlannedFailure {
  status: number;
  /** undefined: the adapter picks a provider-like message. */
  message: string | undefined;
  type: string | undefined;
  code: string | undefined;
  headers: Record<string, string>;
  contextOverflow: boolean;
}

export interface SseEvent {
  /** SSE `event:` name, when the provider sends one. */
  event?: string;
  /** JSON-serialized unless a string (e.g. '[DONE]'). */
  data: unknown;
  /** True for the first event that carries generated content (text, reasoning or tool input). */
  firstContent?: boolean;
}

export interface WireAdapter {
  wire: Wire;
  /** Prefix for generated tool-call ids, e.g. 'call_' or 'toolu_'. */
  toolCallIdPrefix: string;
  /** Extra headers on every reply, e.g. a request id. */
  headers(r: { serial: number }): Record<string, string>;
  view(body: any, model: string): RequestView;
  json(r: PlannedResponse, request: { body: any; headers?: Record<string, string> }): unknown;
  events(r: PlannedResponse, request: { body: any; headers?: Record<string, string> }): SseEvent[];
  errorBody(f: PlannedFailure): unknown;
  /** The provider's in-stream error event. */
  streamError(f: PlannedFailure): SseEvent;
  /** A rule of the real API the request breaks (answered 400 with this message); undefined when it keeps them all. */
  refuse?(body: any): string | undefined;
}

/** Splits text into word-sized deltas so streams look like real token streams. */
export function textDeltas(text: string): string[] {
  if (text === '') return [];
  const parts = text.split(/(?<=\s)/);
  // Merge into at most ~8 deltas: enough to exercise accumulation, small for long texts.
  const size = Math.ceil(parts.length / 8);
  const out: string[] = [];
  for (let i = 0; i < parts.length; i += size) out.push(parts.slice(i, i + size).join(''));
  return out;
}

/** Splits serialized JSON arguments into two deltas (exercises client-side accumulation). */
export function argumentDeltas(args: string): string[] {
  if (args.length < 2) return [args];
  const mid = Math.floor(args.length / 2);
  return [args.slice(0, mid), args.slice(mid)];
}

/** Text of a content value: a string, or an array of parts with a `text` field. */
export function textOf(content: unknown, skip?: (part: any) => boolean): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p != null && typeof p === 'object' && typeof p.text === 'string' && !(skip?.(p) ?? false))
    .map((p) => p.text as string)
    .join('\n');
}

export function parseArgs(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

export function stringOutput(output: unknown): string {
  return typeof output === 'string' ? output : JSON.stringify(output);
}

/** Appends a tool call to the trailing assistant message, opening one if needed. */
export function pushToolCall(messages: ViewMessage[], call: { id: string; name: string; input: unknown }): void {
  let last = messages[messages.length - 1];
  if (last?.role !== 'assistant') {
    last = { role: 'assistant', text: '' };
    messages.push(last);
  }
  (last.toolCalls ??= []).push(call);
}

/** Appends a tool result to the trailing tool message, opening one if needed. */
export function pushToolResult(
  messages: ViewMessage[],
  result: { callId: string; output: string; isError?: boolean },
): void {
  let last = messages[messages.length - 1];
  if (last?.role !== 'tool') {
    last = { role: 'tool', text: '' };
    messages.push(last);
  }
  (last.toolResults ??= []).push(result);
}
