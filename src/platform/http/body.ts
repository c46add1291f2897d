import { PlatformError, invalid } from '../problem.ts';
import type { PlatformContext } from '../runtime.ts';

/**
 * Reading request bodies. A body that is not JSON, or lacks its envelope (`{"message": {...}}`),
 * is read as one with no fields, so the answer is the field-level validation_failed the API
 * gives for a missing field (`{"errors": {"body": ["can't be blank"]}}`), and the message says
 * what was really wrong. Never a 500.
 */
const WHY_EMPTY = Symbol('why the fields are missing');
type Fields = Record<string, unknown> & { [WHY_EMPTY]?: string };

export async function jsonBody(c: PlatformContext): Promise<Fields> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Fields;
    return { [WHY_EMPTY]: 'the request body must be a JSON object' };
  } catch {
    return { [WHY_EMPTY]: 'the request body is not JSON' };
  }
}

/** `body[key]` as an object (`{"message": {...}}`); a missing envelope reads as no fields. */
export function member(body: Fields, key: string): Fields {
  const value = body[key];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Fields;
  return { [WHY_EMPTY]: body[WHY_EMPTY] ?? `send the fields inside {"${key}": {...}}` };
}

/** A string field; `undefined` when absent, a validation_failed when present but not a string. */
export function stringField(object: Fields, key: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid({ [key]: ['must be a string'] });
  return value;
}

/** "can't be blank", and why it was, when the body itself was the problem. */
export function blank(object: Fields): string {
  const why = object[WHY_EMPTY];
  return why ? `can't be blank (${why})` : "can't be blank";
}

export function requiredText(object: Fields, key: string): string {
  const value = stringField(object, key);
  if (value === undefined || value.trim() === '') throw invalid({ [key]: [blank(object)] });
  return value;
}

export const tooLarge = (limit: number): PlatformError =>
  new PlatformError('payload_too_large', `The request body is larger than this platform accepts (${limit} bytes).`);

/** An upload's refusal names the file limit, not the multipart envelope's (which allows for the form around it). */
export const assetTooLarge = (maxAssetBytes: number): PlatformError =>
  new PlatformError('payload_too_large', `The file is larger than this platform accepts for an asset (${maxAssetBytes} bytes).`);
