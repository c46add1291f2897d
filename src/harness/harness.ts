import type { TurnGuards } from '../core/hooks.ts';
import type { ApprovalDecision, TurnHooks, TurnResult } from '../engine/engine.ts';
import type { CompactionReport } from '../engine/events.ts';
import type { SuspendedSession, TurnContinuation } from './session-state.ts';
import type { SessionHistory } from './ui-messages.ts';
import type { ForkOptions, RewindOptions, RewindResult } from './session-branch.ts';
import type { Addressed, SpeechMode } from '../engine/brief.ts';
import type { PermissionMode } from '../tools/permission.ts';
import type { InputSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import type { TurnStreamStore } from '../store/turn-streams.ts';
import type { UserContent } from 'ai';

/**
 * The seam between HarnessAgent and what actually runs a turn: acx's native engine, or an ACP
 * coding agent. A harness owns session history; each turn sends only the newest user message.
 */
export interface AgentConfig {
  agentId: string;
  /** The model to ask the harness for (an ACP agent maps it through its modelMapping). */
  model?: string | undefined;
  instructions: string;
  /** Skills with their bodies, for harnesses that load skills natively (an ACP agent's skills directory). */
  skills?: ReadonlyArray<{ name: string; description: string; body: string }> | undefined;
  tools: readonly Tool[];
  output: InputSchema | undefined;
  permissionMode: PermissionMode;
  speech: SpeechMode;
  /** The session's hooks and guardrails (the agent's and its own: harness/guards.ts); absent when none is set. */
  guards?: TurnGuards | undefined;
}

export interface HarnessRunInput extends TurnHooks {
  prompt: string | UserContent;
  addressed?: Addressed;
  /** Caller-chosen turn id that makes redelivering a message safe (native engine only). */
  turnId?: string;
}

export interface HarnessContinueInput extends TurnHooks {
  approvals?: readonly ApprovalDecision[];
  /** The suspended turn this call answers, claimed so it runs once (native engine; others ignore it). */
  claimSuspended?: string | undefined;
  toolResults?: ReadonlyArray<{ toolCallId: string; output: unknown }>;
}

export interface HarnessSession {
  readonly id: string;
  hasUnfinishedTurn(): Promise<boolean>;
  run(input: HarnessRunInput): Promise<TurnResult>;
  continue(input: HarnessContinueInput): Promise<TurnResult>;
  /** Releases processes and handles; the session's history stays and can be reopened by id. */
  detach(): Promise<void>;
  /** Deletes the session's history. */
  destroy(): Promise<void>;
  /** The unfinished turn and what it waits for, for detach()'s continuation state (absent: none survives a detach). */
  continuation?(): Promise<TurnContinuation | undefined>;
  /**
   * Runs one call on the session (its whole generate/continue) as the only one across replicas
   * sharing the store; fails with `session-busy` when the wait for a busy session runs out.
   * Absent when the harness's store is not shared across processes. `fn` gets a signal that
   * aborts if the session's lease is lost while it runs (its turn must stop: another replica may
   * run the session now); the call then fails with that `lease-lost` error.
   */
  exclusive?<T>(fn: (leaseLost: AbortSignal) => Promise<T>): Promise<T>;
  /** Whether run/continue honour `pauseRequested` (suspendTurn); absent means they do not. */
  readonly canSuspend?: boolean;
  /** Gives up an unfinished turn for good (native engine: turn ids are its own); false when there is none. */
  abandonTurn?(turnId: string, reason: string): Promise<boolean>;
  /** The session's history as the harness keeps it, for session.uiMessages(); absent when the history lives in the agent (ACP). */
  history?(): Promise<SessionHistory>;
  /** Copies the session up to a turn into a new session and returns its id; absent when the harness cannot. */
  fork?(options: ForkOptions): Promise<string>;
  /** Cuts the session back to a turn (and with `files`, the files the agent's tools changed since); absent when the harness cannot. */
  rewind?(options: RewindOptions): Promise<RewindResult>;
  /** Runs compaction now, between turns; absent when the harness has no way to (ACP v1). */
  compact?(options: { abortSignal?: AbortSignal | undefined }): Promise<CompactionResult>;
}

/** What `session.compact()` did: the compaction's report, or why it declined. */
export type CompactionResult = ({ compacted: true } & CompactionReport) | { compacted: false; reason: string };

export interface OpenSessionOptions {
  sessionId: string;
  /**
   * The caller asked for this session's history back (createSession resumeFrom / continueFrom),
   * not just for its id: a harness that cannot reopen it with its history refuses with
   * HarnessCapabilityUnsupportedError instead of starting afresh. Absent: a reopen by id.
   */
  explicitResume?: boolean;
}

export interface Harness {
  /** e.g. `engine`, `acp:claude-code`. */
  readonly id: string;
  /**
   * Tools the harness itself runs (an ACP agent's built-ins, as its profile names them). They
   * cannot be filtered with activeTools/inactiveTools: ACP v1 has no portable way to switch a
   * built-in off.
   */
  readonly builtinToolNames?: readonly string[];
  openSession(config: AgentConfig, options: OpenSessionOptions): Promise<HarnessSession>;
  /** Whether a session with this id has state to resume (absent: the harness cannot tell). */
  hasSession?(sessionId: string): Promise<boolean>;
  /**
   * Sessions with a turn paused for its caller, read from durable state so any process can list
   * and answer them. Absent when paused turns live only in the process that ran them.
   */
  listSuspended?(): Promise<Array<Omit<SuspendedSession, 'state'>>>;
  /**
   * Where the harness keeps its streamed turns for readers in any process (stream-reader.ts),
   * opened on the first call and closed by close(); undefined (or absent) when it keeps none.
   */
  turnStreams?(): Promise<TurnStreamStore> | undefined;
  /** Releases anything shared by the harness's sessions (journal handles, bootstraps). */
  close?(): Promise<void>;
}
