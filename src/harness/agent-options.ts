import type { AsyncIterableStream, ModelMessage, UserContent } from 'ai';
import type { Addressed, SpeechMode } from '../engine/brief.ts';
import type { ApprovalDecision, TurnHooks, TurnResult } from '../engine/engine.ts';
import type { TurnAnswerers } from '../engine/turn-types.ts';
import type { PermissionMode } from '../tools/permission.ts';
import type { InputSchema } from '../tools/schema.ts';
import type { SdkTool } from '../tools/ai-sdk-tool.ts';
import type { Tool } from '../tools/tool.ts';
import type { AgentSession } from './agent-session.ts';
import type { AgentGuardrails, AgentHooks } from './guards.ts';
import type { AgentConfig, Harness } from './harness.ts';
import type { PendingApprovalPolicy } from './pending-turn.ts';
import type { SessionState } from './session-state.ts';
import type { SdkEndEvent, SdkPart, SdkStep } from './sdk-turn.ts';
import type { TurnStreamSettings } from './turn-streams.ts';

// What HarnessAgent's constructor, createSession and its calls take (harness-agent.ts runs them).

export interface HarnessAgentSettings extends TurnAnswerers {
  /**
   * The session a call joins when it names none (no `session`, no `options.sessionId`): the AI
   * SDK's UI helpers pass neither unless told. Unset, such a call opens a new session.
   */
  sessionId?: string;
  harness: Harness;
  /** A stable identity for the agent's memory and idempotency keys. */
  id?: string;
  /** For harnesses that pick their own model (ACP agents); the engine harness is given its model directly. */
  model?: string;
  instructions?: string;
  /** Skills the harness may load natively (written to an ACP agent's skills directory). */
  skills?: AgentConfig['skills'];
  /** acx tools, or a record of acx tools and tools made with the AI SDK's `tool()` (those get kind `other`: they ask unless allow-all). */
  tools?: readonly Tool[] | Record<string, (Omit<Tool, 'name'> & { name?: string }) | SdkTool>;
  activeTools?: readonly string[];
  inactiveTools?: readonly string[];
  /** Structured output: the final answer must be JSON matching this schema. */
  output?: InputSchema;
  permissionMode?: PermissionMode;
  speech?: SpeechMode;
  /**
   * A new message sent while a turn waits for an approval (or a host tool's result): 'decline'
   * (default) answers the waiting calls as not run — the model is told the user moved on without
   * approving — and answers the message; 'error' refuses the message (`turn-suspended`) and the
   * turn keeps waiting. See pending-turn.ts.
   */
  pendingApprovalOnNewMessage?: PendingApprovalPolicy;
  /**
   * Streamed turns are kept, part by part, so that a client that dropped, reloaded or reached
   * another server reads them again (resumeStream, resumeUIStreamResponse). Default: in the
   * harness's store (the engine harness: streams.db beside its journal, or its PostgreSQL store),
   * finished ones for 10 minutes. `false` keeps none.
   */
  streams?: TurnStreamSettings | false;
  /** Hooks at the turn's decision points (docs/hooks.md); a session's own add to these. */
  hooks?: AgentHooks<TurnResult>;
  /** Input, output and tool guardrails: a tripped one ends the turn with GuardrailTrippedError. */
  guardrails?: AgentGuardrails;
}

/** A streamed turn read again (agent.resumeStream): its parts from the first, then live until it ends. */
export interface ResumedStream {
  turnId: string;
  /** The AI SDK's parts, as `stream()`'s `fullStream` gave them (and a `custom` part `acx.reset-step` where a step started over). */
  stream: AsyncIterableStream<SdkPart>;
}

export interface CreateSessionOptions {
  sessionId?: string;
  /** Reopen a detached session (the state detach() returned). */
  resumeFrom?: SessionState;
  /** Reopen a session to continue its unfinished turn (detach()'s state with a continuation, or a listSuspended() entry's state). */
  continueFrom?: SessionState;
  /** This session's hooks: they run after the agent's, which stay in force (docs/hooks.md). */
  hooks?: AgentHooks<TurnResult>;
  /** This session's guardrails: added to the agent's, never replacing them. */
  guardrails?: AgentGuardrails;
}

/** `options` of an AI SDK call (createAgentUIStreamResponse({ agent, options })): which session the chat is. */
export interface HarnessCallOptions {
  sessionId?: string;
}

/** Callbacks of a call, as the AI SDK names them (the deprecated names too). Awaited before the call resolves. */
export interface TurnCallbacks {
  onStepFinish?: (step: SdkStep) => PromiseLike<void> | void;
  onStepEnd?: (step: SdkStep) => PromiseLike<void> | void;
  onFinish?: (event: SdkEndEvent) => PromiseLike<void> | void;
  onEnd?: (event: SdkEndEvent) => PromiseLike<void> | void;
}

export interface GenerateOptions extends TurnCallbacks, TurnAnswerers {
  session?: AgentSession;
  /**
   * The message: text or user content, or (as the AI SDK sends it) the whole chat as model
   * messages, of which only the newest counts — the harness keeps the history. Trailing
   * tool-approval-response parts continue the turn that asked instead.
   */
  prompt?: string | UserContent | ModelMessage[];
  /** The AI SDK's alternative to `prompt`. */
  messages?: ModelMessage[];
  options?: HarnessCallOptions | undefined;
  addressed?: Addressed;
  /** Images shown with this message on each of the turn's model calls, never kept in the transcript (native engine). */
  attachments?: TurnHooks['attachments'];
  /**
   * An id for this turn that makes delivering the same message twice safe: if the session already
   * has a turn with this id, a finished one returns what it recorded (nothing runs again) and an
   * unfinished or failed one is continued by evidence. Native engine only.
   */
  turnId?: string;
  abortSignal?: AbortSignal;
}

export interface ContinueOptions extends TurnCallbacks, TurnAnswerers {
  session: AgentSession;
  approvals?: readonly ApprovalDecision[];
  toolResults?: ReadonlyArray<{ toolCallId: string; output: unknown }>;
  abortSignal?: AbortSignal;
}
