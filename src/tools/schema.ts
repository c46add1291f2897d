import type { FlexibleSchema } from '@ai-sdk/provider-utils';
import { asSchema, zodSchema } from 'ai';
import { createRequire } from 'node:module';
import type { Ajv2020 as Ajv, ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';
import type { ZodTypeAny as Zod3Type } from 'zod/v3';
import type { CodeSchema, InputSchema, JsonSchema } from '../core/tool.ts';
import { isOwnSchema } from '../core/lazy-schema.ts';

/**
 * Tool input schemas arrive as code (zod 4, zod 3, any Standard Schema, an AI SDK `jsonSchema()`
 * / `zodSchema()`: TypeScript authors) or as JSON Schema 2020-12 (MCP servers, cartridges). All
 * are normalised here to one JSON Schema for the model and one validator.
 */
export type { CodeSchema, InferInput, InputSchema, JsonSchema } from '../core/tool.ts';

export interface ValidationResult<T = unknown> {
  ok: boolean;
  value?: T;
  /** One line per problem, with the JSON pointer of the offending value. */
  errors?: string[];
}

export interface NormalizedSchema {
  jsonSchema: JsonSchema;
  validate(value: unknown): ValidationResult;
}

// ajv (some 80 modules) is required with the first JSON Schema normalised (an MCP server's, a
// cartridge's or a plugin's tool), not when this module loads: the built-ins' schemas are zod.
// It is a CommonJS package, so requiring it gives the very module an import would.
const require = createRequire(import.meta.url);
let sharedAjv: Ajv | undefined;
const ajv = (): Ajv =>
  (sharedAjv ??= new (require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020({ allErrors: true, strict: false, validateFormats: false }));

function isZod4Schema(schema: object): schema is z.ZodType {
  return '_zod' in schema;
}

function isZod3Schema(schema: object): schema is Zod3Type {
  return '_def' in schema && typeof (schema as Zod3Type).safeParse === 'function';
}

/** An AI SDK Schema (`jsonSchema()`, `zodSchema()`): marked with the SDK's registered symbol. */
function isSdkSchema(schema: object): boolean {
  return (schema as Record<symbol, unknown>)[Symbol.for('vercel.ai.schema')] === true;
}

/** Zod 4 or 3, a Standard Schema, or an AI SDK Schema — anything but a plain JSON Schema object. */
export function isCodeSchema(schema: unknown): schema is CodeSchema {
  if (typeof schema === 'function') return true; // the AI SDK's lazySchema()
  if (typeof schema !== 'object' || schema === null) return false;
  return isZod4Schema(schema) || isZod3Schema(schema) || '~standard' in schema || isSdkSchema(schema);
}

/**
 * Schemas are used synchronously here (validation runs between a journal write and a tool run):
 * a schema whose JSON Schema or check only comes as a promise is refused, saying so.
 */
function syncResult<T>(result: T | PromiseLike<unknown>, what: string): T {
  if (result !== null && typeof (result as PromiseLike<unknown>)?.then === 'function') {
    throw new TypeError(`The ${what} is asynchronous; acx uses tool schemas synchronously. Use a schema without async refinements or an async JSON Schema.`);
  }
  return result as T;
}

/** Zod 3, Standard Schema and AI SDK schemas: JSON Schema through the SDK's own converters, validation through the schema's own check. */
function normalizeForeign(schema: Exclude<CodeSchema, z.ZodType>): NormalizedSchema {
  const sdk = isZod3Schema(schema as object) ? zodSchema(schema as Zod3Type) : asSchema(schema as FlexibleSchema);
  const { $schema: _dialect, ...jsonSchema } = syncResult(sdk.jsonSchema, "schema's JSON Schema") as JsonSchema;
  let byJsonSchema: NormalizedSchema | undefined;
  return {
    jsonSchema,
    validate(value) {
      if (isZod3Schema(schema as object)) {
        const parsed = (schema as Zod3Type).safeParse(value);
        return parsed.success ? { ok: true, value: parsed.data } : { ok: false, errors: issueLines(parsed.error.issues) };
      }
      const standard = (schema as { '~standard'?: { vendor: string; validate(v: unknown): unknown } })['~standard'];
      if (standard) {
        const result = syncResult(standard.validate(value), `${standard.vendor} schema's validation`) as { value?: unknown; issues?: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }> };
        return result.issues ? { ok: false, errors: issueLines(result.issues) } : { ok: true, value: result.value };
      }
      if (!sdk.validate) return (byJsonSchema ??= normalizeJsonSchema(jsonSchema)).validate(value);
      const result = syncResult(sdk.validate(value), "AI SDK schema's validation") as { success: boolean; value?: unknown; error?: Error };
      return result.success ? { ok: true, value: result.value } : { ok: false, errors: [`/: ${result.error?.message ?? 'invalid'}`] };
    },
  };
}

/**
 * A code schema's normal form, kept with the schema: code schemas do not change once built, and
 * an engine is opened per session (a worker's per event), so converting a tool's zod schema to
 * JSON Schema every time would be paid again and again for the same answer. Plain JSON Schema
 * objects are checked against the meta-schema each time, as before.
 */
const normalizedCode = new WeakMap<object, NormalizedSchema>();

export function normalizeSchema(schema: InputSchema): NormalizedSchema {
  if (!isCodeSchema(schema)) return normalizeJsonSchema(schema);
  let normalized = normalizedCode.get(schema);
  if (!normalized) {
    normalized = isZod4Schema(schema as object) ? normalizeZod4(schema as z.ZodType) : normalizeForeign(schema as Exclude<CodeSchema, z.ZodType>);
    normalizedCode.set(schema, normalized);
  }
  return normalized;
}

/**
 * A tool's input schema, normalised. A code schema's JSON Schema is made on first read (see
 * normalizeZod4), so a user's is read here: one with no JSON Schema form is refused where the
 * tool is defined, not at the model call. acx's own schemas (lazySchema) wait for their reader.
 */
export function normalizeToolSchema(schema: InputSchema): NormalizedSchema {
  const normalized = normalizeSchema(schema);
  if (!isOwnSchema(schema)) void normalized.jsonSchema;
  return normalized;
}

function normalizeZod4(schema: z.ZodType): NormalizedSchema {
  // Converted on first read: a tool's JSON Schema is for the model's request, and a replayed run
  // (whose cassette matches tools by name) or a run that never calls the model never reads it.
  let jsonSchema: JsonSchema | undefined;
  return {
    get jsonSchema() {
      return (jsonSchema ??= z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as JsonSchema);
    },
    validate(value) {
      const parsed = schema.safeParse(value);
      if (parsed.success) return { ok: true, value: parsed.data };
      return { ok: false, errors: issueLines(parsed.error.issues) };
    },
  };
}

/** One line per problem, `/path/to/field: message`, for zod 3 and 4 and Standard Schema issues alike. */
function issueLines(issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> | undefined }>): string[] {
  return issues.map((issue) => `/${(issue.path ?? []).map((k) => String(typeof k === 'object' ? k.key : k)).join('/')}: ${issue.message}`);
}

function normalizeJsonSchema(schema: JsonSchema): NormalizedSchema {
  // Checked against the meta-schema now (cheap), compiled on first use: most tools are never
  // called in a given run, and compiling every schema up front costs start-up time.
  if (!ajv().validateSchema(schema)) {
    throw new TypeError(`Invalid JSON Schema: ${ajv().errorsText(ajv().errors)}`);
  }
  let validator: ValidateFunction | undefined;
  const compile = (): ValidateFunction => {
    try {
      return (validator ??= ajv().compile(schema));
    } catch (error) {
      throw new TypeError(`Invalid JSON Schema: ${(error as Error).message}`);
    }
  };
  return {
    jsonSchema: schema,
    validate(value) {
      const check = compile();
      if (check(value)) return { ok: true, value };
      return {
        ok: false,
        errors: (check.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`),
      };
    },
  };
}
