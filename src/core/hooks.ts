import type { ModelMessage, UserContent } from 'ai';

/**
 * The vocabulary of hooks and guardrails, shared by the engine, the ACP adapter and HarnessAgent
 * (which builds a TurnGuards from what its user set: harness/guards.ts). A hook decides or
 * adjusts; a guardrail only checks, and a tripped one ends the turn (GuardrailTrippedError).
 */

/** A tool call as beforeToolCall hooks and tool guardrails see it. */
export interface ToolCallInfo {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  toolName: string;
  /** The call's arguments (as a hook before this one rewrote them, if one did). */
  input: unknown;
  /**
   * `acx`: a tool acx runs (any tool on the engine; a host tool on ACP). `agent`: an ACP agent's
   * own tool, seen through its permission request (its input cannot be rewritten).
   */
  runBy: 'acx' | 'agent';
}

/**
 * What beforeToolCall answers. Nothing (undefined): no opinion, the permission mode and approvals
 * decide as usual. `allow`: run it, and the hook's answer counts as the host's approval (no
 * approval is asked). `deny`: it does not run, and the model reads `reason` as its result.
 * `rewrite`: it runs with `input` instead (approvals, if its kind needs them, are asked about it).
 */
export type BeforeToolCallResult = { decision: 'allow' } | { decision: 'deny'; reason: string } | { decision: 'rewrite'; input: unknown } | undefined | void;

/** A call that ran, as afterToolCall sees it: its output, or its error (the message the model would read). */
export type ToolCallOutcome = ToolCallInfo & ({ output: unknown; error?: undefined } | { output?: undefined; error: string });

/** What afterToolCall answers: nothing keeps the result; `output` or `error` replaces it before it is journaled. */
export type AfterToolCallResult = { output: unknown } | { error: string } | undefined | void;

/** A model call about to be made (engine only: an ACP agent calls its model itself). */
export interface ModelCallInfo {
  sessionId: string;
  turnId: string;
  step: number;
  /**
   * The transcript the model reads, oldest first (the volatile brief is added after it). Read
   * only: these are the engine's own objects, kept for the session's later turns.
   */
  messages: readonly ModelMessage[];
  /** The tools the call offers, by name. */
  tools: readonly string[];
}

/** What beforeModelCall answers: nothing, or the tools this call may offer (a subset of `tools`). */
export type BeforeModelCallResult = { activeTools: readonly string[] } | undefined | void;

export type GuardrailKind = 'input' | 'output' | 'tool';

/** What a guardrail's check answers: tripped (with the reason) or not; nothing means not tripped. */
export interface GuardrailVerdict {
  tripped: boolean;
  reason?: string;
}

/** A named check. Tripped, it ends the turn before what it guards happens (GuardrailTrippedError names it). */
export interface Guardrail<ARGS> {
  name: string;
  check(args: ARGS): GuardrailVerdict | undefined | void | PromiseLike<GuardrailVerdict | undefined | void>;
}

/** What an input guardrail checks: the user's message, before the model sees it. */
export interface InputGuardrailArgs {
  sessionId: string;
  prompt: string | UserContent;
  /** The message's text (its text parts joined). */
  text: string;
}

/** What an output guardrail checks: the turn's final text, before it is returned or recorded as the answer. */
export interface OutputGuardrailArgs {
  sessionId: string;
  turnId: string;
  text: string;
}

export interface GuardrailTrip {
  guardrail: string;
  kind: GuardrailKind;
  reason: string;
}

/**
 * The decision about one tool call, as a harness journals it before the call runs (so a resumed
 * turn reads it instead of asking again). `pass`: no hook decided, permissions apply; `allow`: a
 * hook approved it. `input` is present when a hook rewrote the arguments.
 */
export type CallDecision =
  | { decision: 'pass' | 'allow'; input?: unknown }
  | { decision: 'deny'; reason: string }
  | { decision: 'tripped'; guardrail: string; reason: string };

/** The arguments a decided call runs with: the rewritten ones, else the model's. */
export function decidedInput(call: { input: unknown; decision?: CallDecision | null | undefined }): unknown {
  const decision = call.decision;
  return decision && 'input' in decision ? decision.input : call.input;
}

/**
 * What a harness asks at its decision points, in the order its user set them (the agent's first,
 * then the session's). Errors a hook or guardrail throws come back as AcxError `hook-failed`.
 */
export interface TurnGuards {
  /** Whether any beforeModelCall hook is set (a harness that cannot run them refuses). */
  readonly hasBeforeModelCall: boolean;
  /** Whether any afterToolCall hook is set. */
  readonly hasAfterToolCall: boolean;
  /** Whether any output guardrail is set (then a streamed reply is held until they pass: harness/held-reply.ts). */
  readonly hasOutputGuardrails: boolean;
  /** Input guardrails on a message (`text` is read from `prompt`). */
  checkInput(args: Omit<InputGuardrailArgs, 'text'>): Promise<GuardrailTrip | undefined>;
  /** beforeToolCall hooks, then tool guardrails on the arguments that would run. */
  decideCall(call: ToolCallInfo): Promise<CallDecision>;
  /** afterToolCall hooks: the result as it is to be journaled. */
  afterCall(outcome: ToolCallOutcome): Promise<ToolCallOutcome>;
  /** beforeModelCall hooks: the tools the call may offer, or undefined for all of them. */
  beforeModelCall(info: ModelCallInfo): Promise<readonly string[] | undefined>;
  checkOutput(args: OutputGuardrailArgs): Promise<GuardrailTrip | undefined>;
}
