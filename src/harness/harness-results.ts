import type { ServerResponse } from 'node:http';
import {
  type AsyncIterableStream,
  createTextStreamResponse,
  createUIMessageStreamResponse,
  type GenerateTextResult,
  type InferUIMessageChunk,
  type OutputInterface,
  pipeTextStreamToResponse,
  pipeUIMessageStreamToResponse,
  type StreamTextResult,
  type ToolSet,
  toUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  type UIMessageStreamOptions,
} from 'ai';
import type { TurnResult } from '../engine/engine.ts';
import type { FinishReason, HarnessStreamPart } from '../engine/events.ts';
import { ReplayStream } from './replay-stream.ts';
import { type SdkPart, type SdkStep, SdkTurn, sdkFinishReason } from './sdk-turn.ts';

/** acx's structured output is one JSON value, not a partial stream: complete, partial and element types are all `unknown`. */
export type HarnessOutput = OutputInterface<unknown, unknown, unknown>;
type Context = Record<string, unknown>;
type ResponseOptions = Omit<Parameters<typeof createUIMessageStreamResponse>[0], 'stream'>;

/** What a turn returns: the AI SDK's GenerateTextResult, plus what acx's durable sessions add. */
export interface HarnessTurnResult extends GenerateTextResult<ToolSet, Context, HarnessOutput> {
  /** acx's own finish reason: as `finishReason`, except a turn paused for approval says `tool-approval` (the AI SDK's `tool-calls`). */
  readonly rawFinishReason: FinishReason;
  readonly sessionId: string;
  readonly turnId: string;
  /** The final text in tool speech mode, where `text` is empty: narration nobody was shown. */
  readonly unspoken: string | undefined;
  /** Model steps this turn took (including those before a resume). `steps` holds the AI SDK step results seen by this call. */
  readonly stepCount: number;
  readonly pendingApprovals: TurnResult['pendingApprovals'];
  readonly pendingToolCalls: TurnResult['pendingToolCalls'];
  readonly resumed: boolean;
  /** Set when the turn is paused: waiting for approvals, host tool results, or after suspendTurn() (`request`). */
  readonly suspendedBy: TurnResult['suspendedBy'];
}

/**
 * A turn's result in both vocabularies. The tool calls and results are the whole turn's (the
 * journal's), as acx always reported them. The AI SDK's step-derived fields (steps, content,
 * response messages, …) are built when first read.
 */
export function turnResultOf(turn: SdkTurn, result: TurnResult): HarnessTurnResult {
  return new TurnResultView(turn, result);
}

class TurnResultView implements HarnessTurnResult {
  readonly text: string;
  readonly output: unknown;
  readonly finishReason: HarnessTurnResult['finishReason'];
  readonly rawFinishReason: FinishReason;
  readonly toolCalls: HarnessTurnResult['toolCalls'];
  readonly staticToolCalls: HarnessTurnResult['staticToolCalls'];
  readonly dynamicToolCalls: HarnessTurnResult['dynamicToolCalls'] = [];
  readonly toolResults: HarnessTurnResult['toolResults'];
  readonly staticToolResults: HarnessTurnResult['staticToolResults'];
  readonly dynamicToolResults: HarnessTurnResult['dynamicToolResults'] = [];
  readonly usage: HarnessTurnResult['usage'];
  readonly totalUsage: HarnessTurnResult['totalUsage'];
  readonly sessionId: string;
  readonly turnId: string;
  readonly unspoken: string | undefined;
  readonly stepCount: number;
  readonly pendingApprovals: TurnResult['pendingApprovals'];
  readonly pendingToolCalls: TurnResult['pendingToolCalls'];
  readonly resumed: boolean;
  readonly suspendedBy: TurnResult['suspendedBy'];
  // The final step's fields, read from it when asked (getters defined below the class).
  declare readonly content: HarnessTurnResult['content'];
  declare readonly reasoningText: HarnessTurnResult['reasoningText'];
  declare readonly files: HarnessTurnResult['files'];
  declare readonly sources: HarnessTurnResult['sources'];
  declare readonly warnings: HarnessTurnResult['warnings'];
  declare readonly request: HarnessTurnResult['request'];
  declare readonly response: HarnessTurnResult['response'];
  declare readonly providerMetadata: HarnessTurnResult['providerMetadata'];
  readonly #turn: SdkTurn;

  constructor(turn: SdkTurn, result: TurnResult) {
    this.#turn = turn;
    const call = (c: { toolCallId: string; toolName: string; input: unknown }) => ({ toolCallId: c.toolCallId, toolName: c.toolName, input: c.input });
    this.text = result.text;
    this.output = result.output;
    this.finishReason = sdkFinishReason(result.finishReason);
    this.rawFinishReason = result.finishReason;
    this.toolCalls = this.staticToolCalls = result.toolCalls.map((c) => ({ type: 'tool-call' as const, ...call(c) }));
    this.toolResults = this.staticToolResults = result.toolResults.map((r) => ({
      type: 'tool-result' as const,
      ...call(r),
      output: r.output,
      ...(r.error !== undefined ? { error: r.error } : {}),
    }));
    this.usage = this.totalUsage = result.usage;
    this.sessionId = result.sessionId;
    this.turnId = result.turnId;
    this.unspoken = result.unspoken;
    this.stepCount = result.steps;
    this.pendingApprovals = result.pendingApprovals;
    this.pendingToolCalls = result.pendingToolCalls;
    this.resumed = result.resumed;
    this.suspendedBy = result.suspendedBy;
  }

  get steps() {
    return [...this.#turn.steps];
  }
  get finalStep() {
    return this.#turn.finalStep;
  }
  get reasoning() {
    // SdkTurn makes only text reasoning parts, never reasoning files.
    return this.finalStep.reasoning as HarnessTurnResult['reasoning'];
  }
  get responseMessages() {
    return this.#turn.responseMessages;
  }
}

for (const key of ['content', 'reasoningText', 'files', 'sources', 'warnings', 'request', 'response', 'providerMetadata'] as const) {
  Object.defineProperty(TurnResultView.prototype, key, {
    get(this: TurnResultView) {
      return this.finalStep[key];
    },
  });
}

/**
 * A streamed turn: usable at once (`agent.stream(...).fullStream`) and awaitable (the AI SDK's
 * Agent returns `PromiseLike<StreamTextResult>`). Awaiting gives the same object without `then`.
 */
export class HarnessStreamResult implements StreamTextResult<ToolSet, Context, HarnessOutput>, PromiseLike<StreamTextResult<ToolSet, Context, HarnessOutput>> {
  /** The whole turn once it settles: the AI SDK result plus acx's session fields. */
  readonly result: Promise<HarnessTurnResult>;
  protected readonly harnessParts = new ReplayStream<HarnessStreamPart>();
  protected readonly sdkParts = new ReplayStream<SdkPart>();
  protected readonly texts = new ReplayStream<string>();
  protected readonly tools: ToolSet;

  /** `start` runs the turn, writing acx parts to the first sink and AI SDK parts to the second. */
  constructor(tools: ToolSet, start: (emit: (part: HarnessStreamPart) => void, emitSdk: (part: SdkPart) => void) => Promise<HarnessTurnResult>) {
    this.tools = tools;
    this.result = start(
      (part) => {
        this.harnessParts.push(part);
        if (part.type === 'text-delta') this.texts.push(part.text);
      },
      (part) => this.sdkParts.push(part),
    );
    this.result.then(
      () => {
        this.harnessParts.end();
        this.sdkParts.end();
        this.texts.end();
      },
      (error: unknown) => {
        this.harnessParts.push({ type: 'error', error });
        this.harnessParts.end();
        this.sdkParts.push({ type: 'error', error });
        this.sdkParts.end();
        this.texts.fail(error);
      },
    );
    // The error also arrives as an `error` part; callers that only iterate must not crash the process.
    this.result.catch(() => {});
  }

  /** acx's own parts of the turn, with what the AI SDK has no part for (retries, compaction, narration, plans, data). */
  get harnessStream(): AsyncIterableStream<HarnessStreamPart> {
    return this.harnessParts.readable();
  }
  get fullStream(): AsyncIterableStream<SdkPart> {
    return this.sdkParts.readable();
  }
  get stream(): AsyncIterableStream<SdkPart> {
    return this.sdkParts.readable();
  }
  get textStream(): AsyncIterableStream<string> {
    return this.texts.readable();
  }
  /** acx streams structured output as one final value, not partial objects: this yields it once. */
  get partialOutputStream(): AsyncIterableStream<unknown> {
    return this.once((r) => r.output);
  }
  get experimental_partialOutputStream(): AsyncIterableStream<unknown> {
    return this.partialOutputStream;
  }
  get elementStream(): AsyncIterableStream<unknown> {
    return this.once((r) => r.output);
  }

  private field<K extends keyof HarnessTurnResult>(key: K): Promise<HarnessTurnResult[K]> {
    return this.result.then((r) => r[key]);
  }
  get text() { return this.field('text'); }
  get content() { return this.field('content'); }
  get reasoning() { return this.field('reasoning'); }
  get reasoningText() { return this.field('reasoningText'); }
  get files() { return this.field('files'); }
  get sources() { return this.field('sources'); }
  get toolCalls() { return this.field('toolCalls'); }
  get staticToolCalls() { return this.field('staticToolCalls'); }
  get dynamicToolCalls() { return this.field('dynamicToolCalls'); }
  get toolResults() { return this.field('toolResults'); }
  get staticToolResults() { return this.field('staticToolResults'); }
  get dynamicToolResults() { return this.field('dynamicToolResults'); }
  get finishReason() { return this.field('finishReason'); }
  get rawFinishReason() { return this.field('rawFinishReason'); }
  get usage() { return this.field('usage'); }
  get totalUsage() { return this.field('totalUsage'); }
  get warnings() { return this.field('warnings'); }
  get steps(): Promise<SdkStep[]> { return this.field('steps'); }
  get finalStep() { return this.field('finalStep'); }
  get request() { return this.field('request'); }
  get response() { return this.field('response'); }
  get responseMessages() { return this.field('responseMessages'); }
  get providerMetadata() { return this.field('providerMetadata'); }
  get output() { return this.field('output'); }

  async consumeStream(options?: { onError?: (error: unknown) => void }): Promise<void> {
    try {
      await this.result;
    } catch (error) {
      options?.onError?.(error);
    }
  }

  toUIMessageStream<UI_MESSAGE extends UIMessage>(options?: UIMessageStreamOptions<UI_MESSAGE>): AsyncIterableStream<InferUIMessageChunk<UI_MESSAGE>> {
    return toUIMessageStream<ToolSet, UI_MESSAGE>({ ...options, stream: this.stream, tools: this.tools }) as AsyncIterableStream<InferUIMessageChunk<UI_MESSAGE>>;
  }
  toUIMessageStreamResponse<UI_MESSAGE extends UIMessage>(options?: ResponseOptions & UIMessageStreamOptions<UI_MESSAGE>): Response {
    const { status, statusText, headers, keepAliveMs, consumeSseStream, ...rest } = options ?? {};
    return createUIMessageStreamResponse({ status, statusText, headers, keepAliveMs, consumeSseStream, stream: this.toUIMessageStream<UI_MESSAGE>(rest) as ReadableStream<UIMessageChunk> });
  }
  pipeUIMessageStreamToResponse<UI_MESSAGE extends UIMessage>(response: ServerResponse, options?: ResponseOptions & UIMessageStreamOptions<UI_MESSAGE>): Promise<void> {
    const { status, statusText, headers, keepAliveMs, consumeSseStream, ...rest } = options ?? {};
    return pipeUIMessageStreamToResponse({ response, status, statusText, headers, keepAliveMs, consumeSseStream, stream: this.toUIMessageStream<UI_MESSAGE>(rest) as ReadableStream<UIMessageChunk> });
  }
  toTextStreamResponse(init?: ResponseInit): Response {
    return createTextStreamResponse({ ...init, stream: this.textStream });
  }
  pipeTextStreamToResponse(response: ServerResponse, init?: ResponseInit): Promise<void> {
    return pipeTextStreamToResponse({ response, ...init, stream: this.textStream });
  }

  then<A = StreamTextResult<ToolSet, Context, HarnessOutput>, B = never>(
    onfulfilled?: ((value: StreamTextResult<ToolSet, Context, HarnessOutput>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    // Resolving with `this` would loop (it is thenable): resolve with a view whose `then` is gone.
    const settled = Object.create(this, { then: { value: undefined } }) as StreamTextResult<ToolSet, Context, HarnessOutput>;
    return Promise.resolve(settled).then(onfulfilled, onrejected);
  }

  private once(pick: (r: HarnessTurnResult) => unknown): AsyncIterableStream<unknown> {
    const stream = new ReplayStream<unknown>();
    this.result.then(
      (r) => {
        if (pick(r) !== undefined) stream.push(pick(r));
        stream.end();
      },
      () => stream.end(),
    );
    return stream.readable();
  }
}
