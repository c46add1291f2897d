import type { ApprovalRequest } from '../engine/events.ts';
import type { SuspendReason, TurnToolCall } from '../engine/engine.ts';
import { AcxError } from '../core/errors.ts';

/**
 * The session attribute naming the harness a journaled session belongs to when it is not the
 * engine's (an ACP harness's: `acp:<id>`): a journal shared by both lists each one's paused turns
 * apart. Engine sessions carry none.
 */
export const HARNESS_ATTRIBUTE = 'harness';

/**
 * What `session.detach()` hands back and `createSession({ resumeFrom | continueFrom })` takes: a
 * plain JSON object naming the session (its history stays in the harness — the journal, a kept
 * ACP sandbox), so it can be stored anywhere and used by another process. With a turn unfinished
 * it carries the continuation: which turn, and what it waits for.
 */
export interface SessionState {
  type: 'acx-session';
  version: 1;
  harnessId: string;
  agentId: string;
  sessionId: string;
  continuation?: TurnContinuation;
}

export interface TurnContinuation {
  turnId: string;
  /** What the turn waits for; `interrupted` when its process stopped mid-turn (it continues by evidence). */
  suspendedBy: SuspendReason | 'interrupted';
  pendingApprovals: ApprovalRequest[];
  pendingToolCalls: TurnToolCall[];
}

/** A session whose turn is paused for its caller, as `agent.listSuspended()` lists it. */
export interface SuspendedSession extends TurnContinuation {
  sessionId: string;
  startedAt: string;
  /** Pass as `createSession({ continueFrom: state })` to answer it, from this process or another. */
  state: SessionState & { continuation: TurnContinuation };
}

/** Checks a state object against the agent that is to open it; says what is wrong and what to do. */
export function readSessionState(
  value: unknown,
  which: 'resumeFrom' | 'continueFrom',
  expected: { harnessId: string; agentId: string },
): SessionState {
  const state = value as Partial<SessionState> | null;
  if (!state || typeof state !== 'object' || state.type !== 'acx-session' || state.version !== 1 || typeof state.sessionId !== 'string' || !state.sessionId) {
    throw new AcxError('session-state-invalid', `${which} is not a session state (expected the object session.detach() returned).`, {
      hint: 'Pass what detach() or listSuspended() gave you, unchanged (JSON.parse it if you stored it as text).',
    });
  }
  if (state.harnessId !== expected.harnessId) {
    throw new AcxError('session-state-invalid', `${which} is a session of the harness ${String(state.harnessId)}; this agent runs on ${expected.harnessId}.`, {
      hint: 'Open it with an agent on the same harness.',
    });
  }
  if (state.agentId !== expected.agentId) {
    throw new AcxError('session-state-invalid', `${which} is a session of the agent ${String(state.agentId)}; this agent is ${expected.agentId}.`, {
      hint: 'Open it with the agent that detached it (the same id).',
    });
  }
  if (which === 'continueFrom' && (!state.continuation || typeof state.continuation.turnId !== 'string')) {
    throw new AcxError('session-state-invalid', `continueFrom has no unfinished turn to continue (session ${state.sessionId}).`, {
      hint: 'Use resumeFrom to reopen a session between turns.',
    });
  }
  return state as SessionState;
}
