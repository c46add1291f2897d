import { compactSession, type CompactionOutcome } from './compaction.ts';
import type { EngineContext } from './engine-context.ts';
import type { CompactionReport } from './events.ts';
import { commit } from './persistence.ts';
import type { TurnState } from './turn-state.ts';

/**
 * When the engine compacts a session (compaction.ts does the rewrite): after a turn whose last
 * call read past the threshold, at once and hard when a call overflowed the context, and on a
 * caller's request between turns.
 */

/** After a turn: compacts when its last model call read more than the budget's threshold. */
export async function maybeCompact(ctx: EngineContext, state: TurnState): Promise<void> {
  if (!ctx.budget.enabled || state.lastInputTokens === undefined) return;
  if (state.lastInputTokens <= ctx.budget.compactAt) return;
  await compact(ctx, state, { hard: false, inputTokens: state.lastInputTokens, trigger: 'threshold' });
}

/** Compacts during a turn, telling its stream what changed. */
export async function compact(
  ctx: EngineContext,
  state: TurnState,
  options: { hard: boolean; inputTokens: number | undefined; trigger: CompactionReport['trigger'] },
): Promise<CompactionOutcome> {
  await commit(ctx, state); // compaction reads the journal: write any waiting settlement first
  const outcome = await compactJournal(ctx, state.sessionId, { ...options, abortSignal: state.hooks.abortSignal });
  const report = compactionReport(outcome, options.trigger);
  if (report) state.emit({ type: 'compaction', ...report });
  return outcome;
}

/**
 * Compacts a session now, between turns (a caller's `compact()`): the same rewrite a turn makes
 * past the threshold, keeping the recent window. Safe with a suspended turn: a cut lands only
 * before a user turn, so the unfinished turn's messages stay whole. Says why when it declined.
 */
export async function compactNow(
  ctx: EngineContext,
  sessionId: string,
  options: { abortSignal?: AbortSignal | undefined } = {},
): Promise<CompactionReport | { compacted: false; reason: string }> {
  const outcome = await compactJournal(ctx, sessionId, { hard: false, inputTokens: undefined, abortSignal: options.abortSignal });
  return compactionReport(outcome, 'manual') ?? { compacted: false, reason: outcome.reason ?? 'declined' };
}

function compactJournal(
  ctx: EngineContext,
  sessionId: string,
  options: { hard: boolean; inputTokens: number | undefined; abortSignal: AbortSignal | undefined },
): Promise<CompactionOutcome> {
  const { options: engine } = ctx;
  return compactSession({
    journal: ctx.journal,
    sessionId,
    model: engine.model,
    params: engine.params,
    budget: ctx.budget,
    hard: options.hard,
    ...(engine.memory ? { memory: engine.memory } : {}),
    logger: ctx.logger,
    now: ctx.now(),
    inputTokens: options.inputTokens,
    abortSignal: options.abortSignal,
  });
}

function compactionReport(outcome: CompactionOutcome, trigger: CompactionReport['trigger']): CompactionReport | undefined {
  if (!outcome.compacted) return undefined;
  return {
    trigger,
    summary: outcome.summary ?? '',
    tokensBefore: outcome.tokensBefore,
    tokensAfter: outcome.tokensAfter,
    before: outcome.messagesBefore,
    after: outcome.messagesAfter,
    summarized: outcome.summarized,
  };
}
