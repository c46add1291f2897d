import type { SharedV4ProviderOptions } from '@ai-sdk/provider';
import { withUserAgentSuffix } from '@ai-sdk/provider-utils';
import { jsonSchema, type LanguageModelUsage, type ModelMessage, streamText, ToolChoiceViolationError, type ToolSet } from 'ai';
import {
  asLanguageModelUsage,
  convertLanguageModelContent,
  logWarnings,
  parseToolCall,
  prepareLanguageModelCallOptions,
  prepareToolChoice,
  prepareTools,
  resolveLanguageModel,
  toResponseMessages,
} from 'ai/internal';
import aiPackage from 'ai/package.json' with { type: 'json' };
import type { ResolvedModel } from '../model/providers.ts';
import type { ModelParams } from '../model/params.ts';
import type { NormalizedSchema } from '../tools/schema.ts';
import type { HarnessStreamPart, Usage } from './events.ts';
import { ProviderPrompt } from './provider-prompt.ts';

const AI_SDK_VERSION: string = aiPackage.version;

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
  /** The stable transcript, oldest first. */
  messages: readonly ModelMessage[];
  /**
   * The volatile brief (clock, step budget): spliced after every stable message, never persisted.
   * With an explicit-cache provider, the cache breakpoint goes on the message before it.
   */
  brief?: string | undefined;
  /** Remembers the provider-level prompt between the calls of one turn (non-streaming calls). */
  prompt?: ProviderPrompt | undefined;
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

// One breakpoint at the stable/volatile boundary: the last stable message, never the brief.
const CACHE_BREAKPOINT = { anthropic: { cacheControl: { type: 'ephemeral' } } } as const;

function boundaryOptions(request: ModelCallRequest) {
  return request.brief !== undefined && request.model.cacheMode === 'explicit' ? CACHE_BREAKPOINT : undefined;
}

function briefMessages(request: ModelCallRequest): ModelMessage[] {
  return request.brief === undefined ? [] : [{ role: 'user', content: request.brief }];
}

/** The whole prompt as AI SDK messages (the streaming path hands these to streamText). */
function sdkMessages(request: ModelCallRequest): ModelMessage[] {
  const messages = [...request.messages];
  const options = boundaryOptions(request);
  const last = messages.at(-1);
  if (options && last) {
    messages[messages.length - 1] = { ...last, providerOptions: { ...last.providerOptions, ...options } } as ModelMessage;
  }
  return [...messages, ...briefMessages(request)];
}

function streamSettings(request: ModelCallRequest) {
  return {
    model: request.model.model,
    system: request.system,
    messages: sdkMessages(request),
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

/**
 * One non-streaming call, made on the model itself with the AI SDK's own parts (prompt
 * conversion, tool preparation, tool-call parsing, response messages) rather than through
 * `generateText`: that is one step of the SDK's loop, set up anew on every call, and it
 * re-converts the whole history each time. Here the prompt is converted incrementally
 * (ProviderPrompt) and the tools once per tool set.
 */
async function callOnce(request: ModelCallRequest): Promise<ModelCallResult> {
  const started = performance.now();
  const model = resolveLanguageModel(request.model.model);
  const prompt = await (request.prompt ?? new ProviderPrompt()).build({
    model,
    system: request.system,
    messages: request.messages,
    volatile: briefMessages(request),
    boundaryOptions: boundaryOptions(request),
    abortSignal: request.abortSignal,
  });
  const { headers, providerOptions, ...settings } = request.params as {
    headers?: Record<string, string>;
    providerOptions?: SharedV4ProviderOptions;
  };
  const toolChoice = prepareToolChoice({ toolChoice: request.tools ? (request.toolChoice ?? 'auto') : undefined });
  const response = await model.doGenerate({
    ...prepareLanguageModelCallOptions(settings),
    tools: await preparedTools(request.tools),
    toolChoice,
    prompt,
    ...(providerOptions ? { providerOptions } : {}),
    ...(request.abortSignal ? { abortSignal: request.abortSignal } : {}),
    headers: withUserAgentSuffix(headers ?? {}, `ai/${AI_SDK_VERSION}`),
  });
  logWarnings({ warnings: response.warnings ?? [], provider: model.provider, model: model.modelId });

  const calls = await Promise.all(
    response.content
      .filter((part) => part.type === 'tool-call')
      .map((toolCall) =>
        parseToolCall({
          toolCall,
          tools: request.tools,
          repairToolCall: undefined,
          instructions: request.system,
          messages: request.messages as ModelMessage[],
          ...(request.abortSignal ? { abortSignal: request.abortSignal } : {}),
        }),
      ),
  );
  if (toolChoice.type === 'none' && calls.length > 0) {
    throw new ToolChoiceViolationError({
      toolChoice,
      finishReason: response.finishReason.unified,
      provider: model.provider,
      modelId: model.modelId,
      content: response.content,
    } as ConstructorParameters<typeof ToolChoiceViolationError>[0]);
  }
  const content = await convertLanguageModelContent({
    content: response.content,
    toolCalls: calls,
    toolOutputs: [],
    toolApprovalRequests: [],
    toolApprovalResponses: [],
    tools: request.tools,
    ...(request.abortSignal ? { abortSignal: request.abortSignal } : {}),
    generatedFileDataCache: new WeakMap(),
  });
  const reasoning = content.filter((part) => part.type === 'reasoning');
  return {
    text: content.map((part) => (part.type === 'text' ? part.text : '')).join(''),
    reasoning: reasoning.map((part) => part.text).join(''),
    toolCalls: calls.map((call) => toModelToolCall(call as never)),
    finishReason: response.finishReason.unified,
    usage: usageOf(asLanguageModelUsage(response.usage)),
    responseMessages: (await toResponseMessages({ content, tools: request.tools })) as ModelMessage[],
    providerMetadata: response.providerMetadata as Record<string, unknown> | undefined,
    durationMs: performance.now() - started,
  };
}

/** The provider-level tool declarations, prepared once per tool set (they never change). */
const preparedToolSets = new WeakMap<ToolSet, ReturnType<typeof prepareTools>>();
function preparedTools(tools: ToolSet | undefined): ReturnType<typeof prepareTools> {
  if (!tools) return Promise.resolve(undefined);
  let prepared = preparedToolSets.get(tools);
  if (!prepared) preparedToolSets.set(tools, (prepared = prepareTools({ tools })));
  return prepared;
}

async function callStreaming(request: ModelCallRequest, emit: (part: HarnessStreamPart) => void): Promise<ModelCallResult> {
  const started = performance.now();
  let failure: unknown;
  const result = streamText({
    ...streamSettings(request),
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
