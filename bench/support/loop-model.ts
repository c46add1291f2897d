import type { LanguageModelV4, LanguageModelV4Content } from '@ai-sdk/provider';
import { z } from 'zod';
import type { Tool } from '../../src/tools/tool.ts';
import { scriptedModel, type ScriptedModel, type ScriptedReply } from '../../test/support/scripted-model.ts';

/**
 * The in-process model both sides of the engine-overhead benchmark talk to: it calls the tool
 * `tick` on every step until `toolSteps` calls were made, then answers. Streaming comes from
 * test/support/scripted-model.ts (acx's engine streams); `doGenerate` (what `generateText`
 * uses) answers the same reply as one result, so both sides see the same script.
 */
export const LOOP_TOOL = 'tick';

/** The tool's input schema: the same zod schema on acx's side and the AI SDK's. */
export const LOOP_TOOL_INPUT = z.object({ n: z.number().int() });

/** The tool the loop model calls, as an acx tool: read-only, trivial unless given a body. */
export function loopTool(body: (input: { n: number }) => string = (input) => `tick ${input.n}`): Tool<{ n: number }> {
  return {
    name: LOOP_TOOL,
    description: 'Advance the counter by one.',
    inputSchema: LOOP_TOOL_INPUT,
    capabilityScopes: [],
    kind: 'read',
    effect: 'read-only',
    execute: (input) => body(input),
  };
}

export interface LoopModel extends LanguageModelV4 {
  /** Start a new turn: the next call is step 1 again. */
  reset(): void;
  /** Model calls made since the last reset. */
  readonly callCount: number;
}

export function loopReply(call: number, toolSteps: number): ScriptedReply {
  return call < toolSteps
    ? { toolCalls: [{ name: LOOP_TOOL, input: { n: call } }], inputTokens: 100, outputTokens: 10 }
    : { text: 'done', inputTokens: 100, outputTokens: 10 };
}

let ids = 0;

export function loopModel(toolSteps: number): LoopModel {
  const streaming: ScriptedModel = scriptedModel((_, call) => loopReply(call, toolSteps), 'loop');
  let generated = 0;
  return {
    specificationVersion: 'v4',
    provider: 'scripted',
    modelId: 'loop',
    supportedUrls: {},
    reset() {
      streaming.calls.length = 0; // the scripted model numbers calls by this list
      generated = 0;
    },
    get callCount() {
      return streaming.calls.length + generated;
    },
    doStream: (options) => streaming.doStream(options),
    async doGenerate() {
      const reply = loopReply(generated++, toolSteps);
      const content: LanguageModelV4Content[] = [];
      if (reply.text) content.push({ type: 'text', text: reply.text });
      for (const call of reply.toolCalls ?? []) {
        content.push({ type: 'tool-call', toolCallId: `gen_${++ids}`, toolName: call.name, input: JSON.stringify(call.input) });
      }
      const hasCalls = (reply.toolCalls?.length ?? 0) > 0;
      return {
        content,
        finishReason: { unified: hasCalls ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: reply.inputTokens, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: reply.outputTokens, text: undefined, reasoning: undefined },
        },
        warnings: [],
      };
    },
  };
}
