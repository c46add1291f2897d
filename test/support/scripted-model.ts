import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { partsToResult } from '../../src/model/cassette.ts';

/**
 * An in-process LanguageModelV4 whose answer is a function of the request. For engine unit
 * tests and benchmarks; wire-level tests use the HTTP model server instead.
 */
export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  toolCalls?: Array<{ id?: string; name: string; input: unknown }>;
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
  /** Throw this instead of answering. */
  error?: unknown;
}

export type ScriptFn = (options: LanguageModelV4CallOptions, call: number) => ScriptedReply;

export interface ScriptedModel extends LanguageModelV4 {
  calls: LanguageModelV4CallOptions[];
}

let counter = 0;

export function scriptedModel(script: ScriptFn | ScriptedReply[], modelId = 'scripted'): ScriptedModel {
  const calls: LanguageModelV4CallOptions[] = [];
  const next: ScriptFn = Array.isArray(script)
    ? (_, call) => {
        const reply = script[call];
        if (!reply) throw new Error(`scripted model: no reply scripted for call ${call + 1}`);
        return reply;
      }
    : script;
  return {
    specificationVersion: 'v4',
    provider: 'scripted',
    modelId,
    supportedUrls: {},
    calls,
    async doGenerate(options) {
      const { stream } = await this.doStream(options);
      const parts: LanguageModelV4StreamPart[] = [];
      for await (const part of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) parts.push(part);
      return partsToResult(parts);
    },
    async doStream(options) {
      calls.push(options);
      const reply = next(options, calls.length - 1);
      if (reply.error) throw reply.error;
      const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      if (reply.reasoning) {
        parts.push({ type: 'reasoning-start', id: 'r' }, { type: 'reasoning-delta', id: 'r', delta: reply.reasoning }, { type: 'reasoning-end', id: 'r' });
      }
      if (reply.text) {
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: reply.text }, { type: 'text-end', id: 't' });
      }
      for (const call of reply.toolCalls ?? []) {
        parts.push({
          type: 'tool-call',
          toolCallId: call.id ?? `call_${++counter}`,
          toolName: call.name,
          input: JSON.stringify(call.input),
        });
      }
      const hasCalls = (reply.toolCalls?.length ?? 0) > 0;
      parts.push({
        type: 'finish',
        finishReason: { unified: hasCalls ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: reply.inputTokens ?? 100, noCache: undefined, cacheRead: reply.cachedInputTokens, cacheWrite: undefined },
          outputTokens: { total: reply.outputTokens ?? 10, text: undefined, reasoning: undefined },
        },
      });
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  };
}

/** The text of the last non-brief user message and the count of tool results in a request. */
export function lastUserText(options: LanguageModelV4CallOptions): string {
  for (let i = options.prompt.length - 1; i >= 0; i--) {
    const message = options.prompt[i]!;
    if (message.role !== 'user') continue;
    const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (!text.startsWith('<acx-brief>')) return text;
  }
  return '';
}

export function toolResultCount(options: LanguageModelV4CallOptions): number {
  return options.prompt
    .filter((m) => m.role === 'tool')
    .reduce((n, m) => n + m.content.filter((p) => p.type === 'tool-result').length, 0);
}

export function briefOf(options: LanguageModelV4CallOptions): string {
  const last = options.prompt.at(-1);
  if (!last || last.role !== 'user') return '';
  return last.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}
