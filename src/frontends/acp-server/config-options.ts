import * as acp from '@agentclientprotocol/sdk';
import type { PermissionMode } from '../../tools/permission.ts';
import { parseModeId, sessionModes } from './modes.ts';

/**
 * A session's ACP config options (preferred over modes by the spec): the permission mode as a
 * `mode`-category selector (the same three modes `session/set_mode` takes) and the model as a
 * `model`-category selector over the models acx can reach.
 */
export const CONFIG_ID = { mode: 'mode', model: 'model' } as const;

export interface SessionChoices {
  mode: PermissionMode;
  /** `provider:model-id`. */
  model: string;
}

export function configOptions(current: SessionChoices, models: readonly string[]): acp.SessionConfigOption[] {
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
      options: models.map((spec) => ({ value: spec, name: spec })),
    },
  ];
}

/** What a `session/set_config_option` asks for, checked against what is offered; a bad request is an invalid params error saying what would do. */
export function parseConfigChoice(
  request: acp.SetSessionConfigOptionRequest,
  models: readonly string[],
): { mode: PermissionMode } | { model: string } {
  const value = (request as { value: unknown }).value;
  if (request.configId === CONFIG_ID.mode) {
    const mode = typeof value === 'string' ? parseModeId(value) : undefined;
    if (!mode) throw acp.RequestError.invalidParams({ configId: request.configId, value }, 'unknown mode; use allow-reads, allow-edits or allow-all');
    return { mode };
  }
  if (request.configId === CONFIG_ID.model) {
    if (typeof value !== 'string' || !models.includes(value)) {
      throw acp.RequestError.invalidParams({ configId: request.configId, value }, `unknown model; use one of ${models.join(', ')} (ACX_MODELS adds more)`);
    }
    return { model: value };
  }
  throw acp.RequestError.invalidParams({ configId: request.configId }, `unknown config option "${request.configId}"; acx offers "${CONFIG_ID.mode}" and "${CONFIG_ID.model}"`);
}
