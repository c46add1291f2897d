import type { ModelMessage } from 'ai';
import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import type { TurnResult, TurnToolCall } from './turn-types.ts';
import { resultOf } from './tool-output.ts';

/**
 * The tool calls a turn made and the results it settled, read from its journaled messages, so a
 * turn resumed in another process, or answered again from the journal, reports the whole turn
 * and not only the part this process ran.
 */
export function turnActivity(
  entries: ReadonlyArray<{ turnId: string | null; message: ModelMessage }>,
  turnId: string,
): { calls: TurnToolCall[]; results: TurnResult['toolResults'] } {
  const calls: TurnToolCall[] = [];
  const results: TurnResult['toolResults'] = [];
  for (const { turnId: owner, message } of entries) {
    if (owner !== turnId || typeof message.content === 'string') continue;
    if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'tool-call') calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
      }
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        const input = calls.find((call) => call.toolCallId === part.toolCallId)?.input;
        results.push({ toolCallId: part.toolCallId, toolName: part.toolName, input, ...resultOf(part.output as ToolResultOutput) });
      }
    }
  }
  return { calls, results };
}
