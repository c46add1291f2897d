import type { ElicitationHandler } from '../core/elicitation.ts';
import type { UserContent } from 'ai';
import type { TurnGuards } from '../core/hooks.ts';
import type { MemoryProvider } from '../memory/provider.ts';
import type { ModelParams } from '../model/params.ts';
import type { ResolvedModel } from '../model/providers.ts';
import type { ProviderBuiltins } from '../model/builtins.ts';
import type { JournalStore } from '../store/journal-store.ts';
import type { SessionPrompts } from './provider-prompt.ts';
import type { PermissionMode } from '../tools/permission.ts';
import type { InputSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import type { Logger } from '../util/logger.ts';
import type { Addressed, SpeechMode } from './brief.ts';
import type { ApprovalRequest, FinishReason, HarnessStreamPart, Usage } from './events.ts';
import type { TelemetrySettings } from './telemetry.ts';

// The engine's public types: what a caller passes in and gets back (re-exported by engine.ts).

/** The memory operations the engine uses; a MemoryProvider satisfies it. */
export type EngineMemory = Pick<MemoryProvider, 'name' | 'observe' | 'context' | 'remember'>;

/** Durability boundaries, reported so tests can kill the process exactly there. */
export type Checkpoint =
  | { at: 'turn-started'; turnId: string }
  | { at: 'model-call'; turnId: string; step: number }
  | { at: 'assistant-persisted'; turnId: string; step: number }
  /** The hooks' and tool guardrails' decision about a call is journaled (only when the engine has guards). */
  | { at: 'call-decided'; turnId: string; step: number; toolName: string; callId: string }
  | { at: 'tool-started'; turnId: string; step: number; toolName: string; callId: string }
  | { at: 'tool-finished'; turnId: string; step: number; toolName: string; callId: string }
  | { at: 'step-settled'; turnId: string; step: number }
  | { at: 'turn-ended'; turnId: string };

export interface EngineOptions {
  model: ResolvedModel;
  journal: JournalStore;
  agentId?: string;
  instructions?: string;
  tools?: readonly Tool[];
  /** The provider's server-side built-ins (web search, code execution): declared, never run here. */
  builtins?: ProviderBuiltins | undefined;
  maxSteps?: number;
  speech?: SpeechMode;
  permissionMode?: PermissionMode;
  params?: ModelParams;
  /** The configured context ceiling in tokens; 0 disables compaction. */
  contextTokens?: number;
  retries?: number;
  retryBaseMs?: number;
  memory?: EngineMemory;
  output?: InputSchema;
  logger?: Logger;
  clock?: () => Date;
  checkpoint?: (event: Checkpoint) => void;
  /** Extra standing lines for every step's brief (e.g. which optional tools are absent). */
  briefLines?: readonly string[];
  /** Characters of tool results one step keeps in the journal (default 4,096; a cartridge policy may lower it). */
  stepResultBudget?: number;
  /**
   * Whether this engine checks the compaction headroom and warns when it is too small (default
   * true). A harness opening many sessions on one configuration checks it once, not per session.
   */
  warnHeadroom?: boolean;
  /** OpenTelemetry spans for turns, steps, model calls and tool runs (telemetry.ts); off when absent. */
  telemetry?: TelemetrySettings;
  /** Hooks and guardrails, asked at the turn's decision points (guard-points.ts); HarnessAgent builds them. */
  guards?: TurnGuards | undefined;
  /**
   * Where each session's provider prompt is kept between its turns (provider-prompt.ts). A
   * harness that makes an engine per session it opens passes one for all of them, so a session
   * opened again (a worker's next event) converts only what was added since its last turn; by
   * default each engine keeps its own.
   */
  prompts?: SessionPrompts | undefined;
}

export interface ApprovalDecision {
  approvalId: string;
  approved: boolean;
  reason?: string;
}

export interface TurnHooks {
  abortSignal?: AbortSignal | undefined;
  /** Receives the turn's parts as they happen, and asks for streamed model calls (text arrives in deltas). */
  emit?: ((part: HarnessStreamPart) => void) | undefined;
  /**
   * Receives the turn's parts without asking for streamed model calls: a step's text and
   * reasoning arrive as one delta each, after its model call (what generate() reads steps from).
   */
  observe?: ((part: HarnessStreamPart) => void) | undefined;
  /** Answer approvals inline; without it the turn suspends and waits for `continueTurn`. */
  onApprovalRequest?: ((request: ApprovalRequest) => Promise<{ approved: boolean; reason?: string }>) | undefined;
  /**
   * Answers a tool's question for the user while it runs (an MCP server's elicitation), inline
   * like approvals; without it nobody can answer and the tool declines on the user's behalf.
   */
  onElicitation?: ElicitationHandler | undefined;
  /**
   * Asked at each safe point — before every model call, when the previous step has settled and no
   * call is open — whether to pause there. True suspends the turn (journaled, resumable with
   * `continueTurn` from any process); nothing is lost or re-run.
   */
  pauseRequested?: (() => boolean) | undefined;
  /**
   * Images shown with the turn's message on each of its model calls in this process (through the
   * vision gate: described in words to a model without vision), never written to the transcript:
   * a peer's picture is seen on the turn it arrived, and not paid for again on every later one.
   */
  attachments?: readonly TurnAttachment[] | undefined;
  /** Aborted when that pause is asked for, for a harness that acts on it at once instead of asking at its safe points (ACP). */
  pauseSignal?: AbortSignal | undefined;
}

/** An image shown with a turn's message (base64 data). */
export interface TurnAttachment {
  type: 'image';
  data: string;
  mediaType: string;
}

/** Who answers a turn's questions inline: its approvals, and a tool's questions for the user. */
export type TurnAnswerers = Pick<TurnHooks, 'onApprovalRequest' | 'onElicitation'>;

export interface TurnInput extends TurnHooks {
  sessionId: string;
  prompt: string | UserContent;
  /**
   * The message calls for a reply (a mention, a one-on-one): arms the one nudge in tool speech
   * mode, worded for the reason given (a mention wins when both hold).
   */
  addressed?: Addressed;
  /**
   * The turn's id, chosen by the caller to make delivering the same message twice safe (a queue
   * or router that delivers at least once). If the session already has a turn with this id, its
   * message is not taken again: a finished turn returns what it recorded and runs nothing; an
   * unfinished, failed or cancelled one is continued by evidence.
   */
  turnId?: string;
}

export interface ContinueInput extends TurnHooks {
  sessionId: string;
  approvals?: readonly ApprovalDecision[];
  /** Results for calls of tools that have no executor in this host. */
  toolResults?: ReadonlyArray<{ toolCallId: string; output: unknown }>;
  /**
   * The id of the suspended turn this call means to answer: it is claimed first (see
   * Journal.claimSuspended), and a turn another caller already took is refused, not run twice.
   */
  claimSuspended?: string | undefined;
}

export interface TurnToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export interface TurnResult {
  sessionId: string;
  turnId: string;
  /** The reply. Empty in tool speech mode, where the final text is unspoken narration. */
  text: string;
  unspoken: string | undefined;
  output: unknown;
  finishReason: FinishReason;
  usage: Usage;
  steps: number;
  /**
   * Every tool call of the turn, including those made before it was resumed or continued (their
   * inputs and results then as the journal kept them, so possibly capped).
   */
  toolCalls: TurnToolCall[];
  toolResults: Array<TurnToolCall & { output: unknown; error?: string }>;
  pendingApprovals: ApprovalRequest[];
  pendingToolCalls: TurnToolCall[];
  resumed: boolean;
  /** Why a suspended turn waits: approvals, results of host-run tools, or a caller's pause request. */
  suspendedBy?: SuspendReason;
}

export type SuspendReason = 'approval' | 'tool-result' | 'request';
