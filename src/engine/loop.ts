import { errorMessage } from '../core/errors.ts';
import { callCostUsd } from '../model/call-cost.ts';
import { logSeconds } from '../util/duration.ts';
import { suspend } from './approvals.ts';
import { fallbackReserveNote, nudgeNote, reserveBrief } from './brief.ts';
import { runStepCalls } from './calls.ts';
import type { EngineContext } from './engine-context.ts';
import { abortTurn, finish, throwIfAborted } from './endings.ts';
import type { FinishReason } from './events.ts';
import { classifyFault } from './faults.ts';
import { modelCallTools } from './guard-points.ts';
import { addSources } from './hosted.ts';
import type { ModelCallResult } from './model-call.ts';
import { appendEntry, commit, persistAssistant, settleStep } from './persistence.ts';
import { callWithRescue, callWithRetries } from './retries.ts';
import { parseStructuredOutput } from './structured-output.ts';
import type { TurnState } from './turn-state.ts';
import type { TurnResult } from './turn-types.ts';

/**
 * The think → act loop: one model call per step, the step's assistant message persisted, its
 * calls run, the step settled; until a step without calls gives the final text, the turn pauses
 * (approvals, host-run tools, a pause request) or the step budget is spent.
 */
export async function drive(ctx: EngineContext, state: TurnState): Promise<TurnResult> {
  const { options, logger } = ctx;
  const { maxSteps } = options;
  for (;;) {
    await throwIfAborted(ctx, state);
    if (state.hooks.pauseRequested?.()) return suspend(ctx, state);
    if (state.step >= maxSteps) return reserve(ctx, state);
    state.step += 1;
    state.emit({ type: 'start-step', step: state.step });
    const tools = await modelCallTools(ctx, state);
    options.checkpoint?.({ at: 'model-call', turnId: state.turn.id, step: state.step });
    const stepStarted = performance.now();
    const result = await callWithRescue(ctx, state, tools);
    const calls = result.toolCalls;
    const records = await persistAssistant(ctx, state, result);
    options.checkpoint?.({ at: 'assistant-persisted', turnId: state.turn.id, step: state.step });
    await keepHosted(ctx, state, result);
    // Like the AI SDK, a step finishes after its tools ran.
    const finishStep = () =>
      state.emit({
        type: 'finish-step',
        step: state.step,
        finishReason: calls.length > 0 ? 'tool-calls' : normalizeFinish(result.finishReason),
        usage: result.usage,
        ...costOf(result),
      });

    if (calls.length === 0) {
      finishStep();
      logger.info(`step ${state.step}/${maxSteps}: final reply`, {
        duration: logSeconds(performance.now() - stepStarted),
      });
      const decided = await onFinalText(ctx, state, result.text);
      if (decided === 'continue') continue;
      return decided;
    }

    const outcome = await runStepCalls(ctx, state, records);
    finishStep();
    logger.info(`step ${state.step}/${maxSteps}: tools=${calls.map((c) => c.toolName).join(',')}`, {
      duration: logSeconds(performance.now() - stepStarted),
    });
    if (outcome === 'suspended') return suspend(ctx, state);
    settleStep(ctx, state, state.step, records);
    await throwIfAborted(ctx, state);
  }
}

/** Decides what a step without tool calls means: the final reply, or one more nudge/repair. */
async function onFinalText(ctx: EngineContext, state: TurnState, text: string): Promise<TurnResult | 'continue'> {
  const speech = ctx.options.speech;
  if (speech.mode === 'tool' && state.addressed !== false && state.visibleActions === 0 && !state.nudged) {
    state.nudged = true;
    await commit(ctx, state, async () => {
      await appendEntry(ctx, state, 'note', { role: 'user', content: nudgeNote(speech, state.addressed) });
      await ctx.journal.updateTurn(state.turn.id, { nudged: true });
    });
    ctx.logger.info('nudge', { session: state.sessionId, tool: speech.tool, ...(typeof state.addressed === 'string' ? { addressed: state.addressed } : {}) });
    return 'continue';
  }
  if (ctx.output && !state.repairedOutput) {
    const parsed = parseStructuredOutput(text, ctx.output);
    if (!parsed.ok) {
      state.repairedOutput = true;
      await commit(ctx, state, async () => {
        await appendEntry(ctx, state, 'note', {
          role: 'user',
          content: `[harness] Your final answer is not valid for the required output schema: ${parsed.error}. Reply again with only the JSON value.`,
        });
      });
      return 'continue';
    }
  }
  return finish(ctx, state, text, 'stop');
}

/** Budget spent while the model still calls tools: one call with tools withheld for its own report. */
async function reserve(ctx: EngineContext, state: TurnState): Promise<TurnResult> {
  const { maxSteps, speech } = ctx.options;
  ctx.logger.warn('step budget exhausted', { session: state.sessionId, steps: `${state.step}/${maxSteps}` });
  const tools = await modelCallTools(ctx, state);
  let text: string;
  try {
    const result = await callWithRetries(ctx, state, {
      brief: reserveBrief({ now: ctx.now(), maxSteps, speech }),
      tools,
      toolChoice: 'none',
    });
    text = result.text.trim() || fallbackReserveNote(maxSteps, 'the report was empty');
  } catch (error) {
    if (classifyFault(error) === 'aborted') throw await abortTurn(ctx, state);
    ctx.logger.warn('reserve summary failed', { session: state.sessionId, error: errorMessage(error) });
    text = fallbackReserveNote(maxSteps, errorMessage(error));
  }
  await commit(ctx, state, async () => {
    await appendEntry(ctx, state, 'assistant', { role: 'assistant', content: text });
  });
  return finish(ctx, state, text, 'length');
}

/**
 * What the provider's built-ins did in a step, once its assistant message (which carries their
 * calls and results, so a replay never re-runs them) is journaled: each is logged, cited URLs
 * are streamed as AI SDK `source` parts and kept for the Sources: footer, and what they
 * produced is kept (afterCall) for the Files: footer. Keeping a file is best effort: a failure
 * is a WARNING, the turn goes on.
 */
async function keepHosted(ctx: EngineContext, state: TurnState, result: ModelCallResult): Promise<void> {
  const { options, logger } = ctx;
  for (const call of result.hosted) {
    logger.info('builtin', { session: state.sessionId, tool: call.toolName, call: call.toolCallId, provider: options.model.provider });
  }
  for (const source of addSources(state.sources, result.sources)) {
    state.emit({ type: 'source', sourceType: 'url', id: source.id, url: source.url, ...(source.title ? { title: source.title } : {}) });
  }
  const afterCall = options.builtins?.afterCall;
  if (!afterCall || (result.hosted.length === 0 && result.documents.length === 0)) return;
  try {
    for (const file of await afterCall({ hosted: result.hosted, documents: result.documents })) if (!state.files.includes(file)) state.files.push(file);
  } catch (error) {
    logger.warn('builtin output not kept', { session: state.sessionId, error: errorMessage(error) });
  }
}

/** The step's stated cost, as a part field (absent when the provider states none). */
function costOf(result: ModelCallResult): { costUsd?: number } {
  const cost = callCostUsd(result.providerMetadata);
  return cost === undefined ? {} : { costUsd: cost };
}

function normalizeFinish(reason: string): FinishReason {
  return (['stop', 'length', 'content-filter', 'tool-calls', 'error'] as const).includes(reason as never)
    ? (reason as FinishReason)
    : 'other';
}
