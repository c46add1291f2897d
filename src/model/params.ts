import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';

/**
 * Model-call tuning from `model_params.json` and `--param k=v`, passed into every model call.
 * Keys the harness owns (the model, the messages, the tools, ...) are stripped with a WARNING:
 * this file tunes calls, it cannot rewire them. Unknown keys are an error at start-up, because
 * the AI SDK would otherwise ignore them silently and the agent would run untuned.
 */
export const CALL_SETTING_KEYS = [
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'presencePenalty',
  'frequencyPenalty',
  'stopSequences',
  'seed',
  'headers',
  'providerOptions',
  'reasoning',
] as const;

export const HARNESS_OWNED_KEYS = [
  'model',
  'messages',
  'prompt',
  'system',
  'instructions',
  'tools',
  'toolChoice',
  'activeTools',
  'stopWhen',
  'maxSteps',
  'maxRetries',
  'abortSignal',
  'output',
  'prepareStep',
  'onFinish',
  'onStepFinish',
] as const;

export type ModelParams = Record<string, unknown>;

export interface LoadedModelParams {
  params: ModelParams;
  stripped: string[];
  source: string | undefined;
}

export function parseModelParams(raw: unknown, source: string): { params: ModelParams; stripped: string[] } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source} must hold one JSON object of call settings.`, {
      hint: 'Example: {"temperature": 0.7, "maxOutputTokens": 4096}.',
    });
  }
  const params: ModelParams = {};
  const stripped: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if ((HARNESS_OWNED_KEYS as readonly string[]).includes(key)) {
      stripped.push(key);
      continue;
    }
    if (!(CALL_SETTING_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(`${source}: "${key}" is not a model call setting.`, {
        hint: `Use one of ${CALL_SETTING_KEYS.join(', ')}; put provider-specific settings under providerOptions.<provider>.`,
      });
    }
    params[key] = value;
  }
  return { params, stripped };
}

/** Reads the file (absent = no params) and merges `--param` overrides on top. */
export function loadModelParams(
  options: { file?: string; overrides?: readonly string[]; logger?: Logger } = {},
): LoadedModelParams {
  let raw: Record<string, unknown> = {};
  let found = false;
  if (options.file) {
    let text: string | undefined;
    try {
      text = readFileSync(options.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text !== undefined) {
      found = true;
      try {
        raw = JSON.parse(text) as Record<string, unknown>;
      } catch (error) {
        throw new ConfigError(`${options.file} is not valid JSON: ${(error as Error).message}`, {
          hint: 'Fix the file or delete it; a missing model_params.json simply means no tuning.',
        });
      }
    }
  }
  if (options.file && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) {
    parseModelParams(raw, options.file);
  }
  const merged: Record<string, unknown> = { ...raw };
  for (const assignment of options.overrides ?? []) setDotted(merged, ...parseAssignment(assignment));
  const source = options.file ?? '--param';
  const { params, stripped } = parseModelParams(merged, source);
  for (const key of stripped) {
    options.logger?.warn('model_params key stripped', { key, source, reason: 'harness-owned' });
  }
  return { params, stripped, source: found ? options.file : undefined };
}

function parseAssignment(assignment: string): [string, unknown] {
  const index = assignment.indexOf('=');
  if (index <= 0) {
    throw new ConfigError(`--param "${assignment}" is not key=value.`, {
      hint: 'Example: --param temperature=0.2 --param providerOptions.openai.reasoningEffort=low',
    });
  }
  const key = assignment.slice(0, index).trim();
  const text = assignment.slice(index + 1);
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // a bare word stays a string
  }
  return [key, value];
}

function setDotted(target: Record<string, unknown>, path: string, value: unknown): void {
  const segments = path.split('.');
  let node = target;
  for (const segment of segments.slice(0, -1)) {
    const next = node[segment];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[segment] = {};
    node = node[segment] as Record<string, unknown>;
  }
  node[segments.at(-1)!] = value;
}
