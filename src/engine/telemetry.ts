import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import type { HarnessStreamPart, Usage } from './events.ts';

/**
 * OpenTelemetry for the engine, off unless a tracer is given. Span and attribute names follow
 * the AI SDK's where the two overlap, so a backend that reads AI SDK traces reads acx's:
 *
 *   ai.generateText | ai.streamText            one per turn (a continued turn gets its own)
 *     acx.step                                 one per step
 *       ai.generateText.doGenerate | ai.streamText.doStream   each model call attempt
 *       ai.toolCall                            each tool run
 *
 * Prompts, texts, tool arguments and results are recorded unless the caller turns them off
 * (recordInputs / recordOutputs): tool output can hold anything, so a caller whose tools read
 * sensitive data should set recordOutputs: false.
 */
export interface TelemetrySettings {
  tracer: Tracer;
  /** Groups the spans of one use of acx (`ai.telemetry.functionId`). */
  functionId?: string;
  /** Attributes on every turn span, as `ai.telemetry.metadata.<key>`. */
  metadata?: Record<string, string | number | boolean>;
  recordInputs?: boolean;
  recordOutputs?: boolean;
}

/** What a turn tells its telemetry. With telemetry off it is NO_TELEMETRY, which costs nothing. */
export interface TurnTelemetry {
  /** The turn's stream parts: steps open and close on start-step / finish-step. */
  observe(part: HarnessStreamPart): void;
  modelCall<T extends ModelCallShape>(fn: () => Promise<T>): Promise<T>;
  toolRun<T extends ToolRunShape>(call: ToolCallShape, fn: () => Promise<T>): Promise<T>;
  /** Ends every span still open; an error marks them failed. */
  end(outcome: { error?: unknown; text?: string; finishReason?: string; usage?: Usage }): void;
}

interface ModelCallShape {
  text: string;
  finishReason: string;
  usage: Usage;
  toolCalls: readonly ToolCallShape[];
}
interface ToolCallShape {
  toolCallId: string;
  toolName: string;
  input: unknown;
}
type ToolRunShape = { ok: true; output: unknown } | { ok: false; error: string };

export const NO_TELEMETRY: TurnTelemetry = {
  observe() {},
  modelCall: (fn) => fn(),
  toolRun: (_call, fn) => fn(),
  end() {},
};

export interface TurnSpanInput {
  sessionId: string;
  turnId: string;
  streaming: boolean;
  model: { provider: string; modelId: string };
  prompt?: string | undefined;
}

type OtelApi = typeof import('@opentelemetry/api');
let api: Promise<OtelApi> | undefined;

/**
 * Opens a turn's span. The OpenTelemetry API is loaded here, on the first traced turn, not at
 * start-up: a command that traces nothing never pays for it.
 */
export async function startTurnTelemetry(settings: TelemetrySettings | undefined, input: TurnSpanInput): Promise<TurnTelemetry> {
  if (!settings) return NO_TELEMETRY;
  api ??= import('@opentelemetry/api');
  return new SpanTurnTelemetry(await api, settings, input);
}

class SpanTurnTelemetry implements TurnTelemetry {
  private readonly turn: Span;
  private readonly turnContext: Context;
  private step: { span: Span; context: Context } | undefined;
  private readonly operation: 'ai.generateText' | 'ai.streamText';
  private readonly base: Attributes;
  private readonly otel: OtelApi;
  private readonly settings: TelemetrySettings;

  constructor(otel: OtelApi, settings: TelemetrySettings, input: TurnSpanInput) {
    this.otel = otel;
    this.settings = settings;
    this.operation = input.streaming ? 'ai.streamText' : 'ai.generateText';
    const functionId = settings.functionId;
    this.base = {
      'ai.model.provider': input.model.provider,
      'ai.model.id': input.model.modelId,
      ...(functionId !== undefined ? { 'ai.telemetry.functionId': functionId, 'resource.name': functionId } : {}),
    };
    const metadata = Object.fromEntries(Object.entries(settings.metadata ?? {}).map(([key, value]) => [`ai.telemetry.metadata.${key}`, value]));
    this.turn = settings.tracer.startSpan(this.operation, {
      attributes: {
        'operation.name': functionId !== undefined ? `${this.operation} ${functionId}` : this.operation,
        'ai.operationId': this.operation,
        ...this.base,
        ...metadata,
        'acx.session.id': input.sessionId,
        'acx.turn.id': input.turnId,
        ...(this.inputs && input.prompt !== undefined ? { 'ai.prompt': JSON.stringify({ prompt: input.prompt }) } : {}),
      },
    });
    this.turnContext = otel.trace.setSpan(otel.context.active(), this.turn);
  }

  private get inputs(): boolean {
    return this.settings.recordInputs !== false;
  }

  private get outputs(): boolean {
    return this.settings.recordOutputs !== false;
  }

  observe(part: HarnessStreamPart): void {
    if (part.type === 'start-step') {
      this.closeStep();
      const span = this.settings.tracer.startSpan('acx.step', { attributes: { ...this.base, 'acx.step.number': part.step } }, this.turnContext);
      this.step = { span, context: this.otel.trace.setSpan(this.turnContext, span) };
    } else if (part.type === 'finish-step' && this.step) {
      this.step.span.setAttributes({ 'ai.response.finishReason': part.finishReason, ...usageAttributes(part.usage) });
      this.closeStep();
    }
  }

  async modelCall<T extends ModelCallShape>(fn: () => Promise<T>): Promise<T> {
    const name = `${this.operation}.${this.operation === 'ai.streamText' ? 'doStream' : 'doGenerate'}`;
    const span = this.settings.tracer.startSpan(
      name,
      { attributes: { 'operation.name': name, 'ai.operationId': name, ...this.base, 'gen_ai.system': String(this.base['ai.model.provider']), 'gen_ai.request.model': String(this.base['ai.model.id']) } },
      this.step?.context ?? this.turnContext,
    );
    try {
      const result = await fn();
      span.setAttributes({
        'ai.response.finishReason': result.finishReason,
        'gen_ai.response.finish_reasons': [result.finishReason],
        ...usageAttributes(result.usage),
        ...(this.outputs ? { 'ai.response.text': result.text, 'ai.response.toolCalls': JSON.stringify(result.toolCalls.map(({ toolCallId, toolName, input }) => ({ toolCallId, toolName, input }))) } : {}),
      });
      return result;
    } catch (error) {
      this.fail(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  async toolRun<T extends ToolRunShape>(call: ToolCallShape, fn: () => Promise<T>): Promise<T> {
    const span = this.settings.tracer.startSpan(
      'ai.toolCall',
      {
        attributes: {
          'operation.name': 'ai.toolCall',
          'ai.operationId': 'ai.toolCall',
          'ai.toolCall.name': call.toolName,
          'ai.toolCall.id': call.toolCallId,
          ...(this.inputs ? { 'ai.toolCall.args': JSON.stringify(call.input) } : {}),
        },
      },
      this.step?.context ?? this.turnContext,
    );
    try {
      const outcome = await fn();
      if (outcome.ok) {
        if (this.outputs) span.setAttribute('ai.toolCall.result', JSON.stringify(outcome.output) ?? 'undefined');
      } else {
        this.fail(span, new Error(outcome.error));
      }
      return outcome;
    } catch (error) {
      this.fail(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  end(outcome: { error?: unknown; text?: string; finishReason?: string; usage?: Usage }): void {
    if (outcome.error !== undefined) {
      if (this.step) this.fail(this.step.span, outcome.error);
      this.fail(this.turn, outcome.error);
    }
    this.closeStep();
    this.turn.setAttributes({
      ...(outcome.finishReason !== undefined ? { 'ai.response.finishReason': outcome.finishReason } : {}),
      ...(outcome.usage ? usageAttributes(outcome.usage) : {}),
      ...(this.outputs && outcome.text !== undefined ? { 'ai.response.text': outcome.text } : {}),
    });
    this.turn.end();
  }

  private closeStep(): void {
    this.step?.span.end();
    this.step = undefined;
  }

  private fail(span: Span, error: unknown): void {
    const exception = error instanceof Error ? error : new Error(String(error));
    span.recordException(exception);
    span.setStatus({ code: this.otel.SpanStatusCode.ERROR, message: exception.message });
  }
}

function usageAttributes(usage: Usage): Attributes {
  const attributes: Attributes = {};
  if (usage.inputTokens !== undefined) {
    attributes['ai.usage.inputTokens'] = usage.inputTokens;
    attributes['gen_ai.usage.input_tokens'] = usage.inputTokens;
  }
  if (usage.outputTokens !== undefined) {
    attributes['ai.usage.outputTokens'] = usage.outputTokens;
    attributes['gen_ai.usage.output_tokens'] = usage.outputTokens;
  }
  if (usage.totalTokens !== undefined) attributes['ai.usage.totalTokens'] = usage.totalTokens;
  return attributes;
}
