import { AcxError } from '../core/errors.ts';
import type { HarnessSession } from './harness.ts';
import type { TurnContinuation } from './session-state.ts';

/**
 * A new message sent while a turn waits for the caller (an approval, a host tool's result): what
 * a person means by typing instead of clicking.
 *   'decline' (default): they moved on. Each waiting call is answered as not run — the model reads
 *            `Not run: the turn was abandoned (the user moved on without approving).` — the waiting
 *            turn ends (journaled cancelled) and the new message is answered.
 *   'error':  the new message is refused with a `turn-suspended` error and the turn keeps waiting,
 *            for an app that insists on an answer first.
 * A turn can wait for nothing else while a new one runs: the model's transcript would hold a tool
 * call without its result. So there is no policy that keeps it waiting and takes the message too.
 */
export type PendingApprovalPolicy = 'decline' | 'error';

type Waiting = Pick<TurnContinuation, 'turnId' | 'pendingApprovals' | 'pendingToolCalls'>;

/** The session's turn that waits for the caller's answers (approvals, host tool results), if any. */
export async function waitingTurn(inner: HarnessSession): Promise<Waiting | undefined> {
  const turn = await inner.continuation?.();
  return turn && (turn.suspendedBy === 'approval' || turn.suspendedBy === 'tool-result') ? turn : undefined;
}

export function isWaiting(turn: Waiting): boolean {
  return turn.pendingApprovals.length > 0 || turn.pendingToolCalls.length > 0;
}

/** Applies the policy to a turn that waits while a new message arrives: declined (ended) or refused (throws). */
export async function moveOn(inner: HarnessSession, waiting: Waiting, policy: PendingApprovalPolicy): Promise<void> {
  const tools = [...new Set([...waiting.pendingApprovals, ...waiting.pendingToolCalls].map((call) => call.toolName))].join(', ');
  if (policy === 'decline' && inner.abandonTurn) {
    const reason = waiting.pendingApprovals.length > 0 ? 'the user moved on without approving' : 'the user moved on without waiting for the result';
    await inner.abandonTurn(waiting.turnId, reason);
    return;
  }
  const what = waiting.pendingApprovals.length > 0 ? 'approval' : 'its result';
  throw new AcxError('turn-suspended', `A tool call (${tools}) is waiting for ${what}, so the new message was not taken.`, {
    hint:
      policy === 'error'
        ? 'Answer it first (approve or deny it), or let a new message decline it: pendingApprovalOnNewMessage: "decline".'
        : 'Answer it with continueGenerate({ session, approvals, toolResults }) before sending a new message.',
  });
}
