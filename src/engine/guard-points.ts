import type { ToolSet } from 'ai';
import { errorMessage } from '../core/errors.ts';
import type { CallDecision } from '../core/hooks.ts';
import type { CallRecord, CallStatus } from '../store/journal.ts';
import type { ToolRunOutcome } from '../tools/run.ts';
import { failTurn, tripTurn } from './endings.ts';
import type { EngineContext } from './engine-context.ts';
import { commit } from './persistence.ts';
import type { TurnState } from './turn-state.ts';

/**
 * Where a turn asks its guards (the hooks and guardrails of core/hooks.ts, built by
 * harness/guards.ts): about each tool call before it can run, about a result before it is
 * journaled, and about each model call before it is made. The input guardrails are asked before a
 * turn starts (engine.ts) and the output guardrails before its final text is committed
 * (endings.ts, finish).
 */

/** Calls that have not run and could still: the ones a decision is asked for. */
const UNDECIDED: ReadonlySet<CallStatus> = new Set(['pending', 'awaiting-approval', 'awaiting-result']);

/**
 * Asks the guards about every call of a step that has no decision yet, before any call of the step
 * runs, and journals the decisions in one commit. Invariant: a call's decision is journaled before
 * the call can run, and a journaled decision is never asked again — a resumed or continued turn
 * reads it (CallRecord.decision). A tripped tool guardrail ends the turn as failed with none of
 * the step's calls run (each is answered as not run) and throws GuardrailTrippedError; a hook or
 * guardrail that throws fails the turn the same way with its error.
 */
export async function decideCalls(ctx: EngineContext, state: TurnState, calls: readonly CallRecord[]): Promise<void> {
  const guards = ctx.options.guards;
  if (!guards) return;
  const undecided = calls.filter((call) => call.decision === null && UNDECIDED.has(call.status) && ctx.tools.has(call.toolName));
  if (undecided.length === 0) return;
  let decisions: CallDecision[];
  try {
    decisions = await Promise.all(
      undecided.map((call) =>
        guards.decideCall({ sessionId: state.sessionId, turnId: state.turn.id, toolCallId: call.callId, toolName: call.toolName, input: call.input, runBy: 'acx' }),
      ),
    );
  } catch (error) {
    await failTurn(ctx, state, error);
    throw error;
  }
  await commit(ctx, state, async () => {
    for (const [index, call] of undecided.entries()) {
      call.decision = decisions[index]!;
      await ctx.journal.recordDecision(call, call.decision);
    }
  });
  for (const call of undecided) {
    ctx.logger.info('tool decision', { tool: call.toolName, call: call.callId, decision: call.decision!.decision, rewritten: (call.decision && 'input' in call.decision) || undefined });
    ctx.options.checkpoint?.({ at: 'call-decided', turnId: state.turn.id, step: call.step, toolName: call.toolName, callId: call.callId });
  }
  const tripped = undecided.map((call) => call.decision!).find((decision) => decision.decision === 'tripped');
  if (tripped) throw await tripTurn(ctx, state, { guardrail: tripped.guardrail, kind: 'tool', reason: tripped.reason });
}

/**
 * A call's outcome through the afterToolCall hooks, before it is journaled. A hook that throws
 * withholds the result (the model reads why): what it was meant to redact is never journaled.
 */
export async function afterCall(ctx: EngineContext, state: TurnState, call: CallRecord, input: unknown, outcome: ToolRunOutcome): Promise<ToolRunOutcome> {
  const guards = ctx.options.guards;
  if (!guards?.hasAfterToolCall) return outcome;
  const base = { sessionId: state.sessionId, turnId: state.turn.id, toolCallId: call.callId, toolName: call.toolName, input, runBy: 'acx' as const };
  try {
    const after = await guards.afterCall(outcome.ok ? { ...base, output: outcome.output } : { ...base, error: outcome.error });
    return after.error === undefined ? { ok: true, output: after.output } : { ok: false, error: after.error };
  } catch (error) {
    ctx.logger.warn('afterToolCall failed', { tool: call.toolName, call: call.callId, error: errorMessage(error) });
    return { ok: false, error: `The result of ${call.toolName} was withheld: ${errorMessage(error)}` };
  }
}

/**
 * The tools a model call offers, after the beforeModelCall hooks had their say (all of them when
 * none is set). A hook that throws fails the turn before the model is called.
 */
export async function modelCallTools(ctx: EngineContext, state: TurnState): Promise<ToolSet | undefined> {
  const guards = ctx.options.guards;
  if (!guards?.hasBeforeModelCall) return ctx.sdkTools;
  const all = Object.keys(ctx.sdkTools ?? {});
  let active: readonly string[] | undefined;
  try {
    active = await guards.beforeModelCall({
      sessionId: state.sessionId,
      turnId: state.turn.id,
      step: state.step,
      messages: state.transcript.map((entry) => entry.message),
      tools: all,
    });
  } catch (error) {
    await failTurn(ctx, state, error);
    throw error;
  }
  if (active === undefined || !ctx.sdkTools) return ctx.sdkTools;
  const offered = Object.fromEntries(Object.entries(ctx.sdkTools).filter(([name]) => active.includes(name)));
  return Object.keys(offered).length > 0 ? offered : undefined;
}
