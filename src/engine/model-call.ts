import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
  SharedV4ProviderOptions,
  SharedV4Warning,
} from '@ai-sdk/provider';
import { isProviderStreamError } from '@ai-sdk/provider-utils';
import { InvalidResponseDataError, jsonSchema, StreamProviderError, type ModelMessage, ToolChoiceViolationError, type ToolSet, wrapLanguageModel } from 'ai';
import {
  asLanguageModelUsage,
  convertLanguageModelContent,
  logWarnings,
  parseToolCall,
  prepareLanguageModelCallOptions,
  prepareToolChoice,
  prepareTools,
  toResponseMessages,
} from '../model/ai-internals.ts';
import aiPackage from 'ai/package.json' with { type: 'json' };
import type { ResolvedModel } from '../model/providers.ts';
import { cacheAffinity, NO_AFFINITY, withCacheAffinity } from '../model/cache-affinity.ts';
import type { ModelParams } from '../model/params.ts';
import type { NormalizedSchema } from '../tools/schema.ts';
import { type HarnessStreamPart, type Usage, usageOf } from './events.ts';
import { ProviderPrompt } from './provider-prompt.ts';
import { describeImage } from './tool-output.ts';
import type { TurnAttachment } from './turn-types.ts';

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
  /** Images shown with the brief on this call only (TurnHooks.attachments), never persisted. */
  attachments?: readonly TurnAttachment[] | undefined;
  /** Remembers the provider-level prompt between the calls of one turn. */
  prompt?: ProviderPrompt | undefined;
  /** Built once per engine with `toolSet()`: the SDK's view of the tools. */
  tools: ToolSet | undefined;
  toolChoice?: 'auto' | 'none';
  params: ModelParams;
  /** The session the call belongs to: its prompt-cache affinity key where the provider takes one. */
  sessionId?: string | undefined;
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

/** A web source the provider cited (AI SDK `source` part, url kind). */
export interface ModelSource {
  id: string;
  url: string;
  title?: string | undefined;
}

/** A server-side built-in the provider ran inside the call (web search, code execution): never run by acx. */
export interface HostedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** The provider's result, when it reports one (xAI reports only the call for some tools). */
  output?: unknown;
}

export interface ModelCallResult {
  text: string;
  reasoning: string;
  /** The calls acx runs: function tools only, never the provider-executed ones (see `hosted`). */
  toolCalls: ModelToolCall[];
  hosted: HostedCall[];
  /** URL sources the provider cited, in order, without repeats. */
  sources: ModelSource[];
  /** Document sources (OpenAI's container file citations), with the provider's metadata. */
  documents: Array<{ id: string; title: string; filename?: string | undefined; providerMetadata?: Record<string, unknown> | undefined }>;
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
    set[tool.name] = { description: tool.description, inputSchema: jsonSchema(() => tool.schema.jsonSchema as never) };
  }
  return set;
}

// One breakpoint at the stable/volatile boundary: the last stable message, never the brief.
const CACHE_BREAKPOINT = { anthropic: { cacheControl: { type: 'ephemeral' } } } as const;

function boundaryOptions(request: ModelCallRequest) {
  return request.brief !== undefined && request.model.cacheMode === 'explicit' ? CACHE_BREAKPOINT : undefined;
}

function briefMessages(request: ModelCallRequest): ModelMessage[] {
  const images = request.attachments ?? [];
  if (images.length === 0) return request.brief === undefined ? [] : [{ role: 'user', content: request.brief }];
  const vision = request.model.vision;
  const shown = images.map((image) => (vision ? { type: 'file' as const, data: { type: 'data' as const, data: image.data }, mediaType: image.mediaType } : { type: 'text' as const, text: describeImage(image) }));
  return [{ role: 'user', content: [...(request.brief === undefined ? [] : [{ type: 'text' as const, text: request.brief }]), ...shown] }];
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
 * One model call is made on the model itself with the AI SDK's own parts (prompt conversion,
 * tool preparation, tool-call parsing, response messages) rather than through `generateText` or
 * `streamText`: each of those is one step of the SDK's loop, set up anew on every call, and it
 * re-converts the whole history each time. Here the prompt is converted incrementally
 * (ProviderPrompt) and the tools once per tool set; the two kinds of call differ only in
 * whether the model is asked for a stream.
 */
async function callOptions(request: ModelCallRequest, model: LanguageModelV4): Promise<LanguageModelV4CallOptions> {
  const prompt = await (request.prompt ?? new ProviderPrompt()).build({
    model,
    system: request.system,
    messages: request.messages,
    volatile: briefMessages(request),
    boundaryOptions: boundaryOptions(request),
    abortSignal: request.abortSignal,
  });
  const { headers: setHeaders, providerOptions: setProviderOptions, ...settings } = request.params as {
    headers?: Record<string, string>;
    providerOptions?: SharedV4ProviderOptions;
  };
  const { headers, providerOptions } = withCacheAffinity(
    { ...(setHeaders ? { headers: setHeaders } : {}), ...(setProviderOptions ? { providerOptions: setProviderOptions } : {}) },
    request.sessionId === undefined ? NO_AFFINITY : cacheAffinity(request.model.provider, request.sessionId),
  );
  return {
    ...prepareLanguageModelCallOptions(settings),
    tools: await preparedTools(request.tools),
    toolChoice: prepareToolChoice({ toolChoice: request.tools ? (request.toolChoice ?? 'auto') : undefined }),
    prompt,
    ...(providerOptions ? { providerOptions } : {}),
    ...(request.abortSignal ? { abortSignal: request.abortSignal } : {}),
    headers: withAiUserAgent(headers),
  };
}

/**
 * The call's headers with the AI SDK's `ai/<version>` user-agent suffix, as its own loop sends them:
 * names lower-cased, unset values dropped, the suffix after any user-agent the operator set.
 * Written out rather than provider-utils' withUserAgentSuffix, which builds a `Headers`: its first
 * use loads Node's bundled undici (some 15 ms of start-up) on a run that may never fetch (a replay).
 */
function withAiUserAgent(headers: Record<string, string | undefined>): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value != null) named[name.toLowerCase()] = value;
  named['user-agent'] = [named['user-agent'], `ai/${AI_SDK_VERSION}`].filter(Boolean).join(' ');
  return named;
}

/**
 * The model as a LanguageModelV4. One of an older specification (v2, v3: a provider package made
 * for an earlier AI SDK) is wrapped in the SDK's own adapter, which is what wrapLanguageModel does
 * with no middleware. Not the SDK's resolveLanguageModel: it also resolves a model named by a
 * string, through the SDK's gateway provider, and referring to it would load that provider (and
 * its OIDC client) on every start; acx's models are objects.
 */
function languageModelV4(model: LanguageModelV4): LanguageModelV4 {
  const version = (model as { specificationVersion?: unknown }).specificationVersion;
  if (version === 'v4') return model;
  if (version === 'v3' || version === 'v2') return wrapLanguageModel({ model, middleware: [] });
  throw new TypeError(`The model ${String(model.provider)}/${String(model.modelId)} implements specification ${String(version)}; acx calls models of specification v2, v3 or v4 (a provider package made for AI SDK 5 or later).`);
}

async function callOnce(request: ModelCallRequest): Promise<ModelCallResult> {
  const started = performance.now();
  const model = languageModelV4(request.model.model);
  const response = await model.doGenerate(await callOptions(request, model));
  logWarnings({ warnings: response.warnings ?? [], provider: model.provider, model: model.modelId });
  return finishCall(request, model, response, started);
}

/**
 * The finished content of one call, streamed or not, made into what the engine keeps: tool calls
 * parsed against the tool set (an unknown tool or bad JSON becomes an invalid call, not a throw),
 * content converted, response messages built, all by the AI SDK's own parts.
 */
async function finishCall(
  request: ModelCallRequest,
  model: LanguageModelV4,
  response: Pick<CollectedStream, 'content' | 'finishReason' | 'usage' | 'providerMetadata'>,
  started: number,
): Promise<ModelCallResult> {
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
  // A provider-executed call ran on the provider's side: acx records it, never runs it.
  const functionCalls = calls.filter((call) => !(call as { providerExecuted?: boolean }).providerExecuted);
  if (request.tools && request.toolChoice === 'none' && functionCalls.length > 0) {
    throw new ToolChoiceViolationError({
      toolChoice: { type: 'none' },
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
    toolCalls: functionCalls.map((call) => toModelToolCall(call as never)),
    ...hostedActivity(response.content),
    finishReason: response.finishReason.unified,
    usage: usageOf(asLanguageModelUsage(response.usage)),
    responseMessages: (await toResponseMessages({ content, tools: request.tools })) as ModelMessage[],
    providerMetadata: response.providerMetadata as Record<string, unknown> | undefined,
    durationMs: performance.now() - started,
  };
}

/** What the provider's own tools did in the call: their calls and results, and the sources it cited. */
function hostedActivity(content: readonly LanguageModelV4Content[]): Pick<ModelCallResult, 'hosted' | 'sources' | 'documents'> {
  const hosted: HostedCall[] = [];
  const sources: ModelSource[] = [];
  const documents: ModelCallResult['documents'] = [];
  for (const part of content) {
    if (part.type === 'tool-call' && part.providerExecuted) {
      hosted.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: parseJsonText(part.input) });
    } else if (part.type === 'tool-result') {
      const call = hosted.find((entry) => entry.toolCallId === part.toolCallId);
      if (call) call.output = part.result;
      else hosted.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: undefined, output: part.result });
    } else if (part.type === 'source' && part.sourceType === 'url') {
      if (!sources.some((source) => source.url === part.url)) sources.push({ id: part.id, url: part.url, ...(part.title ? { title: part.title } : {}) });
    } else if (part.type === 'source' && part.sourceType === 'document') {
      documents.push({ id: part.id, title: part.title, ...(part.filename ? { filename: part.filename } : {}), ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}) });
    }
  }
  return { hosted, sources, documents };
}

function parseJsonText(text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return text;
  }
}

/** The provider-level tool declarations, prepared once per tool set (they never change). */
const preparedToolSets = new WeakMap<ToolSet, ReturnType<typeof prepareTools>>();
function preparedTools(tools: ToolSet | undefined): ReturnType<typeof prepareTools> {
  if (!tools) return Promise.resolve(undefined);
  let prepared = preparedToolSets.get(tools);
  if (!prepared) preparedToolSets.set(tools, (prepared = prepareWithDeferredSchemas(tools)));
  return prepared;
}

// Stands in for each tool's JSON Schema while the SDK prepares the set (it reads every one).
const SCHEMA_PLACEHOLDER = jsonSchema({});

/**
 * The SDK's preparation of a tool set, with each tool's JSON Schema read when the provider reads
 * it, not before: a provider puts every schema in its request, a replayed call (its cassette
 * matches tools by name) reads none, so a replay never converts the tools' zod schemas.
 */
async function prepareWithDeferredSchemas(tools: ToolSet): ReturnType<typeof prepareTools> {
  const placeheld: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) placeheld[name] = { ...tool, inputSchema: SCHEMA_PLACEHOLDER } as ToolSet[string];
  const prepared = await prepareTools({ tools: placeheld });
  for (const tool of prepared ?? []) {
    if (tool.type !== 'function') continue;
    const schema = (tools[tool.name] as { inputSchema: { jsonSchema: unknown } }).inputSchema;
    let value: unknown;
    Object.defineProperty(tool, 'inputSchema', { enumerable: true, configurable: true, get: () => (value ??= schema.jsonSchema) });
  }
  return prepared;
}

/** A streaming call: the deltas are passed on as they arrive; the rest is the same as callOnce. */
async function callStreaming(request: ModelCallRequest, emit: (part: HarnessStreamPart) => void): Promise<ModelCallResult> {
  const started = performance.now();
  const model = languageModelV4(request.model.model);
  const { stream } = await model.doStream(await callOptions(request, model));
  const collected = await collectStream(stream, emit);
  logWarnings({ warnings: collected.warnings, provider: model.provider, model: model.modelId });
  return finishCall(request, model, collected, started);
}

/** What a model's stream added up to: the content doGenerate would have returned, and the finish. */
interface CollectedStream {
  content: LanguageModelV4Content[];
  finishReason: LanguageModelV4FinishReason;
  usage: LanguageModelV4Usage;
  providerMetadata?: SharedV4ProviderMetadata | undefined;
  warnings: SharedV4Warning[];
}

/**
 * Reads a provider stream to its end: text and reasoning deltas are emitted as they come and
 * accumulated per part (keeping the provider metadata, e.g. reasoning signatures, the last
 * chunk of a part carried); calls, files and sources are kept whole. An in-stream error, or a
 * stream that ends without its finish, is thrown for the engine to classify.
 */
async function collectStream(stream: ReadableStream<LanguageModelV4StreamPart>, emit: (part: HarnessStreamPart) => void): Promise<CollectedStream> {
  const content: LanguageModelV4Content[] = [];
  const open = new Map<string, { type: 'text' | 'reasoning'; text: string; providerMetadata?: SharedV4ProviderMetadata }>();
  let finish: Extract<LanguageModelV4StreamPart, { type: 'finish' }> | undefined;
  let warnings: SharedV4Warning[] = [];
  const track = (type: 'text' | 'reasoning', id: string, providerMetadata: SharedV4ProviderMetadata | undefined, delta = '') => {
    const key = `${type}:${id}`;
    let part = open.get(key);
    if (!part) {
      part = { type, text: '' };
      open.set(key, part);
      content.push(part as LanguageModelV4Content);
    }
    part.text += delta;
    if (providerMetadata !== undefined) part.providerMetadata = providerMetadata;
  };
  for await (const part of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) {
    switch (part.type) {
      case 'stream-start':
        warnings = part.warnings;
        break;
      case 'text-start':
      case 'text-delta':
      case 'text-end':
      case 'reasoning-start':
      case 'reasoning-delta':
      case 'reasoning-end': {
        const [kind, phase] = part.type.split('-') as ['text' | 'reasoning', 'start' | 'delta' | 'end'];
        const delta = part.type === 'text-delta' || part.type === 'reasoning-delta' ? part.delta : '';
        track(kind, part.id, part.providerMetadata, delta);
        if (delta) emit({ type: kind === 'text' ? 'text-delta' : 'reasoning-delta', id: part.id, text: delta });
        if (phase === 'end') open.delete(`${kind}:${part.id}`);
        break;
      }
      case 'finish':
        finish = part;
        break;
      case 'error':
        throw streamError(part.error);
      case 'tool-input-start':
      case 'tool-input-delta':
      case 'tool-input-end':
      case 'response-metadata':
      case 'raw':
      case 'custom': // stream bookkeeping (e.g. Anthropic's message_start), not content a reply returns
        break;
      default:
        // Whole parts: tool calls, provider-executed results, files, sources.
        content.push(part as LanguageModelV4Content);
    }
  }
  if (!finish) {
    throw new InvalidResponseDataError({ data: undefined, message: 'The model stream ended before its finish event: a truncated response.' });
  }
  return { content, finishReason: finish.finishReason, usage: finish.usage, providerMetadata: finish.providerMetadata, warnings };
}

/**
 * An in-stream error as the engine classifies it: the provider's own stream error (its type,
 * code and status) becomes the AI SDK's StreamProviderError; an Error stays as it is; any other
 * payload keeps its message and carries no status, so it is never taken for a transient fault.
 */
function streamError(error: unknown): unknown {
  if (error instanceof Error) return error;
  if (isProviderStreamError(error)) {
    const { message, type, code, statusCode, isRetryable, data } = error;
    return new StreamProviderError({ message, type, code, statusCode, isRetryable, data });
  }
  const payload = error as { message?: unknown; error?: { message?: unknown } } | null;
  const message = payload?.message ?? payload?.error?.message;
  return new StreamProviderError({ message: typeof message === 'string' ? message : `The model stream reported an error: ${JSON.stringify(error)}`, data: error });
}
