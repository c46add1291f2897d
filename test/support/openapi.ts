// The BaseCradle API description (../shared/basecradle/openapi.yaml, OpenAPI 3.2) as a test oracle:
// every response a test gets from the local platform is checked against the schema the spec gives
// for its path, method and status, and every operation a test reached is recorded, so a test can
// fail when an operation in the spec was never exercised.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { ROOT } from './cli.ts';

export const OPENAPI_PATH = join(ROOT, '..', 'shared', 'basecradle', 'openapi.yaml');
export const OPENAPI_MISSING = existsSync(OPENAPI_PATH) ? undefined : `${OPENAPI_PATH} is not there (the shared/ folder beside the checkout)`;

/** The problem codes of the platform (FACTS.md's table): an error body must carry one of them. */
export const PROBLEM_CODES = new Set([
  'unauthorized', 'invalid_credentials', 'invalid_signature', 'account_suspended', 'not_a_viewer', 'not_timeline_owner',
  'not_task_author', 'timeline_locked', 'not_found', 'task_not_pending', 'validation_failed', 'current_password_incorrect',
  'password_confirmation_mismatch', 'rate_limited', 'invalid_cursor', 'invalid_filter', 'endpoint_disabled', 'payload_too_large',
]);

type Schema = Record<string, unknown>;
interface MediaType { schema?: Schema }
interface ResponseSpec { description?: string; content?: Record<string, MediaType> }
interface OperationSpec { responses: Record<string, ResponseSpec> }

export interface Operation {
  method: string;
  path: string;
  /** Documented status → content type → schema (undefined: no body). Compiled when first used. */
  responses: Map<string, Map<string, Schema | undefined>>;
}

/**
 * Where the generated spec is narrower than the platform it describes. The spec is generated
 * from the platform's test suite, so a shape its fixtures never produced is missing from it;
 * each widening names the fact it rests on. Nothing else is relaxed.
 */
function widen(path: string, method: string, status: string, schema: Schema, itemSchemas: Record<string, Schema>): Schema {
  const copy = structuredClone(schema) as { properties?: Record<string, Schema> };
  // 1. Lists page: next_cursor is a string until the last page (FACTS.md, "Pagination"). The
  //    fixtures never filled a page of 50, so the spec only ever saw null.
  if (copy.properties?.next_cursor) copy.properties.next_cursor = { type: ['string', 'null'] };
  // 2. A timeline's items are its messages, assets, tasks and webhook events (FACTS.md,
  //    "Timelines"/"Items"); the fixture held messages only. Each item is held to the spec's own
  //    schema for that kind (the schema of GET /<kind>s/{id}), chosen by its `type`.
  if (path === '/timelines/{id}' && method === 'get' && status === '200' && copy.properties?.items) {
    copy.properties.items = {
      type: 'array',
      items: {
        oneOf: Object.entries(itemSchemas).map(([type, item]) => ({ ...item, properties: { ...(item.properties as object), type: { const: type } } })),
      },
    };
  }
  return copy as Schema;
}

/**
 * The spec as an oracle. Each schema is compiled the first time a response needs it, so a test
 * file pays for the few operations it reaches, not for the whole spec.
 */
export class OpenApiSpec {
  readonly operations: Operation[] = [];
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<Schema, ValidateFunction>();
  private readonly problemSchema: Schema;
  private readonly byTemplate = new Map<string, Operation>();

  constructor(text: string = readFileSync(OPENAPI_PATH, 'utf8')) {
    const doc = parse(text) as { paths: Record<string, Record<string, OperationSpec>> };
    const itemSchemas = Object.fromEntries(
      (['message', 'asset', 'task', 'webhook_event'] as const).map((type) => {
        const show = doc.paths[`/${type}s/{id}`]!.get!.responses['200']!.content!['application/json']!.schema as { properties: Record<string, Schema> };
        return [type, show.properties[type]!];
      }),
    );
    let problemSchema: Schema | undefined;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === 'parameters') continue;
        const responses = new Map<string, Map<string, Schema | undefined>>();
        for (const [status, response] of Object.entries(op.responses)) {
          const byType = new Map<string, Schema | undefined>();
          for (const [type, media] of Object.entries(response.content ?? {})) {
            byType.set(type, media.schema ? widen(path, method, status, media.schema, itemSchemas) : undefined);
            if (type === 'application/problem+json' && !problemSchema && status !== '422') problemSchema = media.schema;
          }
          responses.set(status, byType);
        }
        const operation = { method: method.toUpperCase(), path, responses };
        this.operations.push(operation);
        this.byTemplate.set(`${operation.method} ${templateKey(path)}`, operation);
      }
    }
    this.problemSchema = problemSchema!;
  }

  /** The operation a concrete request is for: `{param}` segments match any one segment. */
  match(method: string, concretePath: string): Operation | undefined {
    const segments = concretePath.split('?')[0]!.split('/');
    const candidates = this.operations.filter((op) => {
      if (op.method !== method.toUpperCase()) return false;
      const template = op.path.split('/');
      return template.length === segments.length && template.every((part, i) => part.startsWith('{') || part === segments[i]);
    });
    // A literal segment beats a parameter (/users/dashboard over /users/{id}).
    return candidates.sort((a, b) => literalCount(b.path) - literalCount(a.path))[0];
  }

  /** The operation a server route template is (`/timelines/:timeline_id` or `/timelines/{id}`); undefined when the spec has none. */
  forRoute(method: string, route: string): Operation | undefined {
    return this.byTemplate.get(`${method.toUpperCase()} ${templateKey(route)}`);
  }

  /** What is wrong with a response, by the spec; empty when nothing is. */
  check(op: Operation, status: number, contentType: string | null, body: unknown): string[] {
    const where = `${op.method} ${op.path} → ${status}`;
    const documented = op.responses.get(String(status));
    const type = (contentType ?? '').split(';')[0]!.trim();
    if (!documented) {
      // An error the spec's fixtures never produced: it must still be a problem document with a known code.
      if (status < 400) return [`${where}: a success status the spec does not document for this operation`];
      return this.problemErrors(where, type, body);
    }
    if (documented.size === 0) return body === '' || body === undefined ? [] : [`${where}: the spec documents no body, and there was one`];
    if (!documented.has(type)) return [`${where}: content type ${type || 'none'}, the spec documents ${[...documented.keys()].join(' or ')}`];
    const schema = documented.get(type);
    const errors: string[] = [];
    const validate = schema && this.validator(schema);
    if (validate && !validate(body)) errors.push(`${where}: ${JSON.stringify(validate.errors?.slice(0, 5))}`);
    if (type === 'application/problem+json') errors.push(...this.problemErrors(where, type, body));
    return errors;
  }

  /** An error answer the spec has no operation for (a route it does not describe): a problem document with a known code. */
  checkError(where: string, contentType: string | null, body: unknown): string[] {
    return this.problemErrors(where, (contentType ?? '').split(';')[0]!.trim(), body);
  }

  private problemErrors(where: string, type: string, body: unknown): string[] {
    if (type !== 'application/problem+json') return [`${where}: an error must be application/problem+json, not ${type || 'nothing'}`];
    const errors: string[] = [];
    const problem = this.validator(this.problemSchema);
    if (!problem(body)) errors.push(`${where}: not a problem document: ${JSON.stringify(problem.errors?.slice(0, 3))}`);
    const code = (body as { code?: unknown } | undefined)?.code;
    if (typeof code !== 'string' || !PROBLEM_CODES.has(code)) errors.push(`${where}: problem code ${JSON.stringify(code)} is not one of the platform's codes`);
    return errors;
  }

  private validator(schema: Schema): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (!validate) this.compiled.set(schema, (validate = this.ajv.compile(schema)));
    return validate;
  }
}

/** A path template with its parameter names dropped, so `/users/:id` and `/users/{user_id}` compare. */
const templateKey = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z_]+/g, '{}');

const literalCount = (path: string) => path.split('/').filter((part) => part && !part.startsWith('{')).length;

let loaded: OpenApiSpec | undefined;
/** The spec, parsed and compiled once per test file. */
export function openApiSpec(): OpenApiSpec {
  return (loaded ??= new OpenApiSpec());
}
