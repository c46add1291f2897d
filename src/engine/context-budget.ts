import type { Logger } from '../util/logger.ts';
import { STEP_ARGS_BUDGET, STEP_RESULT_BUDGET } from './caps.ts';

/**
 * The context ceiling resolves in one order — configured → the model's own statement → a
 * conservative 128,000 floor — and compaction fires after a turn whose provider-reported input
 * crossed half of it. `0` configured disables compaction, self-heal included.
 */
export const CONTEXT_FLOOR_TOKENS = 128_000;
export const CHARS_PER_TOKEN = 3.0;

export interface ContextBudget {
  limit: number;
  source: 'config' | 'model' | 'floor';
  /** 0 when compaction is disabled. */
  compactAt: number;
  enabled: boolean;
}

/** Where a resolved ceiling came from, as a user reads it (logs, the handshake's checklist). */
export const CONTEXT_SOURCE_TEXT: Record<ContextBudget['source'], string> = {
  config: 'the configured ceiling',
  model: "the model's own statement",
  floor: `the engine's ${CONTEXT_FLOOR_TOKENS} floor for a model that states no window`,
};

export function resolveContextBudget(options: {
  configured?: number | undefined;
  modelLimit?: number | undefined;
}): ContextBudget {
  if (options.configured !== undefined) {
    const limit = options.configured;
    return { limit, source: 'config', compactAt: limit > 0 ? Math.floor(limit / 2) : 0, enabled: limit > 0 };
  }
  if (options.modelLimit && options.modelLimit > 0) {
    return { limit: options.modelLimit, source: 'model', compactAt: Math.floor(options.modelLimit / 2), enabled: true };
  }
  return { limit: CONTEXT_FLOOR_TOKENS, source: 'floor', compactAt: CONTEXT_FLOOR_TOKENS / 2, enabled: true };
}

/** The most tokens one turn can add to the transcript: the per-step caps times the step budget. */
export function maxTurnGrowthTokens(maxSteps: number): number {
  return Math.ceil(((STEP_RESULT_BUDGET + STEP_ARGS_BUDGET) * maxSteps) / CHARS_PER_TOKEN);
}

/**
 * Compacting at half the ceiling is safe only while no single turn can leap the other half:
 * `limit - compactAt >= maxTurnGrowthTokens(maxSteps)`, which at the default 24 steps needs a
 * ceiling of at least 98,304. Warn (never refuse) when the ceiling and step budget break it,
 * naming the numbers and the remedy. A ceiling the model itself states is its real wall: raising
 * the budget past it would not help, so the remedy is then fewer steps only.
 */
export function checkHeadroom(budget: ContextBudget, maxSteps: number, logger: Logger): boolean {
  if (!budget.enabled) return true;
  const headroom = budget.limit - budget.compactAt;
  const growth = maxTurnGrowthTokens(maxSteps);
  if (headroom >= growth) return true;
  const neededLimit = growth * 2;
  const stepsThatFit = Math.max(1, Math.floor((headroom * CHARS_PER_TOKEN) / (STEP_RESULT_BUDGET + STEP_ARGS_BUDGET)));
  const fewerSteps = `lower the step budget (ACX_MAX_STEPS, --max-steps) to ${stepsThatFit}`;
  logger.warn('context budget headroom too small', {
    limit: budget.limit,
    source: budget.source,
    headroom,
    turn_growth: growth,
    max_steps: maxSteps,
    remedy:
      budget.source === 'config' && neededLimit <= CONTEXT_FLOOR_TOKENS * 8
        ? `raise the context budget (ACX_MAX_CONTEXT_TOKENS, --context-tokens) to at least ${neededLimit} or ${fewerSteps}`
        : fewerSteps,
    note: 'a turn may overshoot the ceiling before compaction, which runs only between turns; the over-length rescue still applies',
  });
  return false;
}
