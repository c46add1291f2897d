import type * as acp from '@agentclientprotocol/sdk';
import type { TurnHooks } from '../../engine/engine.ts';
import type { ApprovalRequest, HarnessStreamPart } from '../../engine/events.ts';
import { NO_TELEMETRY, type TurnTelemetry } from '../../engine/telemetry.ts';
import type { AcxError } from '../../core/errors.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import type { HostCall } from './host-tools.ts';
import { CANCELLED } from './permissions.ts';
import type { RecordedCalls } from './recorded-calls.ts';
import type { TurnTranslator } from './translate.ts';

/**
 * The state of one turn on an ACP session while its session/prompt is in flight: where its parts
 * go, the permission requests it has not answered yet, and what it waits for from the caller:
 * calls held open for results (host tools without `execute`, the agent's questions to the user)
 * and approvals nobody could give inline.
 */

export interface ActiveTurn {
  turnId: string;
  hooks: TurnHooks;
  /** Where parts go: the current run()/continue() caller, or a buffer while the turn is paused. */
  emit: (part: HarnessStreamPart) => void;
  translator: TurnTranslator;
  cancelled: boolean;
  pendingPermissions: Set<(r: acp.RequestPermissionResponse) => void>;
  /** MCP calls of host tools without `execute`, held open until continue() supplies results. */
  held: Map<string, HeldCall>;
  /** Approvals waiting for continue() (no onApprovalRequest): their ACP request or host call stays open meanwhile. */
  approvals: Map<string, PendingApproval>;
  /** Wakes the turn's driver when a call is held while it waits for the prompt. */
  wake: (() => void) | undefined;
  /** The in-flight session/prompt, as an outcome that never rejects (it may settle while paused). */
  outcome: Promise<{ response: acp.PromptResponse } | { error: unknown }> | undefined;
  /** Ends the outcome when the agent cannot: it was stopped after ignoring session/cancel. */
  forceOutcome?: ((value: { error: unknown }) => void) | undefined;
  /** Set when the host failed the turn (an upstream behind the credential broker is down). */
  failure?: AcxError | undefined;
  killTimer: NodeJS.Timeout | undefined;
  /** Parts produced while paused, replayed to the continue() caller. */
  buffer: HarnessStreamPart[] | undefined;
  /** What the turn did before it was taken up again (after a crash, or in another process), by its journal. */
  recorded: RecordedCalls | undefined;
  /** This session object claimed the suspended turn (continue()), so an answer it reads in the journal is its own. */
  claimed: boolean;
  /** suspendTurn() asked for the turn to pause: the agent is told to cancel, and the turn is suspended instead of aborted. */
  pauseRequested: boolean;
  /** The turn was let go while paused (its hold ran out, or the session closed): it waits in the journal, not here. */
  released: boolean;
  /** Host tool calls running now (a pause waits for them: their outcomes are journaled). */
  running: Set<Promise<unknown>>;
  /** Journal writes of the calls it waits for, done before it is recorded as suspended. */
  writes: Promise<unknown>;
  /** Host calls journaled in this turn, for the ledger's ordinal. */
  hostCalls: number;
  telemetry: TurnTelemetry;
}

export interface HeldCall extends HostCall {
  resolve: (output: ToolOutput) => void;
  reject: (error: Error) => void;
}

export interface PendingApproval {
  request: ApprovalRequest;
  settle: (decision: { approved: boolean; reason?: string | undefined }) => void;
}

export function newActiveTurn(turnId: string, hooks: TurnHooks, translator: (emit: (part: HarnessStreamPart) => void) => TurnTranslator): ActiveTurn {
  const active: ActiveTurn = {
    turnId,
    hooks,
    emit: hooks.emit ?? hooks.observe ?? (() => {}),
    translator: undefined as unknown as TurnTranslator,
    cancelled: false,
    pendingPermissions: new Set(),
    held: new Map(),
    approvals: new Map(),
    wake: undefined,
    outcome: undefined,
    killTimer: undefined,
    buffer: undefined,
    recorded: undefined,
    claimed: false,
    pauseRequested: false,
    released: false,
    running: new Set(),
    writes: Promise.resolve(),
    hostCalls: 0,
    telemetry: NO_TELEMETRY,
  };
  // The translator emits through the turn, so a pause's buffer or continue()'s caller gets its
  // parts; the turn's telemetry sees each one first (its steps open and close on them).
  active.translator = translator((part) => {
    active.telemetry.observe(part);
    active.emit(part);
  });
  return active;
}

/**
 * Holds a call open until continue() supplies its result: it is shown as a tool call, and the
 * turn's driver is woken so the turn pauses (the ACP request stays in flight meanwhile).
 */
export function holdCall(active: ActiveTurn, call: HostCall, signal: AbortSignal | undefined): Promise<ToolOutput> {
  return new Promise<ToolOutput>((resolve, reject) => {
    active.held.set(call.toolCallId, { ...call, resolve, reject });
    signal?.addEventListener(
      'abort',
      () => {
        if (active.held.delete(call.toolCallId)) reject(new Error('The agent cancelled the tool call.'));
      },
      { once: true },
    );
    active.emit({ type: 'tool-call', ...call, providerExecuted: false, dynamic: false } as HarnessStreamPart);
    active.translator.toolCalls.push({ ...call });
    active.wake?.();
  });
}

/**
 * Waits for continue() to decide an approval: announced as a `tool-approval-request` part, and
 * the turn's driver is woken so the turn pauses. A cancelled turn decides it as not approved.
 */
export function awaitDecision(active: ActiveTurn, request: ApprovalRequest): Promise<{ approved: boolean; reason?: string | undefined }> {
  return new Promise((resolve) => {
    active.approvals.set(request.approvalId, {
      request,
      settle: (decision) => {
        active.approvals.delete(request.approvalId);
        resolve(decision);
      },
    });
    active.wake?.();
  });
}

/** Answers the turn's open permission requests `cancelled`, and its waiting approvals as not approved. */
export function cancelPermissions(active: ActiveTurn): void {
  for (const settle of [...active.pendingPermissions]) settle(CANCELLED);
  for (const pending of [...active.approvals.values()]) pending.settle({ approved: false, reason: 'The turn was cancelled.' });
}

/** Ends the held calls with an error result (the turn was cancelled or ended first). */
export function rejectHeld(active: ActiveTurn, message: string): void {
  for (const held of [...active.held.values()]) held.reject(new Error(message));
  active.held.clear();
}

export function pendingOf(active: ActiveTurn): HostCall[] {
  return [...active.held.values()].map(({ toolCallId, toolName, input }) => ({ toolCallId, toolName, input }));
}
