import type * as acp from '@agentclientprotocol/sdk';
import type { ModelMessage } from 'ai';
import type { StoredMessage } from '../../store/journal.ts';
import type { Tool } from '../../tools/tool.ts';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import { PLAN_TOOL_NAME, planOf } from '../../tools/builtin/plan.ts';
import { describeToolCall } from './tool-calls.ts';
import { planEntries } from './updates.ts';

/**
 * A journaled session's history as the `session/update` notifications `session/load` replays:
 * user messages, the agent's text and reasoning, and each tool call with its final status,
 * (capped, as journaled) result and, for a write, the diff it showed live. Harness notes are internal and not replayed; a compaction
 * summary is shown as the agent's thought, since the messages it replaced are gone.
 */
type Part = { type: string; [key: string]: unknown };

function partsOf(message: ModelMessage): Part[] {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as Part[]);
}

interface ToolOutcome {
  status: 'completed' | 'failed';
  content: acp.ToolCallContent[];
}

function textContent(value: string): acp.ToolCallContent {
  return { type: 'content', content: { type: 'text', text: value } };
}

/** A journaled ToolResultOutput as ACP content and status. */
function outcomeOf(output: unknown): ToolOutcome {
  const o = (output ?? {}) as { type?: string; value?: unknown; reason?: string };
  switch (o.type) {
    case 'text':
      return { status: 'completed', content: o.value ? [textContent(String(o.value))] : [] };
    case 'json':
      return { status: 'completed', content: [textContent(JSON.stringify(o.value, null, 2))] };
    case 'error-text':
      return { status: 'failed', content: [textContent(String(o.value))] };
    case 'error-json':
      return { status: 'failed', content: [textContent(JSON.stringify(o.value))] };
    case 'execution-denied':
      return { status: 'failed', content: [textContent(`Not run: ${o.reason ?? 'permission was denied.'}`)] };
    case 'content': {
      const parts = Array.isArray(o.value) ? (o.value as Part[]) : [];
      const content: acp.ToolCallContent[] = [];
      for (const part of parts) {
        if (part.type === 'text' && typeof part.text === 'string') content.push(textContent(part.text));
      }
      return { status: 'completed', content };
    }
    default:
      return { status: 'completed', content: [] };
  }
}

function userBlocks(message: ModelMessage): acp.ContentBlock[] {
  const blocks: acp.ContentBlock[] = [];
  for (const part of partsOf(message)) {
    if (part.type === 'text' && typeof part.text === 'string') blocks.push({ type: 'text', text: part.text });
    else if (part.type === 'file' && typeof part.data === 'string' && String(part.mediaType ?? '').startsWith('image/')) {
      blocks.push({ type: 'image', data: part.data, mimeType: String(part.mediaType) });
    }
  }
  return blocks;
}

/** The results journaled for one assistant step: the next `tool` message, before any later step. */
function stepOutcomes(messages: readonly StoredMessage[], index: number): Map<string, ToolOutcome> {
  const outcomes = new Map<string, ToolOutcome>();
  for (let i = index + 1; i < messages.length; i++) {
    const stored = messages[i]!;
    if (stored.kind === 'assistant' || stored.kind === 'user') break;
    if (stored.kind !== 'tool') continue;
    for (const part of partsOf(stored.message)) {
      if (part.type === 'tool-result' && typeof part.toolCallId === 'string') outcomes.set(part.toolCallId, outcomeOf(part.output));
    }
    break;
  }
  return outcomes;
}

/** The diff a completed call showed live (a write's, from what was kept when it ran), if any. */
export type KeptDiff = (toolCallId: string, toolName: string, input: unknown) => acp.ToolCallContent | undefined;

export function replayUpdates(
  messages: readonly StoredMessage[],
  tools: ReadonlyMap<string, Tool>,
  roots?: WorkspaceRoots,
  keptDiff?: KeptDiff,
): acp.SessionUpdate[] {
  const updates: acp.SessionUpdate[] = [];
  messages.forEach((stored, index) => {
    switch (stored.kind) {
      case 'user':
        for (const content of userBlocks(stored.message)) updates.push({ sessionUpdate: 'user_message_chunk', content });
        break;
      case 'summary':
        for (const content of userBlocks(stored.message)) updates.push({ sessionUpdate: 'agent_thought_chunk', content });
        break;
      case 'assistant': {
        // Call ids are matched within the step: some models reuse them across steps.
        const outcomes = stepOutcomes(messages, index);
        for (const part of partsOf(stored.message)) {
          if (part.type === 'text' && typeof part.text === 'string' && part.text) {
            updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: part.text } });
          } else if (part.type === 'reasoning' && typeof part.text === 'string' && part.text) {
            updates.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: part.text } });
          } else if (part.type === 'tool-call' && typeof part.toolCallId === 'string') {
            const toolName = String(part.toolName);
            if (toolName === PLAN_TOOL_NAME) {
              // Shown as the plan it set, as it was live; a later plan replaces it in the editor.
              const entries = outcomes.get(part.toolCallId)?.status === 'completed' ? planOf(part.input) : undefined;
              if (entries) updates.push({ sessionUpdate: 'plan', entries: planEntries(entries) });
              continue;
            }
            // A call without a journaled result belongs to a turn that never finished it.
            const outcome = outcomes.get(part.toolCallId) ?? { status: 'failed' as const, content: [textContent('No result was recorded.')] };
            const { title, kind, locations } = describeToolCall(toolName, part.input, tools.get(toolName), roots);
            // A completed write shows its diff first, as it did live.
            const diff = outcome.status === 'completed' ? keptDiff?.(part.toolCallId, toolName, part.input) : undefined;
            updates.push({
              sessionUpdate: 'tool_call',
              toolCallId: part.toolCallId,
              title,
              name: toolName,
              kind,
              status: outcome.status,
              ...(locations.length > 0 ? { locations } : {}),
              rawInput: part.input,
              content: [...(diff ? [diff] : []), ...outcome.content],
            });
          }
        }
        break;
      }
      default:
        break; // 'tool' results are folded into their calls; 'note' is harness-internal
    }
  });
  return updates;
}
