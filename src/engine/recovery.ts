import { AcxError } from '../core/errors.ts';
import type { TurnRecord } from '../store/journal.ts';
import { decisionsOf, suspend } from './approvals.ts';
import { isUnspoken } from './brief.ts';
import { runStepCalls } from './calls.ts';
import type { EngineContext } from './engine-context.ts';
import { finish } from './endings.ts';
import { emptyUsage } from './events.ts';
import { drive } from './loop.ts';
import { recordResult, settleStep } from './persistence.ts';
import { parseStructuredOutput } from './structured-output.ts';
import { errorOutput, toToolResultOutput } from './tool-output.ts';
import { hasToolCalls, loadTranscript, textOf } from './transcript.ts';
import { turnActivity } from './turn-activity.ts';
import { newState, traced, type TurnState } from './turn-state.ts';
import type { ContinueInput, TurnInput, TurnResult } from './turn-types.ts';

/**
 * Taking up an unfinished turn by evidence: what the journal shows already happened stands and
 * is never done again; only what it does not show is done now (settleOpenStep states the rules).
 */

/** Continues a session's unfinished turn (see ContinueInput.claimSuspended for the claim). */
export async function continueTurn(ctx: EngineContext, input: ContinueInput): Promise<TurnResult> {
  const { journal } = ctx;
  const turn = await journal.unfinishedTurn(input.sessionId);
  if (!turn) {
    throw new AcxError('no-unfinished-turn', `Session ${input.sessionId} has no unfinished turn to continue.`, {
      hint: 'Send a new message instead.',
    });
  }
  if (input.claimSuspended !== undefined && (turn.id !== input.claimSuspended || !(await journal.claimSuspended(turn.id)))) throw turnClaimed(input.claimSuspended, input.sessionId);
  const state = await newState(ctx, turn, input, { addressed: false, resumed: true });
  return traced(ctx, state, () => resume(ctx, state, input));
}

/** A suspended turn another call answered first (first answer wins, across processes; the ACP harness's too). */
export function turnClaimed(turnId: string, sessionId: string): AcxError {
  return new AcxError('turn-claimed', `Turn ${turnId} of session ${sessionId} is already being continued (by another process or call).`, {
    hint: 'List the paused turns again (agent.listSuspended()); answer only those still listed.',
  });
}

/** The same turn id again: never take its message twice (see TurnInput.turnId). */
export async function rerunTurn(ctx: EngineContext, turn: TurnRecord, input: TurnInput): Promise<TurnResult> {
  const { journal, logger } = ctx;
  if (turn.sessionId !== input.sessionId) {
    throw new AcxError('turn-id-taken', `Turn id ${turn.id} belongs to another session (${turn.sessionId}).`, {
      hint: 'Derive turn ids from the session and the message, so that they are unique per session.',
    });
  }
  const { onApprovalRequest, onElicitation, abortSignal, emit, observe, pauseRequested, attachments } = input;
  const hooks: ContinueInput = { sessionId: turn.sessionId, onApprovalRequest, onElicitation, abortSignal, emit, observe, pauseRequested, attachments };
  if (turn.status === 'done') {
    logger.info('turn already done', { session: turn.sessionId, turn: turn.id });
    return await recordedResult(ctx, turn);
  }
  const newer = await journal.unfinishedTurn(turn.sessionId);
  if (newer && newer.id !== turn.id) {
    throw new AcxError('turn-unfinished', `Session ${turn.sessionId} has another unfinished turn (${newer.id}).`, {
      hint: 'Continue it first.',
    });
  }
  if (turn.status === 'failed' || turn.status === 'cancelled') {
    // A compaction after it may have summarised its messages away: then there is no evidence
    // left of what it already did, and continuing it could repeat its side effects.
    const evidence = (await loadTranscript(journal, turn.sessionId)).some((entry) => entry.turnId === turn.id && entry.kind === 'user');
    if (!evidence) {
      logger.error('turn abandoned', { session: turn.sessionId, turn: turn.id, status: turn.status, reason: 'its messages were compacted away' });
      throw new AcxError('turn-compacted', `Turn ${turn.id} ${turn.status === 'failed' ? 'failed' : 'was cancelled'} and its messages have since been compacted into a summary; it cannot be continued safely.`, {
        hint: 'If the message still needs an answer, send it as a new turn (another turn id).',
      });
    }
    // Its settled steps stand; the turn picks up where it stopped, by evidence.
    await journal.updateTurn(turn.id, { status: 'running', error: null });
  }
  return continueTurn(ctx, hooks);
}

/** What a finished turn recorded, for a caller that delivered its message again. */
async function recordedResult(ctx: EngineContext, turn: TurnRecord): Promise<TurnResult> {
  const text = turn.finalText ?? '';
  const unspoken = isUnspoken(ctx.options.speech);
  const parsed = ctx.output ? parseStructuredOutput(text, ctx.output) : undefined;
  const activity = turnActivity(await loadTranscript(ctx.journal, turn.sessionId), turn.id);
  return {
    sessionId: turn.sessionId,
    turnId: turn.id,
    text: unspoken ? '' : text,
    unspoken: unspoken ? text : undefined,
    output: parsed?.ok ? parsed.value : undefined,
    finishReason: 'stop',
    usage: emptyUsage(),
    steps: turn.steps,
    toolCalls: activity.calls,
    toolResults: activity.results,
    pendingApprovals: [],
    pendingToolCalls: [],
    resumed: true,
  };
}

async function resume(ctx: EngineContext, state: TurnState, input: ContinueInput): Promise<TurnResult> {
  const { turn } = state;
  ctx.logger.info('turn resume', { session: input.sessionId, turn: turn.id, steps: state.step });
  const settled = await settleOpenStep(ctx, state, input);
  if (settled === 'suspended') return suspend(ctx, state);
  if (settled === 'none') {
    const last = [...state.transcript].reverse().find((entry) => entry.turnId === turn.id);
    if (last?.kind === 'assistant' && !hasToolCalls(last.message)) {
      // The turn reached its final text before the process stopped: commit it, re-run nothing.
      return finish(ctx, state, textOf(last.message), 'stop');
    }
  }
  return drive(ctx, state);
}

/**
 * Brings the newest unsettled step of a resumed turn to rest, by evidence:
 * a call that never started runs now; a call that started and has no result runs again only
 * when its tool is read-only or idempotent, otherwise the model is told the outcome is unknown.
 * Calls that waited for an approval or a host's result wait again unless this call answers them.
 */
async function settleOpenStep(ctx: EngineContext, state: TurnState, input: ContinueInput): Promise<'settled' | 'suspended' | 'none'> {
  const { journal, logger } = ctx;
  const open = await journal.openCalls(state.turn.id);
  if (open.length === 0) return 'none';
  const step = open[0]!.step;
  const supplied = new Map((input.toolResults ?? []).map((r) => [r.toolCallId, r.output]));
  for (const call of open) {
    if (call.status === 'started') {
      const tool = ctx.tools.get(call.toolName)?.tool;
      const safe = tool && (tool.effect === 'read-only' || tool.effect === 'idempotent');
      if (safe) {
        logger.info('recovery re-run', { tool: call.toolName, call: call.callId, effect: tool.effect });
        await journal.setCallStatus(call, 'pending');
        call.status = 'pending';
      } else {
        logger.warn('recovery outcome unknown', { tool: call.toolName, call: call.callId });
        await recordResult(
          ctx,
          state,
          call,
          errorOutput(
            `The process running this turn stopped while ${call.toolName} was executing. Whether it took effect is unknown; ` +
              'it was not run again because it is not safe to repeat. Check its effect before you retry it.',
          ),
        );
      }
    } else if (call.status === 'awaiting-result' && supplied.has(call.callId)) {
      await recordResult(ctx, state, call, toToolResultOutput(supplied.get(call.callId), { vision: ctx.options.model.vision }));
    } else if (call.status === 'awaiting-approval' || call.status === 'awaiting-result') {
      await journal.setCallStatus(call, 'pending');
      call.status = 'pending';
    }
  }
  const outcome = await runStepCalls(ctx, state, open, decisionsOf(input));
  if (outcome === 'suspended') return 'suspended';
  settleStep(ctx, state, step, open);
  return 'settled';
}
