import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { JsonSchema } from '../tools/schema.ts';

/**
 * One shared 2020-12 validator for schemas that arrive at run time (contract and tool input
 * schemas). Creating an Ajv instance costs tens of milliseconds, so schemas are compiled on this
 * one and removed again by `dispose`; `$id`/`$schema` are stripped so two tools that reuse an id
 * (or declare draft-07) cannot collide or fail on an unknown meta-schema.
 */
const shared = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });

export interface TransientValidator {
  validate: ValidateFunction;
  dispose(): void;
}

export function compileTransient(schema: JsonSchema | boolean): TransientValidator {
  const prepared = withoutIds(schema);
  const validate = shared.compile(prepared);
  return {
    validate,
    dispose() {
      if (typeof prepared !== 'boolean') shared.removeSchema(prepared);
    },
  };
}

/** Problems with a schema against the 2020-12 meta-schema (cheap: nothing is compiled); undefined when valid. */
export function metaSchemaErrors(schema: JsonSchema | boolean): string | undefined {
  if (shared.validateSchema(withoutIds(schema)) === true) return undefined;
  return shared.errorsText(shared.errors, { dataVar: 'schema' });
}

/** Throws with ajv's message when the schema does not compile. */
export function assertCompiles(schema: JsonSchema | boolean): void {
  compileTransient(schema).dispose();
}

export function withoutIds(node: JsonSchema | boolean): JsonSchema | boolean {
  if (typeof node === 'boolean') return node;
  return JSON.parse(JSON.stringify(node, (key, value) => (key === '$id' || key === '$schema' ? undefined : value))) as JsonSchema;
}
