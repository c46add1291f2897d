import { PlatformError, invalid } from '../problem.ts';
import type { PlatformContext } from '../runtime.ts';

/**
 * Reading request bodies. A JSON body that does not parse, or that has the wrong shape, is a
 * validation_failed naming what was expected, never a 500.
 */
export async function jsonBody(c: PlatformContext): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid({ base: ['the request body is not JSON'] });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid({ base: ['the request body must be a JSON object'] });
  return parsed as Record<string, unknown>;
}

/** `body[key]` as an object (`{"message": {...}}`), or a validation_failed naming the key. */
export function member(body: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = body[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid({ [key]: [`is missing: send {"${key}": {...}}`] });
  return value as Record<string, unknown>;
}

/** A string field; `undefined` when absent, a validation_failed when present but not a string. */
export function stringField(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid({ [key]: ['must be a string'] });
  return value;
}

export function requiredText(object: Record<string, unknown>, key: string): string {
  const value = stringField(object, key);
  if (value === undefined || value.trim() === '') throw invalid({ [key]: ["can't be blank"] });
  return value;
}

export const tooLarge = (limit: number): PlatformError =>
  new PlatformError('payload_too_large', `The request body is larger than this platform accepts (${limit} bytes).`);
