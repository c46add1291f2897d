import type { Logger } from '../util/logger.ts';
import type { CodeSchema, InferInput, InputSchema, JsonSchema } from './schema.ts';

/**
 * The Tool contract. Every tool the engine (or an ACP agent through acx's MCP server) can call
 * is one of these, whether built in, user-defined, or bridged from an MCP server.
 */

/** The closed capability vocabulary of the cartridge spec (§8.3), extensible only with `x-`. */
export const CAPABILITY_SCOPES = [
  'exec',
  'dispatch',
  'memory.write',
  'memory.read',
  'search',
  'knowledge.write',
  'fs.read',
  'fs.write',
  'net.fetch',
] as const;
export type StandardCapabilityScope = (typeof CAPABILITY_SCOPES)[number];
export type CapabilityScope = StandardCapabilityScope | `x-${string}`;

export function isCapabilityScope(value: string): value is CapabilityScope {
  return (CAPABILITY_SCOPES as readonly string[]).includes(value) || /^x-[a-z0-9][a-z0-9._-]*$/.test(value);
}

/** What a tool does, for permission modes: allow-reads allows `read`, allow-edits adds `edit`. */
export type ToolKind = 'read' | 'edit' | 'execute' | 'fetch' | 'other';

/**
 * Whether running the tool twice is harmless. Crash recovery re-runs an interrupted call only
 * when it is `read-only` or `idempotent`; an `unsafe` call is reported to the model as unknown.
 */
export type ToolEffect = 'read-only' | 'idempotent' | 'unsafe';

export interface ToolContext {
  toolCallId: string;
  sessionId: string;
  /** A stable key for this call, the same when a crashed turn is resumed (for idempotent creates). */
  idempotencyKey: string;
  /**
   * The calls this turn made before this one, in the journal's order (step, then position in the
   * step), from any process that worked on the turn: evidence a tool can derive its own stable
   * keys from (the n-th create of a kind in a turn). Absent outside the engine.
   */
  earlierCalls?: () => ReadonlyArray<{ toolName: string; input: unknown }>;
  abortSignal: AbortSignal;
  logger: Logger;
  /** Tells the caller about a file this call changed (the engine streams it as a `file-change` part). */
  onFileChange?: (change: FileChange) => void;
}

/** A file a tool call changed, its path as the tool shows it to the model. */
export interface FileChange {
  path: string;
  kind: 'created' | 'modified' | 'deleted';
}

export type ToolContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mediaType: string };

/** What `execute` may return: text, any JSON value, or content parts (text and images). */
export type ToolOutput = string | ToolContentPart[] | { content: ToolContentPart[] } | unknown;

export interface Tool<INPUT = any> {
  name: string;
  description: string;
  inputSchema: InputSchema;
  capabilityScopes: readonly CapabilityScope[];
  kind: ToolKind;
  effect: ToolEffect;
  /** Always ask the host before running, whatever the permission mode. */
  needsApproval?: boolean;
  /** A call is a visible action (speech, a post, a shared file): it counts against the reply nudge. */
  visible?: boolean;
  /** A tool without `execute` pauses the turn until the caller supplies its result. */
  execute?: (input: INPUT, context: ToolContext) => Promise<ToolOutput> | ToolOutput;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function isValidToolName(name: string): boolean {
  return TOOL_NAME.test(name);
}

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
