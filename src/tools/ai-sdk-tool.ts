import type { Tool as SdkTool } from 'ai';
import { AcxError } from '../core/errors.ts';
import type { Tool, ToolOutput } from './tool.ts';

/**
 * A tool made with the AI SDK's own `tool()` carries no kind, effect or capability scopes, so
 * acx cannot know what it touches. It gets the safe default: kind `other` (asks for approval
 * unless the permission mode is allow-all), effect `unsafe` (never re-run after a crash), and no
 * capability scopes.
 */
export type { SdkTool };

/** An AI SDK tool is told apart from an acx tool by the acx fields it lacks. */
export function isSdkTool(value: object): value is SdkTool {
  return !('kind' in value) && !('effect' in value) && 'inputSchema' in value;
}

export function fromSdkTool(name: string, source: SdkTool): Tool {
  if (source.type === 'provider') {
    throw new AcxError('config', `Tool "${name}" is a provider tool (${source.id}): the provider runs it inside its own API, outside acx's loop.`, {
      hint: 'Give a function tool made with tool({ inputSchema, execute }), or use an acx built-in.',
    });
  }
  const run = source.execute;
  return {
    name,
    description: (typeof source.description === 'function' ? source.description({ context: {} }) : source.description) ?? '',
    inputSchema: source.inputSchema ?? { type: 'object', properties: {} },
    capabilityScopes: [],
    kind: 'other',
    effect: 'unsafe',
    // A needsApproval function would decide from the model's arguments at call time; acx's
    // approvals are decided per tool, so any needsApproval but `false` reads as "always ask".
    ...(source.needsApproval !== undefined && source.needsApproval !== false ? { needsApproval: true } : {}),
    ...(run
      ? {
          execute: async (input: unknown, context) =>
            lastValue(run(input, { toolCallId: context.toolCallId, messages: [], abortSignal: context.abortSignal, context: {} })),
        }
      : {}),
  } satisfies Tool;
}

/** An AI SDK `execute` may stream preliminary outputs; the last one is the result. */
async function lastValue(result: unknown): Promise<ToolOutput> {
  if (result === null || typeof result !== 'object' || !(Symbol.asyncIterator in result)) return result;
  let last: unknown;
  for await (const value of result as AsyncIterable<unknown>) last = value;
  return last;
}
