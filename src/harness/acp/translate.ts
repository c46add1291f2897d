import type { JSONValue } from '@ai-sdk/provider';
import type * as acp from '@agentclientprotocol/sdk';
import type { TurnToolCall } from '../../engine/engine.ts';
import { emptyUsage, type FinishReason, type HarnessStreamPart, type Usage } from '../../engine/events.ts';
import type { ToolKind } from '../../tools/tool.ts';
import type { ACPBuiltinTool } from './settings.ts';

/**
 * ACP `session/update` notifications → acx stream parts. ACP v1 has no model-step boundaries:
 * a new step is inferred when the agent speaks or calls a tool after a tool finished. Tool calls
 * keep the agent's kind, title and locations on the part; host tools called through acx's MCP
 * server are reported under their host name.
 */

export interface ACPToolInfo {
  toolCallId: string;
  toolName: string;
  title: string | undefined;
  kind: acp.ToolKind | undefined;
  status: acp.ToolCallStatus | undefined;
  locations: acp.ToolCallLocation[];
  input: unknown;
  /** The call was made by the agent (native or third-party MCP), not by the acx host. */
  providerExecuted: boolean;
  dynamic: boolean;
  done: boolean;
}

/** acx's permission kinds for ACP tool kinds. */
export function permissionKindOf(kind: acp.ToolKind | null | undefined): ToolKind {
  switch (kind) {
    case 'read':
    case 'search':
    case 'think':
      return 'read';
    case 'edit':
    case 'delete':
    case 'move':
      return 'edit';
    case 'execute':
      return 'execute';
    case 'fetch':
      return 'fetch';
    default:
      return 'other';
  }
}

export function finishReasonOf(stop: acp.StopReason | string): FinishReason {
  switch (stop) {
    case 'end_turn':
      return 'stop';
    case 'max_tokens':
    case 'max_turn_requests': // the agent's own step budget is spent (acx's ACP server answers this)
      return 'length';
    case 'refusal':
      return 'content-filter';
    default:
      return 'other'; // cancelled, anything newer
  }
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Turn usage from a PromptResponse: `usage` (newer agents), `_meta.usage`, or `_meta.quota.token_count`. */
export function usageOf(response: unknown): Usage {
  const r = (response ?? {}) as Record<string, any>;
  const candidates = [r.usage, r._meta?.usage, r._meta?.quota?.token_count, r._meta?.quota?.usage];
  for (const u of candidates) {
    if (!u || typeof u !== 'object') continue;
    const input = num(u.inputTokens) ?? num(u.input_tokens) ?? num(u.prompt_tokens);
    const output = num(u.outputTokens) ?? num(u.output_tokens) ?? num(u.completion_tokens);
    const cached = num(u.cachedReadTokens) ?? num(u.cachedInputTokens) ?? num(u.cached_input_tokens) ?? num(u.cache_read_input_tokens);
    const total = num(u.totalTokens) ?? num(u.total_tokens) ?? (input !== undefined || output !== undefined ? (input ?? 0) + (output ?? 0) : undefined);
    if (input !== undefined || output !== undefined || total !== undefined) {
      const none = emptyUsage();
      return { ...none, inputTokens: input, outputTokens: output, totalTokens: total, inputTokenDetails: { ...none.inputTokenDetails, cacheReadTokens: cached } };
    }
  }
  return emptyUsage();
}

function textOfContent(content: acp.ToolCallContent[] | null | undefined): string | undefined {
  if (!content || content.length === 0) return undefined;
  const parts: string[] = [];
  for (const c of content) {
    if (c.type === 'content' && c.content.type === 'text') parts.push(c.content.text);
    else if (c.type === 'diff') parts.push(`diff ${c.path}`);
    else if (c.type === 'terminal') parts.push(`terminal ${c.terminalId}`);
  }
  return parts.length ? parts.join('\n') : undefined;
}

function json(value: unknown): JSONValue {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as JSONValue);
}

export interface TranslatorOptions {
  emit: (part: HarnessStreamPart) => void;
  hostToolNames: ReadonlySet<string>;
  hostServerName: string;
  builtinTools?: Record<string, ACPBuiltinTool> | undefined;
}

export class TurnTranslator {
  readonly tools = new Map<string, ACPToolInfo>();
  readonly toolCalls: TurnToolCall[] = [];
  readonly toolResults: Array<TurnToolCall & { output: unknown; error?: string }> = [];
  text = '';
  reasoning = '';
  step = 0;
  private toolFinishedInStep = false;
  /** Summaries of the agent's own compactions by id, as their chunks and upserts arrive. */
  private readonly compactions = new Map<string, string>();
  /** The context use the agent last reported (usage_update), the size a compaction starts from. */
  private contextUsed: number | undefined;
  private readonly options: TranslatorOptions;
  private readonly hostPatterns: readonly RegExp[];

  constructor(options: TranslatorOptions) {
    this.options = options;
    const server = options.hostServerName.replace(/[^A-Za-z0-9_-]/g, '');
    // How agents name a tool of acx's MCP server: `mcp__acx__x` (Claude Code), `acx__x`, `acx/x`,
    // `acx.x`, `mcp_acx_x` (Gemini CLI's model-facing name), and Gemini CLI's display title
    // `x (acx MCP Server)`. A match counts only when x is one of the host tools.
    this.hostPatterns = [
      new RegExp(`(?:^|[^A-Za-z0-9_])(?:mcp_{1,2})?${server}(?:__|_|/|\\.|:)([A-Za-z0-9_-]{1,64})`),
      new RegExp(`^([A-Za-z0-9_-]{1,64}) \\(${server} MCP Server\\)$`),
    ];
  }

  start(): void {
    this.step = 1;
    this.options.emit({ type: 'start-step', step: 1 });
  }

  /** Closes the current step and opens the next one when a tool finished before this content. */
  private content(): void {
    if (!this.toolFinishedInStep) return;
    this.options.emit({ type: 'finish-step', step: this.step, finishReason: 'tool-calls', usage: emptyUsage() });
    this.step += 1;
    this.toolFinishedInStep = false;
    this.options.emit({ type: 'start-step', step: this.step });
  }

  /** Closes the current step for a pause (a host call waits for a result); the next step opens on resume(). */
  pause(): void {
    this.options.emit({ type: 'finish-step', step: this.step, finishReason: 'tool-calls', usage: emptyUsage() });
    this.step += 1;
    this.toolFinishedInStep = false;
  }

  resume(): void {
    this.options.emit({ type: 'start-step', step: this.step });
  }

  finish(finishReason: FinishReason): void {
    this.options.emit({ type: 'finish-step', step: this.step, finishReason, usage: emptyUsage() });
  }

  /** Resolves a tool's display name: a host tool, a configured builtin, or the agent's own name. */
  toolNameOf(name: string | null | undefined, title: string | null | undefined): { toolName: string; host: boolean; dynamic: boolean } {
    for (const candidate of [name, title]) {
      if (!candidate) continue;
      for (const pattern of this.hostPatterns) {
        const m = pattern.exec(candidate);
        if (m && this.options.hostToolNames.has(m[1]!)) return { toolName: m[1]!, host: true, dynamic: false };
      }
    }
    if (name) {
      for (const [key, def] of Object.entries(this.options.builtinTools ?? {})) {
        if (name === key || name === def.nativeName) return { toolName: key, host: false, dynamic: false };
      }
    }
    return { toolName: name || title || 'unknown', host: false, dynamic: true };
  }

  private emitToolCall(info: ACPToolInfo): void {
    const part = {
      type: 'tool-call' as const,
      toolCallId: info.toolCallId,
      toolName: info.toolName,
      input: info.input,
      providerExecuted: info.providerExecuted,
      dynamic: info.dynamic,
      title: info.title,
      kind: info.kind,
      locations: info.locations,
    };
    this.options.emit(part);
    this.toolCalls.push({ toolCallId: info.toolCallId, toolName: info.toolName, input: info.input });
  }

  private upsertTool(update: acp.ToolCallUpdate | acp.ToolCall): ACPToolInfo {
    let info = this.tools.get(update.toolCallId);
    if (!info) {
      this.content();
      const named = this.toolNameOf(update.name, update.title);
      info = {
        toolCallId: update.toolCallId,
        toolName: named.toolName,
        title: update.title ?? undefined,
        kind: update.kind ?? undefined,
        status: update.status ?? undefined,
        locations: [...(update.locations ?? [])],
        input: update.rawInput ?? {},
        providerExecuted: !named.host,
        dynamic: named.dynamic,
        done: false,
      };
      this.tools.set(update.toolCallId, info);
      this.emitToolCall(info);
      return info;
    }
    if (update.title) {
      info.title = update.title;
      if (info.dynamic) {
        const named = this.toolNameOf(update.name, update.title);
        if (named.host) Object.assign(info, { toolName: named.toolName, providerExecuted: false, dynamic: false });
      }
    }
    if (update.kind) info.kind = update.kind;
    if (update.status) info.status = update.status;
    if (update.locations) info.locations = [...update.locations];
    if (update.rawInput !== undefined) info.input = update.rawInput;
    return info;
  }

  private settleTool(info: ACPToolInfo, update: acp.ToolCallUpdate | acp.ToolCall): void {
    if (info.done || (info.status !== 'completed' && info.status !== 'failed')) return;
    info.done = true;
    this.toolFinishedInStep = true;
    const output = update.rawOutput ?? textOfContent(update.content) ?? null;
    if (info.status === 'failed') {
      const error = typeof output === 'string' ? output : JSON.stringify(output);
      this.options.emit({ type: 'tool-error', toolCallId: info.toolCallId, toolName: info.toolName, input: info.input, error });
      this.toolResults.push({ toolCallId: info.toolCallId, toolName: info.toolName, input: info.input, output, error });
      return;
    }
    const part = { type: 'tool-result' as const, toolCallId: info.toolCallId, toolName: info.toolName, input: info.input, output, providerExecuted: info.providerExecuted, kind: info.kind, locations: info.locations };
    this.options.emit(part);
    this.toolResults.push({ toolCallId: info.toolCallId, toolName: info.toolName, input: info.input, output });
  }

  /** Marks a tool the user denied (permission rejected). */
  denied(toolCallId: string, reason: string | undefined): void {
    const info = this.tools.get(toolCallId);
    this.options.emit({ type: 'tool-output-denied', toolCallId, toolName: info?.toolName ?? 'unknown', reason });
  }

  /** Registers a tool from a permission request that arrived before its `tool_call`. */
  toolFromPermission(toolCall: acp.ToolCallUpdate): ACPToolInfo {
    return this.upsertTool(toolCall);
  }

  handle(update: acp.SessionUpdate): void {
    const emit = this.options.emit;
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        this.content();
        if (update.content.type === 'text') {
          this.text += update.content.text;
          emit({ type: 'text-delta', id: `text-${this.step}`, text: update.content.text });
        } else emit({ type: 'data', name: 'acp-content', value: json(update.content) });
        return;
      case 'agent_thought_chunk':
        this.content();
        if (update.content.type === 'text') {
          this.reasoning += update.content.text;
          emit({ type: 'reasoning-delta', id: `reasoning-${this.step}`, text: update.content.text });
        }
        return;
      case 'user_message_chunk':
        return; // the agent echoing or replaying the user's words
      case 'tool_call':
      case 'tool_call_update': {
        const info = this.upsertTool(update);
        this.settleTool(info, update);
        return;
      }
      case 'plan':
        emit({ type: 'plan', entries: update.entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority })) });
        return;
      case 'current_mode_update':
        emit({ type: 'data', name: 'acp-mode', value: { currentModeId: update.currentModeId } });
        return;
      case 'config_option_update':
        emit({ type: 'data', name: 'acp-config-options', value: json(update.configOptions) });
        return;
      case 'session_info_update':
        emit({ type: 'data', name: 'acp-session-info', value: json({ title: update.title, updatedAt: update.updatedAt }) });
        return;
      case 'usage_update':
        this.contextUsed = update.used;
        emit({ type: 'data', name: 'acp-usage', value: json({ used: update.used, size: update.size, cost: update.cost ?? null }) });
        return;
      case 'available_commands_update':
        emit({ type: 'data', name: 'acp-commands', value: update.availableCommands.map((c) => c.name) });
        return;
      case 'notice':
        emit({ type: 'data', name: 'acp-notice', value: json({ severity: update.severity, title: update.title, description: update.description }) });
        return;
      case 'compaction_update':
        emit({ type: 'data', name: 'acp-compaction', value: json({ compactionId: update.compactionId, status: update.status, error: update.error }) });
        // Patch semantics: an absent summary keeps what the chunks built, null or [] clears it.
        if (update.summary !== undefined) this.compactions.set(update.compactionId, textOfBlocks(update.summary ?? []));
        if (update.status === 'completed') {
          emit({ type: 'compaction', trigger: 'agent', summary: this.compactions.get(update.compactionId) ?? '', tokensBefore: this.contextUsed });
          this.compactions.delete(update.compactionId);
        }
        return;
      case 'compaction_summary_chunk':
        this.compactions.set(update.compactionId, (this.compactions.get(update.compactionId) ?? '') + textOfBlocks([update.content]));
        return;
      default:
        emit({ type: 'data', name: 'acp-update', value: json(update) });
    }
  }
}

function textOfBlocks(blocks: ReadonlyArray<{ type: string; text?: string }>): string {
  return blocks.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
}
