import { parseModelSpec } from './providers.ts';

/**
 * The reasoning efforts a user may pick for a model (an editor's thinking level), passed as the
 * AI SDK's `reasoning` call setting, which each provider maps to its own (OpenAI's
 * reasoning_effort, Anthropic's thinking budget, Gemini's thinking config). acx has no live
 * catalogue: a model counts as taking an effort when its id names a family known to reason with
 * a configurable effort; any other model is offered none (nothing would be sent that it refuses).
 * The three levels are the ones every such model takes.
 */
export const REASONING_EFFORTS = ['low', 'medium', 'high'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

const REASONING_FAMILIES: Readonly<Record<string, RegExp>> = {
  // o1, o3, o4-mini…; gpt-5 and later, but not their non-reasoning chat variants.
  openai: /^(o\d|gpt-([5-9]|\d{2,})(?!\.?\d*-chat))/,
  anthropic: /^claude-(3-7-sonnet|(opus|sonnet|haiku)-[4-9]|[4-9])/,
  google: /^gemini-(2\.5|[3-9])/,
  // grok-4 reasons but takes no effort; grok-3-mini does.
  xai: /^grok-3-mini/,
};

export function takesReasoningEffort(spec: string): boolean {
  const { provider, modelId } = parseModelSpec(spec);
  return REASONING_FAMILIES[provider]?.test(modelId) ?? false;
}

export function isReasoningEffort(value: unknown): value is ReasoningEffort {
  return (REASONING_EFFORTS as readonly unknown[]).includes(value);
}
