import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';

/**
 * Tool input schemas arrive as zod (TypeScript authors) or as JSON Schema 2020-12 (MCP servers,
 * cartridges). Both are normalised here to one JSON Schema for the model and one validator.
 */
export type JsonSchema = { [key: string]: unknown };
export type InputSchema = JsonSchema | z.ZodType;

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

const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });

export function isZodSchema(schema: unknown): schema is z.ZodType {
  return typeof schema === 'object' && schema !== null && typeof (schema as z.ZodType).safeParse === 'function';
}

export function normalizeSchema(schema: InputSchema): NormalizedSchema {
  if (isZodSchema(schema)) {
    const jsonSchema = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as JsonSchema;
    return {
      jsonSchema,
      validate(value) {
        const parsed = schema.safeParse(value);
        if (parsed.success) return { ok: true, value: parsed.data };
        return {
          ok: false,
          errors: parsed.error.issues.map((issue) => `/${issue.path.join('/')}: ${issue.message}`),
        };
      },
    };
  }
  // Checked against the meta-schema now (cheap), compiled on first use: most tools are never
  // called in a given run, and compiling every schema up front costs start-up time.
  if (!ajv.validateSchema(schema)) {
    throw new TypeError(`Invalid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
  }
  let validator: ValidateFunction | undefined;
  const compile = (): ValidateFunction => {
    try {
      return (validator ??= ajv.compile(schema));
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
