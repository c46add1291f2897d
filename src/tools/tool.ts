import type { CodeSchema, InferInput, JsonSchema, Tool } from '../core/tool.ts';

/** The Tool contract lives in core/tool.ts (the shared vocabulary); `tool()` is its one helper. */
export * from '../core/tool.ts';

/** A plain JSON Schema object, told apart from schemas written in code by what it lacks. */
type PlainJsonSchema = JsonSchema & { _zod?: never; _def?: never; '~standard'?: never };

/**
 * Identity helper that gives `execute` its input type from the schema you wrote: zod 4, zod 3
 * (`zod/v3`), any Standard Schema, or an AI SDK `jsonSchema<T>()`. A plain JSON Schema infers
 * nothing: name the input type instead, `tool<{ path: string }>({ ... })`.
 */
export function tool<SCHEMA extends CodeSchema>(
  definition: Omit<Tool<InferInput<SCHEMA>>, 'inputSchema'> & { inputSchema: SCHEMA },
): Tool<InferInput<SCHEMA>> & { inputSchema: SCHEMA };
export function tool<INPUT = any>(definition: Omit<Tool<INPUT>, 'inputSchema'> & { inputSchema: PlainJsonSchema }): Tool<INPUT>;
export function tool(definition: Tool): Tool {
  return definition;
}
