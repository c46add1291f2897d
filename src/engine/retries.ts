import type { ToolSet } from 'ai';
import { errorMessage } from '../core/errors.ts';
import { callCostUsd } from '../model/call-cost.ts';
import { routedEndpoint } from '../model/openrouter-routing.ts';
import { logSeconds } from '../util/duration.ts';
import { composeBrief } from './brief.ts';
import { compact } from './compaction-triggers.ts';
import { abortTurn, failTurn } from './endings.ts';
import type { EngineContext } from './engine-context.ts';
import { addUsage } from './events.ts';
import { classifyFault, RATE_LIMIT_RETRIES, retryDelayMs } from './faults.ts';
import { callModel, type ModelCallResult } from './model-call.ts';
import { describeProviderFailure } from './provider-failure.ts';
import { loadTranscript, messagesOf } from './transcript.ts';
import type { TurnState } from './turn-state.ts';

/**
 * A step's model call, rescued once per turn from a context overflow: a hard compaction, then
 * one re-run, only while no tool of the turn has run. Any other failure ends the turn as failed
 * (or cancelled, when aborted) and is thrown.
 */
export async function callWithRescue(ctx: EngineContext, state: TurnState, tools: ToolSet | undefined): Promise<ModelCallResult> {
  const { options, logger } = ctx;
  const brief = composeBrief({
    now: ctx.now(),
    step: state.step,
    maxSteps: options.maxSteps,
    speech: options.speech,
    turnContext: state.turnContext,
  });
  try {
    return await callWithRetries(ctx, state, { brief, tools });
  } catch (error) {
    const fault = classifyFault(error);
    if (fault === 'aborted') throw await abortTurn(ctx, state);
    if (fault === 'context-overflow' && ctx.budget.enabled && !state.overflowRescued) {
      state.overflowRescued = true;
      logger.warn('context overflow', {
        session: state.sessionId,
        tools_ran: state.toolsRan,
        action: state.toolsRan === 0 ? 'hard compaction and one re-run' : 'hard compaction; no re-run after a tool ran',
      });
      const outcome = await compact(ctx, state, { hard: true, inputTokens: undefined, trigger: 'overflow' });
      if (state.toolsRan === 0 && outcome.compacted) {
        state.transcript = await loadTranscript(ctx.journal, state.sessionId);
        try {
          return await callWithRetries(ctx, state, { brief, tools });
        } catch (again) {
          if (classifyFault(again) === 'aborted') throw await abortTurn(ctx, state);
          await failTurn(ctx, state, again);
          throw again;
        }
      }
    }
    await failTurn(ctx, state, error);
    throw error;
  }
}

/**
 * One model call, re-issued while its fault allows (see faults.ts): transient faults up to
 * `retries` extra attempts with backoff, a 429 on its own terms. Every retry is a WARNING; a
 * failure that was retried ends in one ERROR naming the attempts. What finally fails is thrown
 * as a ProviderError that says what went wrong and what to do.
 */
export async function callWithRetries(
  ctx: EngineContext,
  state: TurnState,
  /** `tools`: the function tools the call offers (beforeModelCall may narrow them: guard-points.ts). */
  call: { brief: string; tools: ToolSet | undefined; toolChoice?: 'auto' | 'none' },
): Promise<ModelCallResult> {
  const { options, logger } = ctx;
  const { retries, retryBaseMs, model } = options;
  const rateLimit = { retried: 0, sleptMs: 0 };
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await state.telemetry.modelCall(() =>
        callModel({
          model,
          system: options.instructions,
          messages: messagesOf(state.transcript),
          brief: call.brief,
          attachments: state.hooks.attachments,
          prompt: state.providerPrompt,
          tools: ctx.callTools(call.tools),
          ...(call.toolChoice ? { toolChoice: call.toolChoice } : {}),
          params: options.params,
          sessionId: state.sessionId,
          abortSignal: state.hooks.abortSignal,
          emit: state.hooks.emit,
        }),
      );
      logModelCall(ctx, result);
      if (!state.hooks.emit) observeWhole(state, result);
      state.usage = addUsage(state.usage, result.usage);
      state.lastInputTokens = result.usage.inputTokens;
      return result;
    } catch (error) {
      const fault = classifyFault(error);
      if (fault === 'aborted') throw error;
      const waitMs = retryDelayMs(fault, error, { attempt, retries, baseMs: retryBaseMs, rateLimit });
      if (waitMs === undefined) {
        if (attempt > 1) logger.error('model call failed', { fault, attempts: attempt, error: errorMessage(error) });
        throw describeProviderFailure(error, { model, attempts: attempt }) ?? error;
      }
      if (fault === 'rate-limited') {
        rateLimit.retried += 1;
        rateLimit.sleptMs += waitMs;
      }
      const of = (fault === 'rate-limited' ? Math.min(retries, RATE_LIMIT_RETRIES) : retries) + 1;
      logger.warn('model call retry', { fault, attempt, of, wait: logSeconds(waitMs), error: errorMessage(error) });
      state.emit({ type: 'retry', attempt, error: errorMessage(error) });
      await sleep(waitMs, state.hooks.abortSignal);
    }
  }
}

function logModelCall(ctx: EngineContext, result: ModelCallResult): void {
  const cost = callCostUsd(result.providerMetadata);
  ctx.logger.info('llm', {
    provider: ctx.options.model.provider,
    // The upstream a router says it selected (OpenRouter); absent for a direct call.
    endpoint: routedEndpoint(result.providerMetadata),
    model: ctx.options.model.modelId,
    duration: logSeconds(result.durationMs),
    tokens_in: result.usage.inputTokens,
    tokens_out: result.usage.outputTokens,
    tokens_total: result.usage.totalTokens,
    cached_tokens: result.usage.inputTokenDetails.cacheReadTokens,
    cost,
  });
}

/** A non-streamed model call's reasoning and text, told to an observer as one delta each. */
function observeWhole(state: TurnState, result: { text: string; reasoning?: string | undefined }): void {
  if (result.reasoning) state.emit({ type: 'reasoning-delta', id: `reasoning-${state.step}`, text: result.reasoning });
  if (result.text) state.emit({ type: 'text-delta', id: `text-${state.step}`, text: result.text });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
