import { STEP_RESULT_BUDGET } from '../engine/caps.ts';
import { CHARS_PER_TOKEN, resolveContextBudget } from '../engine/context-budget.ts';
import { errorMessage } from '../core/errors.ts';
import { definitionError } from './errors.ts';

/**
 * The loop-context policy (SPEC §9) of an agent definition, and how a run applies it. A
 * directory and the cartridge built from it carry the same document (the directory's own
 * loop-context-policy.json, or the default the build packs), so both run with the same limits.
 */

export const LOOP_POLICY_PATH = 'rom/policy/loop-context-policy.json';

/** The loop-context policy as acx applies it (SPEC §9): intent, not code. */
export interface LoopContextIntent {
  schemaVersion: string | null;
  maxTurns: number | null;
  /** context.compaction.targetTokenBudget */
  targetTokenBudget: number | null;
  /** context.toolResultTruncation */
  toolResultTruncation: { maxTokens: number | null; keepLastN: number | null } | null;
}

/** The policy's intent; `where` names the directory or cartridge in messages. */
export function parseLoopPolicy(bytes: Uint8Array | null, where = 'cartridge'): LoopContextIntent {
  const empty: LoopContextIntent = { schemaVersion: null, maxTurns: null, targetTokenBudget: null, toolResultTruncation: null };
  if (!bytes) return empty;
  let value: Record<string, any>;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, any>;
  } catch (error) {
    throw definitionError(`${where}: ${LOOP_POLICY_PATH} is not JSON (${errorMessage(error)})`);
  }
  const count = (v: unknown, field: string, allowZero = false): number | null => {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < (allowZero ? 0 : 1)) {
      throw definitionError(`${where}: ${LOOP_POLICY_PATH}: ${field} must be a ${allowZero ? 'non-negative' : 'positive'} integer (got ${JSON.stringify(v)})`);
    }
    return v;
  };
  const truncation = value?.context?.toolResultTruncation;
  return {
    schemaVersion: typeof value?.schemaVersion === 'string' ? value.schemaVersion : null,
    maxTurns: count(value?.loop?.maxTurns, 'loop.maxTurns'),
    targetTokenBudget: count(value?.context?.compaction?.targetTokenBudget, 'context.compaction.targetTokenBudget'),
    toolResultTruncation:
      truncation && typeof truncation === 'object'
        ? {
            maxTokens: count(truncation.maxTokens, 'context.toolResultTruncation.maxTokens'),
            keepLastN: count(truncation.keepLastN, 'context.toolResultTruncation.keepLastN', true),
          }
        : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Applying the loop-context policy (host limits win)

export interface AppliedLoopPolicy {
  /** The step budget per turn and where it came from. */
  maxSteps: number;
  maxStepsSource: 'host' | 'policy' | 'agent' | 'default';
  /** The engine's context ceiling (compaction fires at half of it), or null for the engine's own resolution. */
  contextTokens: number | null;
  contextTokensSource: 'host' | 'policy' | 'engine';
  /** Characters of tool results a step keeps in the transcript (toolResultTruncation.maxTokens); null = the engine's default. */
  stepResultBudget: number | null;
  /** Policy knobs the engine has no setting for (reported, not silently dropped). */
  notApplied: string[];
}

/**
 * maxTurns → the step budget; compaction intent targetTokenBudget → the context ceiling set to
 * twice the target (the engine compacts at half its ceiling, i.e. when the context reaches the
 * target), never above the host's own window. Flags and environment win over both.
 */
export function applyLoopPolicy(input: {
  policy: LoopContextIntent;
  hostMaxSteps: number | undefined;
  agentMaxSteps: number | undefined;
  defaultMaxSteps: number;
  hostContextTokens: number | undefined;
  modelContextWindow?: number | undefined;
}): AppliedLoopPolicy {
  const { policy } = input;
  const steps =
    input.hostMaxSteps !== undefined
      ? { maxSteps: input.hostMaxSteps, maxStepsSource: 'host' as const }
      : policy.maxTurns !== null
        ? { maxSteps: policy.maxTurns, maxStepsSource: 'policy' as const }
        : input.agentMaxSteps !== undefined
          ? { maxSteps: input.agentMaxSteps, maxStepsSource: 'agent' as const }
          : { maxSteps: input.defaultMaxSteps, maxStepsSource: 'default' as const };
  let context: Pick<AppliedLoopPolicy, 'contextTokens' | 'contextTokensSource'> = { contextTokens: null, contextTokensSource: 'engine' };
  if (input.hostContextTokens !== undefined) context = { contextTokens: input.hostContextTokens, contextTokensSource: 'host' };
  else if (policy.targetTokenBudget !== null) {
    const window = resolveContextBudget({ modelLimit: input.modelContextWindow }).limit;
    context = { contextTokens: Math.min(window, policy.targetTokenBudget * 2), contextTokensSource: 'policy' };
  }
  // toolResultTruncation.maxTokens → the per-step result cap, never above the host's own cap
  // (which the compaction headroom guarantee counts on).
  const notApplied: string[] = [];
  const truncation = policy.toolResultTruncation;
  const stepResultBudget =
    truncation?.maxTokens != null ? Math.min(STEP_RESULT_BUDGET, Math.floor(truncation.maxTokens * CHARS_PER_TOKEN)) : null;
  if (truncation?.keepLastN != null) {
    notApplied.push(
      `context.toolResultTruncation.keepLastN ${truncation.keepLastN}: the engine keeps every result whole for the turn it ran in and caps it afterwards`,
    );
  }
  return { ...steps, ...context, stepResultBudget, notApplied };
}
