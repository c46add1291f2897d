import type { Harness } from '../../harness/harness.ts';
import type { PreparedAgent } from '../../app/prepare.ts';
import { type ContextBudget, resolveContextBudget } from '../../engine/context-budget.ts';
import { reachableModels } from '../../model/catalog.ts';
import { type ReasoningEffort, takesReasoningEffort } from '../../model/reasoning.ts';
import type { ResolvedModel } from '../../model/providers.ts';
import type { Logger } from '../../util/logger.ts';

/**
 * The models `acx acp` sessions can run on, and an engine for each: the agent's own harness for
 * the model it started with, and engine harnesses on the others (and on any model with a chosen
 * reasoning effort), opened on first use and shared by every session that picks the same. On an
 * ACP harness (or a replay) only the model in use, with no effort to choose.
 */
export interface ModelEngine {
  harness: Harness;
  model: ResolvedModel;
  /** The model's context budget: the turn's compaction ceiling, the size usage_update reports. */
  budget: ContextBudget;
  contextSize: number | undefined;
}

export class ModelEngines {
  /** `provider:model-id` of what runs the turns by default (an ACP harness's stand-in, e.g. `acp:claude-code:default`). */
  readonly current: string;
  /** What the model selector offers, the current one first. */
  readonly models: readonly string[];
  private readonly prepared: PreparedAgent;
  private readonly own: ModelEngine;
  private readonly others = new Map<string, Promise<ModelEngine>>();

  constructor(prepared: PreparedAgent, options: { env: NodeJS.ProcessEnv; logger: Logger }) {
    this.prepared = prepared;
    this.current = `${prepared.model.provider}:${prepared.model.modelId}`;
    const reachable = prepared.engineOn ? reachableModels({ current: this.current, env: options.env }) : { models: [this.current], rejected: [] };
    for (const r of reachable.rejected) options.logger.warn('ACX_MODELS entry skipped', { spec: r.spec, reason: r.reason });
    this.models = reachable.models;
    this.own = this.engineOf(prepared.agent.settings.harness, prepared.model);
  }

  offers(model: string): boolean {
    return this.models.includes(model);
  }

  /** Whether a reasoning effort can be chosen for this model (an engine of ours, on a model known to take one). */
  takesEffort(model: string): boolean {
    return this.prepared.engineOn !== undefined && takesReasoningEffort(model);
  }

  /**
   * The engine for a model, with a reasoning effort when one is chosen (undefined: as configured).
   * A model not offered, or an effort for a model that takes none, is the caller's to check first.
   */
  on(model: string, effort?: ReasoningEffort): Promise<ModelEngine> {
    const open = this.prepared.engineOn;
    if ((model === this.current && effort === undefined) || !open) return Promise.resolve(this.own);
    const key = effort === undefined ? model : `${model} ${effort}`;
    let engine = this.others.get(key);
    if (!engine) {
      engine = open(model, effort === undefined ? {} : { reasoning: effort }).then(({ harness, model: resolved }) => this.engineOf(harness, resolved));
      this.others.set(key, engine);
      // A model that could not be built is tried afresh next time.
      engine.catch(() => this.others.delete(key));
    }
    return engine;
  }

  /** Closes the engines opened for other models (the agent's own harness is the agent's to close). */
  async close(): Promise<void> {
    const opened = [...this.others.values()];
    this.others.clear();
    await Promise.allSettled(opened.map(async (engine) => (await engine).harness.close?.()));
  }

  private engineOf(harness: Harness, model: ResolvedModel): ModelEngine {
    const budget = resolveContextBudget({ configured: this.prepared.settings.contextTokens ?? undefined, modelLimit: model.contextWindowTokens });
    return { harness, model, budget, contextSize: budget.limit > 0 ? budget.limit : model.contextWindowTokens };
  }
}
