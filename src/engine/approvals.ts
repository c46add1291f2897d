import { decidedInput } from '../core/hooks.ts';
import type { CallRecord } from '../store/journal.ts';
import { needsApproval } from '../tools/permission.ts';
import type { Tool } from '../tools/tool.ts';
import type { EngineContext } from './engine-context.ts';
import type { ApprovalRequest, FinishReason } from './events.ts';
import { commit } from './persistence.ts';
import { type TurnState, turnResult } from './turn-state.ts';
import type { ApprovalDecision, ContinueInput, SuspendReason, TurnResult } from './turn-types.ts';

/** A suspended turn's open calls, as the caller answers them. */
export function pendingOf(open: readonly CallRecord[]): Pick<TurnResult, 'pendingApprovals' | 'pendingToolCalls'> {
  return {
    pendingApprovals: open
      .filter((call) => call.status === 'awaiting-approval')
      .map((call) => ({ approvalId: call.callId, toolCallId: call.callId, toolName: call.toolName, input: decidedInput(call) })),
    pendingToolCalls: open
      .filter((call) => call.status === 'awaiting-result')
      .map((call) => ({ toolCallId: call.callId, toolName: call.toolName, input: decidedInput(call) })),
  };
}

/** What a suspended turn waits for, read from its pending calls. */
export function suspendReasonOf(pending: Pick<TurnResult, 'pendingApprovals' | 'pendingToolCalls'>): SuspendReason {
  return pending.pendingApprovals.length > 0 ? 'approval' : pending.pendingToolCalls.length > 0 ? 'tool-result' : 'request';
}

/** The decisions a continueTurn call brings, by approval id (an approval's id is its call's id). */
export function decisionsOf(input: ContinueInput): ReadonlyMap<string, ApprovalDecision> {
  return new Map((input.approvals ?? []).map((decision) => [decision.approvalId, decision]));
}

/**
 * Whether a call may run: undefined when its tool needs no approval in this permission mode, the
 * decision when one is journaled, given with continueTurn or answered inline (it is journaled
 * before the call runs), or 'waiting' when the turn must suspend for it.
 */
export async function approve(
  ctx: EngineContext,
  state: TurnState,
  call: CallRecord,
  tool: Tool,
  decisions: ReadonlyMap<string, ApprovalDecision> | undefined,
): Promise<ApprovalDecision | 'waiting' | undefined> {
  if (call.approval) return { approvalId: call.callId, ...call.approval };
  if (!needsApproval(tool, ctx.options.permissionMode)) return undefined;
  const given = decisions?.get(call.callId);
  if (given) {
    await ctx.journal.recordApproval(call, { approved: given.approved, ...(given.reason ? { reason: given.reason } : {}) });
    return given;
  }
  const request: ApprovalRequest = {
    approvalId: call.callId,
    toolCallId: call.callId,
    toolName: call.toolName,
    input: decidedInput(call),
  };
  state.emit({ type: 'tool-approval-request', ...request });
  if (!state.hooks.onApprovalRequest) {
    await ctx.journal.setCallStatus(call, 'awaiting-approval');
    return 'waiting';
  }
  const answer = await state.hooks.onApprovalRequest(request);
  await ctx.journal.recordApproval(call, answer);
  ctx.logger.info('approval', { tool: call.toolName, approved: answer.approved });
  return { approvalId: call.callId, ...answer };
}

/** Suspends the turn (journaled, so any process can continue it) and says what it waits for. */
export async function suspend(ctx: EngineContext, state: TurnState): Promise<TurnResult> {
  await commit(ctx, state, () => ctx.journal.updateTurn(state.turn.id, { status: 'suspended' }));
  const pending = pendingOf(await ctx.journal.openCalls(state.turn.id));
  const suspendedBy = suspendReasonOf(pending);
  ctx.logger.info('turn suspended', {
    session: state.sessionId,
    turn: state.turn.id,
    by: suspendedBy,
    approvals: pending.pendingApprovals.length,
    awaiting_results: pending.pendingToolCalls.length,
  });
  const finishReason: FinishReason = { approval: 'tool-approval', 'tool-result': 'tool-calls', request: 'other' }[suspendedBy] as FinishReason;
  state.emit({ type: 'finish', finishReason, totalUsage: state.usage });
  return turnResult(state, { text: '', unspoken: undefined, output: undefined, finishReason, ...pending, suspendedBy });
}
