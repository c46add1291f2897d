import type { ToolSet } from 'ai';
import { AcxError } from '../core/errors.ts';
import type { JournalStore } from '../store/journal-store.ts';
import { type NormalizedSchema, normalizeSchema, normalizeToolSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { DEFAULT_MAX_STEPS, DEFAULT_RETRIES } from './caps.ts';
import { checkHeadroom, type ContextBudget, resolveContextBudget } from './context-budget.ts';
import { callToolSet } from './hosted.ts';
import { type ModelTool, toolSet } from './model-call.ts';
import { SessionPrompts } from './provider-prompt.ts';
import type { EngineOptions } from './turn-types.ts';


/** The engine's options with their defaults filled in. */
export type ResolvedEngineOptions = Required<
  Pick<EngineOptions, 'maxSteps' | 'speech' | 'permissionMode' | 'params' | 'retries' | 'retryBaseMs' | 'agentId' | 'instructions'>
> &
  EngineOptions;

/** A registered tool and its input schema, normalized once. */
export interface RegisteredTool {
  tool: Tool;
  schema: NormalizedSchema;
}

/**
 * What every part of the engine reads and none changes: the options, the journal, the tools and
 * the context budget, checked and built once per Engine; and the sessions' provider prompts, which
 * a turn takes and gives back. The engine's modules are functions of this context and of one
 * turn's TurnState.
 */
export interface EngineContext {
  readonly options: ResolvedEngineOptions;
  readonly journal: JournalStore;
  readonly budget: ContextBudget;
  readonly logger: Logger;
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  /** The SDK's view of the function tools, built once. */
  readonly sdkTools: ToolSet | undefined;
  /** The tool set a model call declares: the function tools plus the provider's built-ins. */
  readonly callTools: (functions: ToolSet | undefined) => ToolSet | undefined;
  /** The required output's schema, when the engine has one. */
  readonly output: NormalizedSchema | undefined;
  /** Each session's provider prompt, converted once per message and kept between its turns. */
  readonly prompts: SessionPrompts;
  now(): Date;
}

/** Checks an engine's options (clear config errors for what cannot work) and builds its context. */
export function createEngineContext(options: EngineOptions): EngineContext {
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxSteps) || maxSteps <= 0) {
    throw new AcxError('config', `The step budget must be a positive whole number (got ${maxSteps}).`, {
      hint: `Leave it unset for the default of ${DEFAULT_MAX_STEPS}, or pass a value like 12.`,
    });
  }
  const resolved: ResolvedEngineOptions = {
    ...options,
    maxSteps,
    speech: options.speech ?? { mode: 'final-text' },
    permissionMode: options.permissionMode ?? 'allow-edits',
    params: options.params ?? {},
    retries: options.retries ?? DEFAULT_RETRIES,
    retryBaseMs: options.retryBaseMs ?? 500,
    agentId: options.agentId ?? 'agent',
    instructions: options.instructions ?? '',
  };
  const logger = options.logger ?? silentLogger;
  const tools = new Map<string, RegisteredTool>();
  const modelTools: ModelTool[] = [];
  for (const tool of options.tools ?? []) {
    if (tools.has(tool.name)) {
      throw new AcxError('config', `Two tools are named "${tool.name}".`, { hint: 'Tool names must be unique.' });
    }
    const schema = normalizeToolSchema(tool.inputSchema);
    tools.set(tool.name, { tool, schema });
    modelTools.push({ name: tool.name, description: tool.description, schema });
  }
  const sdkTools = toolSet(modelTools);
  for (const name of options.builtins?.names ?? []) {
    if (tools.has(name)) {
      throw new AcxError('config', `A tool and the provider's server-side built-in are both named "${name}".`, {
        hint: `Rename the tool, or revoke the ${name} grant (delete tools/${name}.enabled in the config home).`,
      });
    }
  }
  const speech = resolved.speech;
  if (speech.mode === 'tool' && !tools.has(speech.tool)) {
    throw new AcxError('config', `Speech mode "tool" names the tool "${speech.tool}", which is not registered.`, {
      hint: 'Register the speaking tool, or use the final-text speech mode.',
    });
  }
  const output = options.output ? normalizeSchema(options.output) : undefined;
  const budget = resolveContextBudget({
    configured: options.contextTokens,
    modelLimit: options.model.contextWindowTokens,
  });
  logger.info('context limit', {
    limit: budget.limit,
    source: budget.source,
    compact_at: budget.enabled ? budget.compactAt : 'disabled',
  });
  if (options.warnHeadroom !== false) checkHeadroom(budget, maxSteps, logger);
  const clock = options.clock;
  return {
    options: resolved,
    journal: options.journal,
    budget,
    logger,
    tools,
    sdkTools,
    callTools: callToolSet(options.builtins),
    output,
    prompts: options.prompts ?? new SessionPrompts(),
    now: () => clock?.() ?? new Date(),
  };
}
