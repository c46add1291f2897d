import { generateText, jsonSchema, type LanguageModelUsage, type ModelMessage, streamText, type ToolSet } from 'ai';
import type { ResolvedModel } from '../model/providers.ts';
import type { ModelParams } from '../model/params.ts';
import type { NormalizedSchema } from '../tools/schema.ts';
import type { HarnessStreamPart, Usage } from './events.ts';

/**
 * One model call: exactly one step, tools declared but never executed by the SDK (the engine
 * runs them), no SDK retries (the engine classifies faults and retries itself).
 */
export interface ModelTool {
  name: string;
  description: string;
  schema: NormalizedSchema;
}

export interface ModelCallRequest {
  model: ResolvedModel;
  system: string;
  messages: ModelMessage[];
  /** Built once per engine with `toolSet()`: the SDK's view of the tools. */
  tools: ToolSet | undefined;
  toolChoice?: 'auto' | 'none';
  params: ModelParams;
  abortSignal?: AbortSignal | undefined;
  /** Set when someone consumes deltas (stream()); otherwise the cheaper non-streaming call is used. */
  emit?: ((part: HarnessStreamPart) => void) | undefined;
}

export interface ModelToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** Set when the SDK could not parse the call (unknown tool, malformed JSON). */
  invalidReason?: string;
}

export interface ModelCallResult {
  text: string;
  reasoning: string;
  toolCalls: ModelToolCall[];
  finishReason: string;
  usage: Usage;
  /** The assistant message(s) as the SDK shapes them, ready to persist. */
  responseMessages: ModelMessage[];
  providerMetadata: Record<string, unknown> | undefined;
  durationMs: number;
}

export function toolSet(tools: readonly ModelTool[]): ToolSet | undefined {
  if (tools.length === 0) return undefined;
  const set: ToolSet = {};
  for (const tool of tools) {
    set[tool.name] = { description: tool.description, inputSchema: jsonSchema(tool.schema.jsonSchema as never) };
  }
  return set;
}

function settings(request: ModelCallRequest) {
  return {
    model: request.model.model,
    system: request.system,
    messages: request.messages,
    ...(request.tools ? { tools: request.tools, toolChoice: request.toolChoice ?? 'auto' } : {}),
    ...(request.params as object),
    maxRetries: 0,
    ...(request.abortSignal ? { abortSignal: request.abortSignal } : {}),
  } as const;
}

function usageOf(usage: LanguageModelUsage): Usage {
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    totalTokens: usage.totalTokens,
    cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens,
  };
}

function toModelToolCall(call: { toolCallId: string; toolName: string; input: unknown; invalid?: boolean; error?: unknown }): ModelToolCall {
  return {
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    input: call.input,
    ...(call.invalid ? { invalidReason: String((call.error as Error)?.message ?? call.error ?? 'invalid call') } : {}),
  };
}

export async function callModel(request: ModelCallRequest): Promise<ModelCallResult> {
  return request.emit ? callStreaming(request, request.emit) : callOnce(request);
}

/** One non-streaming call: no delta consumer, so no stream pipeline to pay for. */
async function callOnce(request: ModelCallRequest): Promise<ModelCallResult> {
  const started = performance.now();
  const result = await generateText(settings(request));
  return {
    text: result.text,
    reasoning: result.reasoningText ?? '',
    toolCalls: result.toolCalls.map((call) => toModelToolCall(call as never)),
    finishReason: result.finishReason,
    usage: usageOf(result.usage),
    responseMessages: result.response.messages as ModelMessage[],
    providerMetadata: result.providerMetadata as Record<string, unknown> | undefined,
    durationMs: performance.now() - started,
  };
}

async function callStreaming(request: ModelCallRequest, emit: (part: HarnessStreamPart) => void): Promise<ModelCallResult> {
  const started = performance.now();
  let failure: unknown;
  const result = streamText({
    ...settings(request),
    onError: ({ error }) => {
      failure ??= error;
    },
  });

  let text = '';
  let reasoning = '';
  const toolCalls: ModelToolCall[] = [];
  let finishReason = 'other';
  let usage: Usage = { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined, cachedInputTokens: undefined };
  let providerMetadata: Record<string, unknown> | undefined;
  for await (const part of result.fullStream) {
    switch (part.type) {
      case 'text-delta':
        text += part.text;
        emit({ type: 'text-delta', id: part.id, text: part.text });
        break;
      case 'reasoning-delta':
        reasoning += part.text;
        emit({ type: 'reasoning-delta', id: part.id, text: part.text });
        break;
      case 'tool-call':
        toolCalls.push(toModelToolCall(part as never));
        break;
      case 'finish-step':
        finishReason = part.finishReason;
        providerMetadata = part.providerMetadata as Record<string, unknown> | undefined;
        usage = usageOf(part.usage);
        break;
      case 'error':
        failure ??= part.error;
        break;
      case 'abort':
        failure ??= Object.assign(new Error('The model call was aborted.'), { name: 'AbortError' });
        break;
      default:
        break;
    }
  }
  if (failure) throw failure;
  const response = await result.response;
  return {
    text,
    reasoning,
    toolCalls,
    finishReason,
    usage,
    responseMessages: response.messages as ModelMessage[],
    providerMetadata,
    durationMs: performance.now() - started,
  };
}
