import * as acp from '@agentclientprotocol/sdk';
import { isReasoningEffort, REASONING_EFFORTS, type ReasoningEffort } from '../../model/reasoning.ts';
import type { PermissionMode } from '../../tools/permission.ts';
import { parseModeId, sessionModes } from './modes.ts';

/**
 * A session's ACP config options (preferred over modes by the spec): the permission mode as a
 * `mode`-category selector (the same three modes `session/set_mode` takes), the model as a
 * `model`-category selector over the models acx can reach, and — where the session's model takes
 * a reasoning effort — the thinking level as a `thought_level`-category selector.
 */
export const CONFIG_ID = { mode: 'mode', model: 'model', effort: 'effort' } as const;

/** The thinking level that leaves the effort as configured (model_params.json's `reasoning`, else the provider's default). */
const DEFAULT_EFFORT = 'default';

export interface SessionChoices {
  mode: PermissionMode;
  /** `provider:model-id`. */
  model: string;
  /** The reasoning effort chosen; undefined: as configured. Applied only on a model that takes one. */
  effort?: ReasoningEffort | undefined;
}

/** What the options offer: the models to pick from, and whether the session's model takes a thinking level. */
export interface OfferedChoices {
  models: readonly string[];
  effort: boolean;
}

const EFFORT_NAMES: Record<ReasoningEffort, string> = { low: 'Low', medium: 'Medium', high: 'High' };

export function configOptions(current: SessionChoices, offered: OfferedChoices): acp.SessionConfigOption[] {
  const modes = sessionModes(current.mode);
  return [
    {
      id: CONFIG_ID.mode,
      name: 'Permissions',
      description: 'Which tools run without asking you first.',
      category: 'mode',
      type: 'select',
      currentValue: current.mode,
      options: modes.availableModes.map((m) => ({ value: m.id, name: m.name, ...(m.description ? { description: m.description } : {}) })),
    },
    {
      id: CONFIG_ID.model,
      name: 'Model',
      description: 'The model the next turn runs on.',
      category: 'model',
      type: 'select',
      currentValue: current.model,
      options: offered.models.map((spec) => ({ value: spec, name: spec })),
    },
    ...(offered.effort
      ? [
          {
            id: CONFIG_ID.effort,
            name: 'Thinking',
            description: 'How much the model reasons before it answers (its reasoning effort), from the next turn on.',
            category: 'thought_level',
            type: 'select' as const,
            currentValue: current.effort ?? DEFAULT_EFFORT,
            options: [
              { value: DEFAULT_EFFORT, name: 'Default', description: "The model's own, or the reasoning set in model_params.json." },
              ...REASONING_EFFORTS.map((effort) => ({ value: effort, name: EFFORT_NAMES[effort] })),
            ],
          },
        ]
      : []),
  ];
}

/** What a `session/set_config_option` asks for, checked against what is offered for `model` (the session's); a bad request is an invalid params error saying what would do. */
export function parseConfigChoice(
  request: acp.SetSessionConfigOptionRequest,
  offered: OfferedChoices & { model: string },
): { mode: PermissionMode } | { model: string } | { effort: ReasoningEffort | undefined } {
  const value = (request as { value: unknown }).value;
  if (request.configId === CONFIG_ID.mode) {
    const mode = typeof value === 'string' ? parseModeId(value) : undefined;
    if (!mode) throw acp.RequestError.invalidParams({ configId: request.configId, value }, 'unknown mode; use allow-reads, allow-edits or allow-all');
    return { mode };
  }
  if (request.configId === CONFIG_ID.model) {
    if (typeof value !== 'string' || !offered.models.includes(value)) {
      throw acp.RequestError.invalidParams({ configId: request.configId, value }, `unknown model; use one of ${offered.models.join(', ')} (ACX_MODELS adds more)`);
    }
    return { model: value };
  }
  if (request.configId === CONFIG_ID.effort) {
    if (!offered.effort) {
      throw acp.RequestError.invalidParams(
        { configId: request.configId, value },
        `the model ${offered.model} has no thinking levels acx can set; choose a reasoning model first (e.g. openai:gpt-5.4)`,
      );
    }
    if (value === DEFAULT_EFFORT) return { effort: undefined };
    if (!isReasoningEffort(value)) {
      throw acp.RequestError.invalidParams({ configId: request.configId, value }, `unknown thinking level; use ${DEFAULT_EFFORT}, ${REASONING_EFFORTS.slice(0, -1).join(', ')} or ${REASONING_EFFORTS.at(-1)}`);
    }
    return { effort: value };
  }
  const ids = [CONFIG_ID.mode, CONFIG_ID.model, ...(offered.effort ? [CONFIG_ID.effort] : [])].map((id) => `"${id}"`);
  throw acp.RequestError.invalidParams({ configId: request.configId }, `unknown config option "${request.configId}"; acx offers ${ids.slice(0, -1).join(', ')} and ${ids.at(-1)}`);
}
