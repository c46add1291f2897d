// The BaseCradle client (src/channel) as the tests use it: every answer it reads is checked
// against openapi.yaml (test/support/openapi.ts) through the client's onResponse hook, and every
// operation it reached is recorded, so a test can fail when the spec has one nobody called.
import { randomUUID } from 'node:crypto';
import { BaseCradleClient, type BaseCradleClientOptions, BaseCradleError } from '../../src/channel/index.ts';
import { runTool, type ToolRunOutcome } from '../../src/tools/run.ts';
import { normalizeSchema } from '../../src/tools/schema.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { OPENAPI_MISSING, openApiSpec } from './openapi.ts';

export interface ClientObservations {
  /** `METHOD /template` of every operation an answer came back for. */
  operations: Set<string>;
  /** `METHOD /template STATUS`. */
  statuses: Set<string>;
  /** What the spec found wrong with an answer; a test expects this to stay empty. */
  violations: string[];
  /** Every request that got an answer, as `METHOD path?query STATUS`. */
  requests: string[];
}

export function newObservations(): ClientObservations {
  return { operations: new Set(), statuses: new Set(), violations: [], requests: [] };
}

/** A client whose every answer is validated against the spec and recorded in `seen`. */
export function checkedClient(seen: ClientObservations, options: BaseCradleClientOptions): BaseCradleClient {
  return new BaseCradleClient({
    env: {},
    ...options,
    onResponse(response) {
      seen.requests.push(`${response.method} ${response.path} ${response.status}`);
      options.onResponse?.(response);
      // The Markdown dashboard is not in the spec (its path would match /users/{id}).
      if (OPENAPI_MISSING || response.path.split('?')[0] === '/users/dashboard.md') return;
      const spec = openApiSpec();
      const op = spec.match(response.method, response.path);
      if (!op) return;
      seen.operations.add(`${op.method} ${op.path}`);
      seen.statuses.add(`${op.method} ${op.path} ${response.status}`);
      const body = response.body === undefined ? '' : response.body;
      seen.violations.push(...spec.check(op, response.status, response.headers.get('content-type'), body));
    },
  });
}

/** Every `METHOD /template` of openapi.yaml. */
export function specOperations(): string[] {
  return openApiSpec().operations.map((op) => `${op.method} ${op.path}`);
}

/** The BaseCradle error a promise rejects with; fails the test when it resolves or throws something else. */
export async function refusal(promise: Promise<unknown>): Promise<BaseCradleError> {
  try {
    await promise;
  } catch (error) {
    if (BaseCradleError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

/** Runs a tool as the engine does (schema check, execute, failures as results), with a call key that a resumed turn would reuse. */
export async function callTool(tools: readonly Tool[], name: string, input: unknown, idempotencyKey = randomUUID()): Promise<ToolRunOutcome> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  const context = { toolCallId: randomUUID(), sessionId: 'test', idempotencyKey, abortSignal: new AbortController().signal, logger: silentLogger };
  return runTool(tool, normalizeSchema(tool.inputSchema), input, context);
}

/** The text of a successful tool result (fails the test on a failed one). */
export function resultText(outcome: ToolRunOutcome): string {
  if (!outcome.ok) throw new Error(`tool failed: ${outcome.error}`);
  return String(outcome.output);
}
