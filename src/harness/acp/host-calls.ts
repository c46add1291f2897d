import type { ApprovalRequest } from '../../engine/events.ts';
import type { CallIdentity } from '../../store/journal.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type ActiveTurn, awaitDecision, holdCall } from './active-turn.ts';
import type { HostCall, HostRun } from './host-tools.ts';
import type { HostOutcome, TurnJournal } from './turn-journal.ts';

/**
 * What the agent asks of acx during a turn, journaled: host tool runs (started before they run,
 * their outcome before the agent gets it, each in a span), calls held for the caller's result,
 * and approvals. A call the turn made before it was taken up is answered as its journal allows
 * (recorded-calls.ts); whatever must wait for the caller is journaled as awaited, so any process
 * can list and answer it.
 */

export interface HostCallContext {
  journal: TurnJournal;
  log: Logger;
}

export type Decision = { approved: boolean; reason?: string | undefined };

/** Runs a host tool with `execute` for the agent; between turns (no `active`) it just runs. */
export async function runHostCall(ctx: HostCallContext, active: ActiveTurn | undefined, call: HostRun, execute: (idempotencyKey?: string) => Promise<ToolOutput>): Promise<ToolOutput> {
  if (!active || active.cancelled) return execute();
  if (active.pauseRequested) throw new AcxError('acp-turn-pausing', `${call.toolName} did not run: the turn is pausing.`, { hint: 'Call it again when the turn goes on.' });
  const recorded = active.recorded?.takeHostCall(call.toolName, call.input, call.effect);
  if (recorded?.kind === 'done') {
    ctx.log.info('acp host call answered from the journal', { tool: call.toolName });
    return replay(recorded.outcome);
  }
  if (recorded?.kind === 'unknown') {
    ctx.log.warn('acp host call not run again', { tool: call.toolName, why: 'it started before the turn was interrupted and its outcome is unknown' });
    throw new AcxError('acp-outcome-unknown', `${call.toolName} was not run again: it started before the turn was interrupted and whether it took effect is unknown; it is not safe to repeat.`, {
      hint: 'Check its effect before you do it another way.',
    });
  }
  const run = journaledRun(ctx, active, call, recorded?.kind === 'rerun' ? recorded.idempotencyKey : undefined, execute);
  active.running.add(run);
  try {
    return await run;
  } finally {
    active.running.delete(run);
  }
}

/** Durability: the call is journaled as started before it runs, and its outcome before the agent gets it. */
async function journaledRun(ctx: HostCallContext, active: ActiveTurn, call: HostRun, key: string | undefined, execute: (idempotencyKey?: string) => Promise<ToolOutput>): Promise<ToolOutput> {
  const identity: CallIdentity = { turnId: active.turnId, step: active.translator.step, callId: key ?? call.idempotencyKey, ordinal: active.hostCalls++, toolName: call.toolName, input: call.input };
  await ctx.journal.hostCallStarted(identity);
  let output: ToolOutput;
  const outcome = await active.telemetry.toolRun({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input }, async (): Promise<HostOutcome> => {
    try {
      output = await execute(key);
      return { ok: true, output: output ?? null };
    } catch (error) {
      return { ok: false, error: AcxError.isInstance(error) ? error.describe() : errorMessage(error) };
    }
  });
  await ctx.journal.hostCallFinished(identity, outcome);
  return outcome.ok ? output! : replay(outcome);
}

/**
 * A call the caller answers (a host tool without `execute`, the agent's question to the user):
 * held open until continue() supplies its result, the turn pausing meanwhile. One whose result
 * was supplied before the turn was taken up is answered from the journal.
 */
export function holdForResult(ctx: HostCallContext, active: ActiveTurn, call: HostCall, signal: AbortSignal | undefined): Promise<ToolOutput> {
  const recorded = active.recorded?.takeHostCall(call.toolName, call.input, 'read-only');
  if (recorded?.kind === 'done') return replay(recorded.outcome);
  const held = holdCall(active, call, signal);
  journalWait(ctx, active, call, 'awaiting-result');
  ctx.log.info('acp host call awaiting a result', { tool: call.toolName, toolCallId: call.toolCallId });
  return held;
}

/**
 * An approval the turn needs: the decision recorded for the same call when the turn was taken
 * up, else the turn's onApprovalRequest, else the turn pauses for continue() (journaled, so any
 * process can answer it) while the request stays open.
 */
export function decide(ctx: HostCallContext, active: ActiveTurn, request: ApprovalRequest): Promise<Decision> {
  const recorded = active.recorded?.takeDecision(request.toolName, request.input);
  if (recorded) {
    ctx.log.info('acp approval answered from the journal', { tool: request.toolName, approved: recorded.approved });
    return Promise.resolve(recorded);
  }
  active.emit({ type: 'tool-approval-request', ...request });
  const ask = active.hooks.onApprovalRequest;
  if (ask) return ask(request);
  const decided = awaitDecision(active, request);
  journalWait(ctx, active, request, 'awaiting-approval');
  ctx.log.info('acp approval awaiting an answer', { tool: request.toolName, approvalId: request.approvalId });
  return decided;
}

/** Journals a call the turn waits for; the turn is recorded as suspended only once these writes are done (see ActiveTurn.writes). */
function journalWait(ctx: HostCallContext, active: ActiveTurn, call: HostCall, status: 'awaiting-approval' | 'awaiting-result'): void {
  const write = ctx.journal.awaiting(waitRow(active, call), status).catch((error: unknown) => ctx.log.error('acp journal write failed', { reason: errorMessage(error) }));
  active.writes = Promise.all([active.writes, write]);
}

/** A waited-for call's ledger row: step 0 for all of them, so its answer finds the same row whatever step the turn is at by then. */
export function waitRow(active: ActiveTurn, call: HostCall): CallIdentity {
  return { turnId: active.turnId, step: 0, callId: call.toolCallId, ordinal: 0, toolName: call.toolName, input: call.input };
}

/** A journaled outcome given to the agent again: the output, or the error thrown again. */
export function replay(outcome: HostOutcome): Promise<ToolOutput> {
  return outcome.ok ? Promise.resolve(outcome.output as ToolOutput) : Promise.reject(new Error(outcome.error));
}
