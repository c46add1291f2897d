/**
 * Transcript caps. The model reads a tool's full output on the turn it ran; what persists is
 * bounded per *step* (not per call), so a wide fan-out of parallel calls cannot grow the
 * transcript faster than one call. The budget is water-filled: every item that fits its fair
 * share is kept whole and its surplus rolls over to the larger ones, which keep a head and a
 * tail around a marker naming what was cut. Sizes are characters as the model reads them
 * (code points of the unescaped text), so no language is capped harder than another.
 */
/** Most model steps per turn when nothing sets a budget (agent.json stepBudget, a policy, a flag). */
export const DEFAULT_MAX_STEPS = 24;
/** Retries of a failed model call (a transient fault) before the turn fails; ACX_RESPONSE_RETRIES overrides. */
export const DEFAULT_RETRIES = 2;
export const STEP_RESULT_BUDGET = 4096;
export const STEP_ARGS_BUDGET = 2048;
const HEAD_SHARE = 0.8;

export function charLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** Allocates `budget` across items of the given sizes: small items whole, the rest an equal share. */
export function waterFill(sizes: readonly number[], budget: number): number[] {
  const order = sizes.map((size, index) => ({ size, index })).sort((a, b) => a.size - b.size);
  const allocation = new Array<number>(sizes.length).fill(0);
  let remaining = Math.max(0, budget);
  order.forEach(({ size, index }, position) => {
    const share = Math.floor(remaining / (order.length - position));
    const granted = Math.min(size, share);
    allocation[index] = granted;
    remaining -= granted;
  });
  return allocation;
}

export function elisionMarker(elided: number, total: number): string {
  return `[... ${elided.toLocaleString('en-US')} chars elided of ${total.toLocaleString('en-US')} ...]`;
}

/** Keeps `allowed` characters of `text` (head and tail) around a marker; unchanged when it fits. */
export function elide(text: string, allowed: number): string {
  const chars = Array.from(text);
  if (chars.length <= allowed) return text;
  const head = Math.floor(allowed * HEAD_SHARE);
  const tail = allowed - head;
  const marker = elisionMarker(chars.length - allowed, chars.length);
  return `${chars.slice(0, head).join('')}\n${marker}\n${tail > 0 ? chars.slice(chars.length - tail).join('') : ''}`;
}

/** Caps a step's result texts together. */
export function capTexts(texts: readonly string[], budget: number): string[] {
  const sizes = texts.map(charLength);
  const allocation = waterFill(sizes, budget);
  return texts.map((text, index) => elide(text, allocation[index]!));
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Caps a step's tool-call arguments together: every string leaf of every call shares the
 * budget (after the fixed cost of numbers, booleans and keys), so short arguments survive
 * byte for byte and long ones keep a head and a tail.
 */
export function capArguments(inputs: readonly unknown[], budget: number = STEP_ARGS_BUDGET): unknown[] {
  const leaves: string[] = [];
  let fixed = 0;
  const collect = (value: unknown): void => {
    if (typeof value === 'string') leaves.push(value);
    else if (Array.isArray(value)) value.forEach(collect);
    else if (value && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        fixed += charLength(key);
        collect(child);
      }
    } else fixed += String(value).length;
  };
  inputs.forEach(collect);
  const capped = capTexts(leaves, Math.max(0, budget - fixed));
  let cursor = 0;
  const rebuild = (value: unknown): Json => {
    if (typeof value === 'string') return capped[cursor++]!;
    if (Array.isArray(value)) return value.map(rebuild);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, rebuild(child)]));
    }
    return value as Json;
  };
  return inputs.map(rebuild);
}
