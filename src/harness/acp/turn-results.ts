import type { TurnResult } from '../../engine/engine.ts';
import { emptyUsage, type FinishReason, type HarnessStreamPart } from '../../engine/events.ts';
import type { SuspendReason } from '../../engine/turn-types.ts';
import type { TurnRecord } from '../../store/journal.ts';
import { AcxError, TurnAbortedError } from '../../core/errors.ts';
import type { ActiveTurn } from './active-turn.ts';
import type { TurnJournal } from './turn-journal.ts';

/** The results an ACP turn returns: from the turn as this process saw it, or from the journal when it ran elsewhere. */

/** A turn's result from its translator's view, with what depends on how it ended. */
export function resultOf(sessionId: string, active: ActiveTurn, resumed: boolean, end: Pick<TurnResult, 'finishReason' | 'usage'> & Partial<TurnResult>): TurnResult {
  return {
    sessionId,
    turnId: active.turnId,
    text: '',
    unspoken: undefined,
    output: undefined,
    steps: active.translator.step,
    toolCalls: [...active.translator.toolCalls],
    toolResults: [...active.translator.toolResults],
    pendingApprovals: [],
    pendingToolCalls: [],
    resumed,
    ...end,
  };
}

/** The finish reason of a turn that waits: for approvals (AI SDK: tool-calls), results of host-run tools, or a pause request. */
export function finishOfSuspension(by: SuspendReason): FinishReason {
  return by === 'approval' ? 'tool-approval' : by === 'tool-result' ? 'tool-calls' : 'other';
}

/**
 * How a turn that ran in another process ended, as the journal shows it, with its parts emitted
 * from the record (its reply as one delta): done, suspended again, failed or cancelled.
 */
export async function endedElsewhere(journal: TurnJournal, turn: TurnRecord, emit: (part: HarnessStreamPart) => void, outputOf: (text: string) => unknown): Promise<TurnResult> {
  if (turn.status === 'cancelled') throw new TurnAbortedError();
  if (turn.status === 'failed') throw new AcxError('acp-prompt-failed', `Turn ${turn.id} failed in the process that ran it: ${turn.error ?? 'no reason recorded'}`);
  const usage = emptyUsage();
  const base = { sessionId: journal.sessionId, turnId: turn.id, unspoken: undefined, usage, resumed: true };
  if (turn.status === 'suspended') {
    const { suspendedBy, pendingApprovals, pendingToolCalls } = await journal.continuation(turn);
    const finishReason = finishOfSuspension(suspendedBy as SuspendReason);
    emit({ type: 'finish', finishReason, totalUsage: usage });
    return { ...base, text: '', output: undefined, finishReason, steps: turn.steps, toolCalls: [], toolResults: [], pendingApprovals, pendingToolCalls, suspendedBy: suspendedBy as SuspendReason };
  }
  const recorded = await journal.recordedResult(turn);
  emit({ type: 'start-step', step: 1 });
  if (recorded.text) emit({ type: 'text-delta', id: 'text-1', text: recorded.text });
  emit({ type: 'finish-step', step: 1, finishReason: recorded.finishReason, usage });
  emit({ type: 'finish', finishReason: recorded.finishReason, totalUsage: usage });
  return {
    ...base,
    text: recorded.text,
    output: outputOf(recorded.text),
    finishReason: recorded.finishReason,
    steps: recorded.steps,
    toolCalls: [...recorded.toolCalls],
    toolResults: [...recorded.toolResults],
    pendingApprovals: [],
    pendingToolCalls: [],
  };
}
