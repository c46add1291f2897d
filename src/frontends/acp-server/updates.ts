import type * as acp from '@agentclientprotocol/sdk';
import { addUsage, emptyUsage, type FinishReason, type HarnessStreamPart, type Usage } from '../../engine/events.ts';
import { needsApproval, type PermissionMode } from '../../tools/permission.ts';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import { PLAN_TOOL_NAME, planOf } from '../../tools/builtin/plan.ts';
import type { Tool } from '../../tools/tool.ts';
import type { ClientTerminals } from './client-terminals.ts';
import type { EditLog } from './edits.ts';
import type { InterruptedCalls } from './interrupted-calls.ts';
import { describeToolCall } from './tool-calls.ts';

/**
 * Translation of acx's turn events into ACP `session/update` payloads: text and reasoning
 * chunks, the tool-call lifecycle (pending → in_progress → completed | failed), plans and
 * context usage. The caller sends what it returns, in order; the only I/O is reading a file an
 * fs_write is about to replace (through the session's confined roots), for its proposed diff.
 */

function text(value: string): acp.ToolCallContent {
  return { type: 'content', content: { type: 'text', text: value } };
}

/** A tool's output (text, content parts, or any JSON value) as ACP tool-call content. */
export function toolOutputContent(output: unknown): acp.ToolCallContent[] {
  if (output === undefined || output === null) return [];
  if (typeof output === 'string') return output ? [text(output)] : [];
  const parts = Array.isArray(output)
    ? output
    : typeof output === 'object' && Array.isArray((output as { content?: unknown }).content)
      ? (output as { content: unknown[] }).content
      : undefined;
  if (parts && parts.every((p) => p && typeof p === 'object' && typeof (p as { type?: unknown }).type === 'string')) {
    const blocks: acp.ToolCallContent[] = [];
    for (const part of parts as Array<{ type: string; text?: string; data?: string; mediaType?: string; mimeType?: string }>) {
      if (part.type === 'text' && typeof part.text === 'string') blocks.push(text(part.text));
      else if (part.type === 'image' && typeof part.data === 'string') {
        blocks.push({ type: 'content', content: { type: 'image', data: part.data, mimeType: part.mediaType ?? part.mimeType ?? 'image/png' } });
      }
    }
    if (blocks.length > 0) return blocks;
  }
  return [text(JSON.stringify(output, null, 2) ?? String(output))];
}

/**
 * The engine's turn finish reasons as ACP stop reasons. `length` is the engine's step budget
 * running out (the reserve summary): ACP's name for "too many model requests in one turn" is
 * max_turn_requests; a model's own token limit never ends an engine turn.
 */
export const STEP_BUDGET_STOP_REASON: acp.StopReason = 'max_turn_requests';

export function stopReasonOf(finish: FinishReason): acp.StopReason {
  switch (finish) {
    case 'length':
      return STEP_BUDGET_STOP_REASON;
    case 'content-filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

const PLAN_STATUS: readonly acp.PlanEntryStatus[] = ['pending', 'in_progress', 'completed'];
const PLAN_PRIORITY: readonly acp.PlanEntryPriority[] = ['high', 'medium', 'low'];

export function planEntries(entries: Array<{ content: string; status: string; priority?: string }>): acp.PlanEntry[] {
  return entries.map((entry) => {
    const status = entry.status.replace('-', '_') as acp.PlanEntryStatus;
    return {
      content: entry.content,
      status: PLAN_STATUS.includes(status) ? status : 'pending',
      priority: PLAN_PRIORITY.includes(entry.priority as acp.PlanEntryPriority) ? (entry.priority as acp.PlanEntryPriority) : 'medium',
    };
  });
}

export interface TurnTranslatorOptions {
  /** The session's tools by name (their kinds and approval rules). */
  tools: ReadonlyMap<string, Tool>;
  /** The permission mode the turn's engine runs under. */
  mode: PermissionMode;
  /** The context window in tokens, for `usage_update`; undefined sends none. */
  contextSize: number | undefined;
  /** What the session's earlier turns cost (USD), so `usage_update` reports the session's running total. */
  costSoFar?: number;
  /** The session's workspace roots: tool-call locations and diffs name absolute paths in them. */
  roots?: WorkspaceRoots;
  /** Where the session's writes left their diffs. */
  edits?: EditLog;
  /** The editor's terminals the session's commands run in. */
  terminals?: Pick<ClientTerminals, 'announce' | 'take'>;
  /** Commands the turn's cancel cut short: they end failed, not completed. */
  interrupted?: Pick<InterruptedCalls, 'take'>;
}

export class TurnTranslator {
  private readonly options: TurnTranslatorOptions;
  /** Calls announced and not yet settled, so none is left spinning in the client. */
  private readonly open = new Map<string, string>();
  private turnUsage: Usage = emptyUsage();
  private turnCost: number | undefined;

  constructor(options: TurnTranslatorOptions) {
    this.options = options;
  }

  get usage(): Usage {
    return this.turnUsage;
  }

  /** What this turn cost (USD), when the provider stated it for any of its calls. */
  get cost(): number | undefined {
    return this.turnCost;
  }

  tool(name: string): Tool | undefined {
    return this.options.tools.get(name);
  }

  translate(part: HarnessStreamPart): acp.SessionUpdate[] {
    // The model's plan is shown as the editor's plan, not as a tool call.
    if ('toolName' in part && part.toolName === PLAN_TOOL_NAME && part.type !== 'tool-approval-request') {
      const entries = part.type === 'tool-result' ? planOf(part.input) : undefined;
      return entries ? [{ sessionUpdate: 'plan', entries: planEntries(entries) }] : [];
    }
    switch (part.type) {
      case 'text-delta':
        return part.text ? [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: part.text } }] : [];
      case 'reasoning-delta':
        return part.text ? [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: part.text } }] : [];
      case 'tool-call': {
        const tool = this.tool(part.toolName);
        this.open.set(part.toolCallId, part.toolName);
        const { roots } = this.options;
        const { title, kind, locations } = describeToolCall(part.toolName, part.input, tool, roots);
        const proposed = this.options.edits?.diffFor(part.toolCallId, part.toolName, part.input);
        const terminal = this.options.terminals?.announce(part.toolCallId);
        const content = [...(proposed ? [proposed] : []), ...(terminal ? [terminal] : [])];
        const updates: acp.SessionUpdate[] = [
          {
            sessionUpdate: 'tool_call',
            toolCallId: part.toolCallId,
            title,
            name: part.toolName,
            kind,
            status: 'pending',
            ...(locations.length > 0 ? { locations } : {}),
            ...(content.length > 0 ? { content } : {}),
            rawInput: part.input,
          },
        ];
        // A call the mode allows starts right away; one that needs approval waits for the answer.
        if (tool && !needsApproval(tool, this.options.mode)) {
          updates.push({ sessionUpdate: 'tool_call_update', toolCallId: part.toolCallId, status: 'in_progress' });
        }
        return updates;
      }
      case 'tool-result': {
        this.open.delete(part.toolCallId);
        const diff = this.options.edits?.take(part.toolCallId);
        // A command run in the editor's terminal stays shown there; its text is in rawOutput.
        const terminal = this.options.terminals?.take(part.toolCallId);
        const interrupted = this.options.interrupted?.take(part.toolCallId) ?? false;
        return [
          {
            sessionUpdate: 'tool_call_update',
            toolCallId: part.toolCallId,
            status: interrupted ? 'failed' : 'completed',
            content: [...(diff ? [diff] : []), ...(terminal ? [terminal] : toolOutputContent(part.output))],
            rawOutput: part.output,
          },
        ];
      }
      case 'tool-error': {
        this.open.delete(part.toolCallId);
        const terminal = this.options.terminals?.take(part.toolCallId);
        return [{ sessionUpdate: 'tool_call_update', toolCallId: part.toolCallId, status: 'failed', content: [...(terminal ? [terminal] : []), text(part.error)] }];
      }
      case 'tool-output-denied':
        this.open.delete(part.toolCallId);
        return [
          {
            sessionUpdate: 'tool_call_update',
            toolCallId: part.toolCallId,
            status: 'failed',
            content: [text(`Not run: ${part.reason ?? 'permission was denied.'}`)],
          },
        ];
      case 'plan':
        return [{ sessionUpdate: 'plan', entries: planEntries(part.entries) }];
      case 'finish-step': {
        this.turnUsage = addUsage(this.turnUsage, part.usage);
        if (part.costUsd !== undefined) this.turnCost = (this.turnCost ?? 0) + part.costUsd;
        const { inputTokens, outputTokens } = part.usage;
        if (this.options.contextSize === undefined || inputTokens === undefined) return [];
        const spent = this.turnCost === undefined && this.options.costSoFar === undefined ? undefined : (this.options.costSoFar ?? 0) + (this.turnCost ?? 0);
        return [
          {
            sessionUpdate: 'usage_update',
            used: inputTokens + (outputTokens ?? 0),
            size: this.options.contextSize,
            ...(spent === undefined ? {} : { cost: { amount: spent, currency: 'USD' } }),
          },
        ];
      }
      case 'start-step':
      case 'finish':
        // Calls of an earlier step that never reported (a malformed or unknown call) are settled.
        return this.closeOpen('The call could not be run (unknown tool or malformed arguments).');
      case 'abort':
        return this.closeOpen('Cancelled.');
      default:
        return [];
    }
  }

  /** Settles every call still open as failed; used at step boundaries and when a turn ends early. */
  closeOpen(reason: string): acp.SessionUpdate[] {
    const updates: acp.SessionUpdate[] = [...this.open.keys()].map((toolCallId) => ({
      sessionUpdate: 'tool_call_update' as const,
      toolCallId,
      status: 'failed' as const,
      content: [text(reason)],
    }));
    this.open.clear();
    return updates;
  }
}

/** The turn's token usage in the shape of ACP's (draft) `PromptResponse.usage`. */
export function promptUsage(usage: Usage): { inputTokens: number; outputTokens: number; totalTokens: number; cachedReadTokens?: number } | undefined {
  if (usage.inputTokens === undefined && usage.outputTokens === undefined) return undefined;
  const inputTokens = usage.inputTokens ?? 0;
  const outputTokens = usage.outputTokens ?? 0;
  return {
    inputTokens,
    outputTokens,
    totalTokens: usage.totalTokens ?? inputTokens + outputTokens,
    ...(usage.inputTokenDetails.cacheReadTokens !== undefined ? { cachedReadTokens: usage.inputTokenDetails.cacheReadTokens } : {}),
  };
}
