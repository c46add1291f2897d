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

/**
 * The providers' own wire names (as in the seed's model_params.json, and in OpenAI, OpenRouter
 * and xAI request bodies), each read as the AI SDK call setting it means.
 */
const WIRE_NAMES: Readonly<Record<string, (typeof CALL_SETTING_KEYS)[number]>> = {
  max_tokens: 'maxOutputTokens',
  max_output_tokens: 'maxOutputTokens',
  max_completion_tokens: 'maxOutputTokens',
  top_p: 'topP',
  top_k: 'topK',
  presence_penalty: 'presencePenalty',
  frequency_penalty: 'frequencyPenalty',
  stop: 'stopSequences',
  stop_sequences: 'stopSequences',
  reasoning_effort: 'reasoning',
};

/** The AI SDK's reasoning levels (LanguageModelV4CallOptions['reasoning']). */
const REASONING_LEVELS = ['provider-default', 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

/** A wire value in the AI SDK's shape: `stop: "x"` is one stop sequence; `reasoning: {effort}` a level. */
function callSettingValue(setting: string, value: unknown, source: string, key: string): unknown {
  if (setting === 'stopSequences' && typeof value === 'string') return [value];
  if (setting !== 'reasoning') return value;
  const level = typeof value === 'object' && value !== null && !Array.isArray(value) ? reasoningEffort(value as Record<string, unknown>, source, key) : value;
  if (!(REASONING_LEVELS as readonly unknown[]).includes(level)) {
    throw new ConfigError(`${source}: "${key}" must be a reasoning level, not ${JSON.stringify(value)}.`, {
      hint: `Use one of ${REASONING_LEVELS.join(', ')} (or {"effort": "<level>"}).`,
    });
  }
  return level;
}

function reasoningEffort(value: Record<string, unknown>, source: string, key: string): unknown {
  const others = Object.keys(value).filter((name) => name !== 'effort');
  if (others.length > 0) {
    throw new ConfigError(`${source}: "${key}" carries ${others.map((name) => `"${name}"`).join(', ')}, which has no AI SDK call setting.`, {
      hint: `Keep {"effort": "<level>"} here and put the rest under providerOptions.<provider>.reasoning (e.g. providerOptions.openrouter.reasoning).`,
    });
  }
  return value.effort;
}

export interface LoadedModelParams {
  /** The call settings every model call gets (wire names read as AI SDK settings, overrides applied). */
  params: ModelParams;
  stripped: string[];
  source: string | undefined;
  /** The file's object exactly as written; {} when there is no file. */
  verbatim: Record<string, unknown>;
}

export function parseModelParams(raw: unknown, source: string): { params: ModelParams; stripped: string[] } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source} must hold one JSON object of call settings.`, {
      hint: 'Example: {"temperature": 0.7, "maxOutputTokens": 4096}.',
    });
  }
  const params: ModelParams = {};
  const stripped: string[] = [];
  const setBy: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if ((HARNESS_OWNED_KEYS as readonly string[]).includes(key)) {
      stripped.push(key);
      continue;
    }
    const setting = WIRE_NAMES[key] ?? key;
    if (!(CALL_SETTING_KEYS as readonly string[]).includes(setting)) {
      throw new ConfigError(`${source}: "${key}" is not a model call setting.`, {
        hint: `Use one of ${CALL_SETTING_KEYS.join(', ')} or a wire name (${Object.keys(WIRE_NAMES).join(', ')}); put provider-specific settings under providerOptions.<provider>.`,
      });
    }
    if (setBy[setting] !== undefined) {
      throw new ConfigError(`${source}: "${setBy[setting]}" and "${key}" both set ${setting}.`, { hint: 'Keep one of them.' });
    }
    setBy[setting] = key;
    params[setting] = callSettingValue(setting, value, source, key);
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
  const merged: Record<string, unknown> = structuredClone(raw);
  for (const assignment of options.overrides ?? []) setDotted(merged, ...parseAssignment(assignment));
  const source = options.file ?? '--param';
  const { params, stripped } = parseModelParams(merged, source);
  for (const key of stripped) {
    options.logger?.warn('model_params key stripped', { key, source, reason: 'harness-owned' });
  }
  return { params, stripped, source: found ? options.file : undefined, verbatim: found ? raw : {} };
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
