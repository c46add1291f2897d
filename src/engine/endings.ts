import type { ModelMessage } from 'ai';
import { AcxError, errorMessage, GuardrailTrippedError, isLeaseLost, TurnAbortedError } from '../core/errors.ts';
import { safeObserve } from '../memory/provider.ts';
import { logSeconds } from '../util/duration.ts';
import { isUnspoken } from './brief.ts';
import { unansweredOutput } from './closing.ts';
import { maybeCompact } from './compaction-triggers.ts';
import type { GuardrailTrip } from '../core/hooks.ts';
import { hasToolCalls } from './transcript.ts';
import type { EngineContext } from './engine-context.ts';
import type { FinishReason } from './events.ts';
import { withFooters } from './hosted.ts';
import { commit, recordResult, settleStep } from './persistence.ts';
import { parseStructuredOutput } from './structured-output.ts';
import { type TurnState, turnResult } from './turn-state.ts';
import type { TurnResult } from './turn-types.ts';

// How a turn ends: done (finish), cancelled (abortTurn) or failed (failTurn). Suspending is not
// an ending: see approvals.ts.

/** Ends the turn with its final text: committed, told to memory, then compacted if it grew past the threshold. */
export async function finish(ctx: EngineContext, state: TurnState, text: string, finishReason: FinishReason): Promise<TurnResult> {
  const { options, journal, logger } = ctx;
  await checkOutput(ctx, state, text);
  let output: unknown;
  let failure: string | undefined;
  if (ctx.output) {
    const parsed = parseStructuredOutput(text, ctx.output);
    if (parsed.ok) output = parsed.value;
    else failure = parsed.error;
  }
  // A structured answer stays bare JSON; any other reply carries what the built-ins cited and made.
  if (!ctx.output) text = withFooters(text, state.sources, state.files);
  const unspoken = isUnspoken(options.speech);
  await commit(ctx, state, () =>
    journal.updateTurn(state.turn.id, {
      status: failure ? 'failed' : 'done',
      finalText: text,
      steps: state.step,
      ...(failure ? { error: `output invalid: ${failure}` } : {}),
    }),
  );
  options.checkpoint?.({ at: 'turn-ended', turnId: state.turn.id });
  if (unspoken && text) {
    logger.info('unspoken', { session: state.sessionId, kind: 'narration', chars: text.length, text });
    state.emit({ type: 'unspoken', text });
  }
  logger.info('turn end', {
    session: state.sessionId,
    turn: state.turn.id,
    outcome: failure ? 'error' : 'ok',
    steps: `${state.step}/${options.maxSteps}`,
    tools: state.toolsRan,
    duration: logSeconds(performance.now() - state.started),
  });
  await observe(ctx, state, text, unspoken);
  await maybeCompact(ctx, state);
  if (failure) {
    throw new AcxError('output-invalid', `The model's final answer does not match the output schema: ${failure}`, {
      hint: 'The answer is kept in the journal; refine the instructions or the schema and ask again.',
    });
  }
  state.emit({ type: 'finish', finishReason, totalUsage: state.usage });
  return turnResult(state, { text: unspoken ? '' : text, unspoken: unspoken ? text : undefined, output, finishReason });
}

export async function throwIfAborted(ctx: EngineContext, state: TurnState): Promise<void> {
  if (state.hooks.abortSignal?.aborted) throw await abortTurn(ctx, state);
}

/** Ends the turn as cancelled; returns the error for the caller to throw. */
export async function abortTurn(ctx: EngineContext, state: TurnState): Promise<TurnAbortedError> {
  const { journal } = ctx;
  // Stopped because the turn is no longer this process's: the lease its caller held on the session
  // (or on the items it answers) was lost, so another process may be continuing it already.
  if (isLeaseLost(state.hooks.abortSignal?.reason)) {
    // Nothing more is written, as if this process had died here: settling its open calls as
    // cancelled, or the turn's status, could overwrite what the new holder writes to the same
    // turn. What is committed is evidence the new holder recovers from.
    ctx.logger.warn('turn end', { session: state.sessionId, turn: state.turn.id, outcome: 'stopped', reason: errorMessage(state.hooks.abortSignal!.reason), note: 'left to the holder that took it over' });
    state.emit({ type: 'abort' });
    return new TurnAbortedError();
  }
  await answerOpenCalls(ctx, state, 'the user cancelled the turn');
  await commit(ctx, state, () => journal.updateTurn(state.turn.id, { status: 'cancelled', steps: state.step }));
  ctx.logger.info('turn end', { session: state.sessionId, turn: state.turn.id, outcome: 'cancelled' });
  state.emit({ type: 'abort' });
  return new TurnAbortedError();
}

/**
 * Answers the calls of the open step that never got a result, and settles the step (closing.ts
 * states why they must be answered): the next commit writes it.
 */
async function answerOpenCalls(ctx: EngineContext, state: TurnState, why: string): Promise<void> {
  await commit(ctx, state);
  const open = await ctx.journal.openCalls(state.turn.id);
  for (const call of open) {
    if (call.status !== 'done' && !state.outputs.has(call.callId)) {
      await recordResult(ctx, state, call, unansweredOutput(call, why));
    }
  }
  if (open.length > 0) settleStep(ctx, state, open[0]!.step, open);
}

/**
 * Ends the turn as failed, any call still open answered as not run (the caller throws the error);
 * `write` joins the commit that records the failure.
 */
export async function failTurn(ctx: EngineContext, state: TurnState, error: unknown, write?: () => Promise<void>): Promise<void> {
  await answerOpenCalls(ctx, state, `the turn failed (${errorMessage(error)})`);
  await commit(ctx, state, async () => {
    await write?.();
    await ctx.journal.updateTurn(state.turn.id, { status: 'failed', error: `[turn failed: ${errorMessage(error)}]` });
  });
  // A bookend like the others (INFO): the error itself reaches the caller, who reports it once.
  ctx.logger.info('turn end', {
    session: state.sessionId,
    turn: state.turn.id,
    outcome: 'error',
    steps: `${state.step}/${ctx.options.maxSteps}`,
    error: errorMessage(error),
  });
}

/**
 * The output guardrails on the final text, before it is committed as the answer. Tripped: the
 * reply is withheld — its message in the journal is replaced by a note saying so (the next turn's
 * model reads the note, never the text) — the turn fails, and GuardrailTrippedError is thrown.
 * Not journaled when it passes: a turn resumed before its end commit checks its text again.
 */
async function checkOutput(ctx: EngineContext, state: TurnState, text: string): Promise<void> {
  const guards = ctx.options.guards;
  if (!guards) return;
  let trip;
  try {
    trip = await guards.checkOutput({ sessionId: state.sessionId, turnId: state.turn.id, text });
  } catch (error) {
    await failTurn(ctx, state, error);
    throw error;
  }
  if (!trip) return;
  const at = state.transcript.findLastIndex((entry) => entry.turnId === state.turn.id && entry.kind === 'assistant' && !hasToolCalls(entry.message));
  // One commit: a crash never leaves the note in place of the reply on a turn still running.
  throw await tripTurn(ctx, state, trip, async () => {
    if (at < 0) return;
    const reply = state.transcript[at]!;
    const message: ModelMessage = { role: 'assistant', content: `[withheld: the output guardrail "${trip.guardrail}" tripped: ${trip.reason}]` };
    // A new entry in a new array: entries are shared with the journal's readers (transcript.ts).
    state.transcript = state.transcript.with(at, { ...reply, message });
    await ctx.journal.replaceMessage(state.sessionId, reply.seq, message);
  });
}

/** Ends the turn as failed because a guardrail tripped; returns the error for the caller to throw. */
export async function tripTurn(ctx: EngineContext, state: TurnState, trip: GuardrailTrip, write?: () => Promise<void>): Promise<GuardrailTrippedError> {
  const error = new GuardrailTrippedError(trip);
  ctx.logger.warn('guardrail tripped', { session: state.sessionId, turn: state.turn.id, kind: trip.kind, guardrail: trip.guardrail, reason: trip.reason });
  await failTurn(ctx, state, error, write);
  return error;
}

async function observe(ctx: EngineContext, state: TurnState, text: string, unspoken: boolean): Promise<void> {
  const { memory, agentId } = ctx.options;
  if (!memory) return;
  await safeObserve(
    memory,
    {
      agentId,
      sessionId: state.sessionId,
      prompt: state.prompt,
      text,
      unspoken,
      toolCalls: state.calls.map((call) => ({ name: call.toolName, input: call.input })),
    },
    ctx.logger,
  );
}
