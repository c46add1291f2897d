import { randomUUID } from 'node:crypto';
import type {
  ContentPart,
  FinishReason as SdkFinishReason,
  GenerateTextEndEvent,
  StepResult,
  TextStreamPart,
  ToolSet,
  TypedToolCall,
} from 'ai';
import type { FinishReason, HarnessStreamPart, Usage } from '../engine/events.ts';
import { emptyUsage } from '../engine/events.ts';

/**
 * The AI SDK's view of one harness turn. It reads the turn's acx stream parts as they come and
 * gives back what an AI SDK `Agent` promises: `TextStreamPart`s (text-start/-end around text,
 * a tool call inside each approval request), a `StepResult` per step and the end event.
 * acx-only parts (retry, compaction, unspoken narration, plan, data) have no AI SDK part; they
 * stay in the harness stream.
 *
 * Invariant: a part about a tool call (its result, error, approval request or denial) reaches the
 * reader only for a call the reader has: one this stream showed, or one the reader was handed
 * before it (`readerHas`). A turn taken up again (a crash, a new message after an interrupted
 * turn) may answer a call the reader never saw; its tool-call goes first. The AI SDK's UI message
 * reader fails the whole stream on a tool part it cannot place, so this is what keeps the stream
 * readable, in the browser and on a server that follows it (onFinish).
 */
export type SdkPart = TextStreamPart<ToolSet>;
export type SdkStep = StepResult<ToolSet>;
export type SdkEndEvent = GenerateTextEndEvent<ToolSet>;
type ResponseMessage = SdkEndEvent['responseMessages'][number];

export interface SdkTurnOptions {
  /** The agent's tools by name: a call to one of them is static, to anything else (a harness built-in) dynamic. */
  toolNames: ReadonlySet<string>;
  model: { provider: string; modelId: string };
  onPart?: (part: SdkPart) => void;
  onStepFinish?: ((step: SdkStep) => PromiseLike<void> | void) | undefined;
}

/** acx pauses for approval with its own finish reason; the AI SDK calls that step `tool-calls`, keeping acx's as the raw reason. */
export function sdkFinishReason(reason: FinishReason): SdkFinishReason {
  return reason === 'tool-approval' ? 'tool-calls' : reason;
}

type Content = ContentPart<ToolSet>;

/** What a finished step leaves behind; its StepResult is built from this only when someone reads it. */
interface StepRecord {
  content: Content[];
  reason: FinishReason;
  usage: Usage;
  elapsedMs: number;
}

export class SdkTurn {
  private readonly records: StepRecord[] = [];
  private readonly built: SdkStep[] = [];
  private readonly messages: ResponseMessage[] = [];
  /** messages.length after each step whose messages are in `messages`. */
  private readonly messageEnds: number[] = [];
  private readonly callId = randomUUID();
  private content: Content[] = [];
  /** Calls whose tool-call this stream showed. */
  private readonly shown = new Set<string>();
  /** Calls the reader had before this stream: 'all' when the caller cannot tell (no check then). */
  private readerCalls: ReadonlySet<string> | 'all' = new Set();
  private open: { type: 'text' | 'reasoning'; id: string } | undefined;
  private stepStartedAt = Date.now();
  private stepOpen = false;
  private started = false;
  /** Callbacks may be async; the turn's result waits for them, as the AI SDK's does. */
  private readonly callbacks: Array<PromiseLike<void> | void> = [];
  private readonly options: SdkTurnOptions;

  constructor(options: SdkTurnOptions) {
    this.options = options;
  }

  push(part: HarnessStreamPart): void {
    switch (part.type) {
      case 'start':
        return this.start();
      case 'start-step':
        return this.startStep();
      case 'text-delta':
      case 'reasoning-delta':
        return this.delta(part.type === 'text-delta' ? 'text' : 'reasoning', part.id, part.text);
      case 'tool-call':
        this.shown.add(part.toolCallId);
        return this.add({ type: 'tool-call', ...this.call(part) });
      case 'source':
        // A URL a server-side web search cited: the AI SDK's source part, in the step's sources.
        return this.add({ type: 'source', sourceType: 'url', id: part.id, url: part.url, ...(part.title ? { title: part.title } : {}) } as Content);
      case 'tool-result':
        this.showCall(part);
        return this.add({ type: 'tool-result', ...this.call(part), output: part.output } as Content);
      case 'tool-error':
        this.showCall(part);
        return this.add({ type: 'tool-error', ...this.call(part), error: part.error } as Content);
      case 'tool-approval-request':
        this.showCall(part);
        return this.add({ type: 'tool-approval-request', approvalId: part.approvalId, toolCall: { type: 'tool-call', ...this.call(part) } as TypedToolCall<ToolSet> });
      case 'tool-output-denied':
        // A denial of a call the reader does not have, and whose input is unknown here, is not shown.
        if (!this.showCall(part)) return;
        this.ensureStep();
        return this.emit({ type: 'tool-output-denied', toolCallId: part.toolCallId, toolName: part.toolName } as SdkPart);
      case 'finish-step':
        return this.finishStep(part.finishReason, part.usage);
      case 'finish':
        this.closeOpen();
        return this.emit({ type: 'finish', finishReason: sdkFinishReason(part.finishReason), rawFinishReason: part.finishReason, totalUsage: part.totalUsage });
      case 'abort':
        return this.emit({ type: 'abort' });
      case 'error':
        return this.emit({ type: 'error', error: part.error });
      default:
        return; // acx-only parts
    }
  }

  /**
   * The open step starts over (a model call repeated after a crash cut it short): what it held is
   * dropped without closing anything, and its parts from here on are the step's. Showing the
   * reader the same is the caller's (the UI's `reset-step`).
   */
  restartStep(): void {
    this.open = undefined;
    this.content = [];
    this.stepStartedAt = Date.now();
  }

  /** The calls the reader already has from before this stream (see the invariant above); 'all' turns the check off. */
  readerHas(calls: Iterable<string> | 'all'): void {
    this.readerCalls = calls === 'all' ? 'all' : new Set(calls);
  }

  /** Makes sure the reader has the call a part is about: shows its tool-call first when not. False when it cannot. */
  private showCall(part: { toolCallId: string; toolName: string; input?: unknown }): boolean {
    const id = part.toolCallId;
    if (this.readerCalls === 'all' || this.shown.has(id) || this.readerCalls.has(id)) return true;
    if (part.input === undefined) return false;
    this.shown.add(id);
    this.add({ type: 'tool-call', ...this.call(part as { toolCallId: string; toolName: string; input: unknown }) });
    return true;
  }

  /**
   * The StepResults so far. Built when first read, not per step: a generate() whose caller
   * never looks at steps (most) pays only for recording them.
   */
  get steps(): SdkStep[] {
    while (this.built.length < this.records.length) this.built.push(this.stepResult(this.built.length));
    return this.built;
  }

  /** The response messages of every finished step, as the AI SDK records them. */
  get responseMessages(): ResponseMessage[] {
    return this.messagesUpTo(this.records.length);
  }

  /** The end event (`onFinish` / `onEnd`): the final step's fields, every step, the total usage. */
  endEvent(totalUsage: Usage): SdkEndEvent {
    const steps = this.steps;
    const finalStep = steps.at(-1) ?? this.emptyStep();
    return { ...finalStep, totalUsage, usage: totalUsage, responseMessages: [...this.responseMessages], steps: [...steps], finalStep };
  }

  /** The last step, or an empty one for a turn that took none (a recorded answer returned again). */
  get finalStep(): SdkStep {
    return this.steps.at(-1) ?? this.emptyStep();
  }

  private emptyStep(): SdkStep {
    this.records.push({ content: [], reason: 'stop', usage: emptyUsage(), elapsedMs: 1 });
    const step = this.stepResult(this.records.length - 1);
    this.records.pop();
    return step;
  }

  private messagesUpTo(steps: number): ResponseMessage[] {
    while (this.messageEnds.length < steps) {
      this.messages.push(...messagesOf(this.records[this.messageEnds.length]!.content));
      this.messageEnds.push(this.messages.length);
    }
    return this.messages.slice(0, steps === 0 ? 0 : this.messageEnds[steps - 1]);
  }

  /** Waits for the step callbacks started so far. */
  async settled(): Promise<void> {
    await Promise.all(this.callbacks);
  }

  private call(part: { toolCallId: string; toolName: string; input: unknown }) {
    const known = this.options.toolNames.has(part.toolName);
    return { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input, ...(known ? {} : { dynamic: true as const }) };
  }

  private emit(part: SdkPart): void {
    this.options.onPart?.(part);
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.emit({ type: 'start' });
  }

  private startStep(): void {
    this.start();
    this.closeOpen();
    this.stepOpen = true;
    this.stepStartedAt = Date.now();
    this.content = [];
    this.emit({ type: 'start-step', request: {}, warnings: [] });
  }

  /** A resumed turn may send content before any start-step: it opens one. */
  private ensureStep(): void {
    if (!this.stepOpen) this.startStep();
  }

  private delta(type: 'text' | 'reasoning', id: string, text: string): void {
    this.ensureStep();
    if (this.open?.type !== type || this.open.id !== id) {
      this.closeOpen();
      this.open = { type, id };
      this.emit({ type: `${type}-start`, id });
      this.content.push(type === 'text' ? { type: 'text', text: '' } : { type: 'reasoning', text: '' });
    }
    const last = this.content.at(-1) as { text: string };
    last.text += text;
    this.emit({ type: `${type}-delta`, id, text });
  }

  private closeOpen(): void {
    if (!this.open) return;
    this.emit({ type: `${this.open.type}-end`, id: this.open.id });
    this.open = undefined;
  }

  private add(part: Content): void {
    this.ensureStep();
    this.closeOpen();
    this.content.push(part);
    this.emit(part as SdkPart);
  }

  private finishStep(reason: FinishReason, usage: Usage): void {
    this.ensureStep();
    this.closeOpen();
    this.records.push({ content: this.content, reason, usage, elapsedMs: Math.max(1, Date.now() - this.stepStartedAt) });
    this.content = [];
    this.stepOpen = false;
    if (!this.options.onPart && !this.options.onStepFinish) return;
    const step = this.steps.at(-1)!;
    this.emit({ type: 'finish-step', response: step.response, usage, performance: step.performance, finishReason: step.finishReason, rawFinishReason: reason, providerMetadata: undefined });
    if (this.options.onStepFinish) this.callbacks.push(this.options.onStepFinish(step));
  }

  private stepResult(stepNumber: number): SdkStep {
    const { content, reason, usage, elapsedMs: elapsed } = this.records[stepNumber]!;
    const of = <T extends Content['type']>(type: T) => content.filter((p): p is Extract<Content, { type: T }> => p.type === type);
    const toolCalls = of('tool-call');
    const toolResults = of('tool-result');
    const perSecond = (tokens: number | undefined) => (tokens === undefined ? undefined : (tokens * 1000) / elapsed);
    const messagesUpTo = (steps: number) => this.messagesUpTo(steps);
    return {
      callId: this.callId,
      stepNumber,
      model: this.options.model,
      toolsContext: {},
      runtimeContext: {},
      content,
      text: of('text').map((p) => p.text).join(''),
      reasoning: of('reasoning'),
      reasoningText: of('reasoning').length > 0 ? of('reasoning').map((p) => p.text).join('') : undefined,
      files: [],
      sources: of('source'),
      toolCalls,
      staticToolCalls: toolCalls.filter((c) => !c.dynamic) as SdkStep['staticToolCalls'],
      dynamicToolCalls: toolCalls.filter((c) => c.dynamic) as SdkStep['dynamicToolCalls'],
      toolResults,
      staticToolResults: toolResults.filter((r) => !r.dynamic) as SdkStep['staticToolResults'],
      dynamicToolResults: toolResults.filter((r) => r.dynamic) as SdkStep['dynamicToolResults'],
      finishReason: sdkFinishReason(reason),
      rawFinishReason: reason,
      usage,
      performance: {
        effectiveOutputTokensPerSecond: perSecond(usage.outputTokens) ?? 0,
        outputTokensPerSecond: perSecond(usage.outputTokens),
        inputTokensPerSecond: perSecond(usage.inputTokens),
        effectiveTotalTokensPerSecond: perSecond(usage.totalTokens) ?? 0,
        stepTimeMs: elapsed,
        responseTimeMs: elapsed,
        toolExecutionMs: {},
        timeToFirstOutputMs: undefined,
      },
      warnings: [],
      request: {},
      response: {
        id: `${this.callId}-${stepNumber}`,
        timestamp: new Date(),
        modelId: this.options.model.modelId,
        // The messages of every step up to this one, as the AI SDK gives them; made only when read.
        get messages() {
          return messagesUpTo(stepNumber + 1);
        },
      },
      providerMetadata: undefined,
    } as SdkStep;
  }
}

/** A step's content as the response messages the AI SDK would record: the assistant's turn, then the tool results. */
function messagesOf(content: readonly Content[]): ResponseMessage[] {
  const assistant: Array<Record<string, unknown>> = [];
  const tool: Array<Record<string, unknown>> = [];
  for (const part of content) {
    if (part.type === 'text' || part.type === 'reasoning') assistant.push({ type: part.type, text: part.text });
    else if (part.type === 'tool-call') assistant.push({ type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
    else if (part.type === 'tool-approval-request') assistant.push({ type: 'tool-approval-request', approvalId: part.approvalId, toolCallId: part.toolCall.toolCallId });
    else if (part.type === 'tool-result') tool.push({ type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, output: outputOf(part.output) });
    else if (part.type === 'tool-error') tool.push({ type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, output: { type: 'error-text', value: String(part.error) } });
  }
  const messages: Array<Record<string, unknown>> = [];
  if (assistant.length > 0) messages.push({ role: 'assistant', content: assistant });
  if (tool.length > 0) messages.push({ role: 'tool', content: tool });
  return messages as unknown as ResponseMessage[];
}

function outputOf(value: unknown): { type: 'text'; value: string } | { type: 'json'; value: unknown } {
  return typeof value === 'string' ? { type: 'text', value } : { type: 'json', value: value ?? null };
}
