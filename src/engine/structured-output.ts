import type { NormalizedSchema } from '../tools/schema.ts';

/** Parses the final text as JSON (tolerating a code fence) and validates it against the schema. */
export function parseStructuredOutput(
  text: string,
  schema: NormalizedSchema,
): { ok: true; value: unknown } | { ok: false; error: string } {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(trimmed);
  let value: unknown;
  try {
    value = JSON.parse(fenced ? fenced[1]! : trimmed);
  } catch (error) {
    return { ok: false, error: `not valid JSON (${(error as Error).message})` };
  }
  const validation = schema.validate(value);
  if (!validation.ok) return { ok: false, error: (validation.errors ?? []).join('; ') };
  return { ok: true, value: validation.value };
}
