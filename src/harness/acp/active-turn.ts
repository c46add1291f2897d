import { randomUUID } from 'node:crypto';
import type * as acp from '@agentclientprotocol/sdk';
import type { TurnHooks } from '../../engine/engine.ts';
import type { ApprovalRequest, HarnessStreamPart } from '../../engine/events.ts';
import type { AcxError } from '../../core/errors.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import type { HostCall } from './host-tools.ts';
import { CANCELLED } from './permissions.ts';
import type { TurnTranslator } from './translate.ts';

/**
 * The state of one turn on an ACP session while its session/prompt is in flight: where its parts
 * go, the permission requests it has not answered yet, and the calls it holds open for results
 * the caller supplies (host tools without `execute`, the agent's questions to the user).
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
}

export interface HeldCall extends HostCall {
  resolve: (output: ToolOutput) => void;
  reject: (error: Error) => void;
}

export function newActiveTurn(hooks: TurnHooks, translator: (emit: (part: HarnessStreamPart) => void) => TurnTranslator): ActiveTurn {
  const active: ActiveTurn = {
    turnId: randomUUID(),
    hooks,
    emit: hooks.emit ?? hooks.observe ?? (() => {}),
    translator: undefined as unknown as TurnTranslator,
    cancelled: false,
    pendingPermissions: new Set(),
    held: new Map(),
    wake: undefined,
    outcome: undefined,
    killTimer: undefined,
    buffer: undefined,
  };
  // The translator emits through the turn, so a pause's buffer or continue()'s caller gets its parts.
  active.translator = translator((part) => active.emit(part));
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

/** Asks the turn's approval handler, announcing the request as a `tool-approval-request` part. */
export async function requestApproval(active: ActiveTurn, call: Omit<ApprovalRequest, 'approvalId'>): Promise<boolean> {
  if (!active.hooks.onApprovalRequest) return false;
  const request: ApprovalRequest = { approvalId: `approval-${randomUUID()}`, ...call };
  active.emit({ type: 'tool-approval-request', ...request });
  const decision = await active.hooks.onApprovalRequest(request);
  return decision.approved;
}

/** Answers the turn's open permission requests `cancelled`. */
export function cancelPermissions(active: ActiveTurn): void {
  for (const settle of [...active.pendingPermissions]) settle(CANCELLED);
}

/** Ends the held calls with an error result (the turn was cancelled or ended first). */
export function rejectHeld(active: ActiveTurn, message: string): void {
  for (const held of [...active.held.values()]) held.reject(new Error(message));
  active.held.clear();
}

export function pendingOf(active: ActiveTurn): HostCall[] {
  return [...active.held.values()].map(({ toolCallId, toolName, input }) => ({ toolCallId, toolName, input }));
}
