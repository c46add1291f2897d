import type { FlexibleSchema, InferSchema } from '@ai-sdk/provider-utils';
import type { z } from 'zod';
import type { ZodTypeAny as Zod3Type } from 'zod/v3';
import type { ElicitationRequest, ElicitationResult } from './elicitation.ts';
import type { Logger } from './logger.ts';

/**
 * The Tool contract. Every tool the engine (or an ACP agent through acx's MCP server) can call
 * is one of these, whether built in, user-defined, or bridged from an MCP server.
 */

/** A tool input schema as JSON Schema 2020-12 (MCP servers, cartridges). */
export type JsonSchema = { [key: string]: unknown };
/** A schema written in code (zod 4, zod 3, any Standard Schema, an AI SDK `jsonSchema()`): what `tool()` infers `execute`'s input from. */
export type CodeSchema = z.ZodType | Zod3Type | FlexibleSchema<any>;
export type InputSchema = JsonSchema | CodeSchema;

/** The value a schema accepts, as TypeScript sees it; `any` for plain JSON Schema (nothing to infer from). */
export type InferInput<SCHEMA> = SCHEMA extends z.ZodType
  ? z.output<SCHEMA>
  : SCHEMA extends Zod3Type
    ? SCHEMA['_output']
    : [InferSchema<SCHEMA>] extends [never]
      ? any
      : InferSchema<SCHEMA>;

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
  earlierCalls?: () => Promise<ReadonlyArray<{ toolName: string; input: unknown }>>;
  abortSignal: AbortSignal;
  logger: Logger;
  /** Tells the caller about a file this call changed (the engine streams it as a `file-change` part). */
  onFileChange?: (change: FileChange) => void;
  /** On a timeline wake, for a tool plugin: the platform it runs on (absent anywhere else). */
  platform?: ToolPlatform;
  /**
   * Asks the user for input while the call runs (an MCP server's elicitation), when someone can
   * answer: absent where nobody can (the tool then declines on the user's behalf, saying why).
   */
  elicit?: (request: Omit<ElicitationRequest, 'toolCallId' | 'toolName'>) => Promise<ElicitationResult>;
}

/**
 * The platform a timeline wake runs on, as a tool plugin reaches it: the agent's own client
 * (acx's BaseCradleClient, authenticated as the agent) and the timeline the wake fired on.
 * Typed loosely here, below the channel layer; a plugin names the client's type itself.
 */
export interface ToolPlatform<Client = unknown> {
  readonly client: Client;
  readonly timeline: string;
}

/**
 * The largest content the journal keeps of one side of a file change (the fs_write limit): past
 * it only the hash is kept, so a rewind can still tell whether someone changed the file since,
 * but cannot restore that version.
 */
export const RECORDED_CONTENT_LIMIT = 10 * 1024 * 1024;

/** A file a tool call changed, its path as the tool shows it to the model. */
export interface FileChange {
  path: string;
  kind: 'created' | 'modified' | 'deleted';
  /**
   * What the engine needs to journal the change for `session.rewind({ files: true })`: the file's
   * absolute path, and its content just before the change when the tool read it (null: it did
   * not exist; absent: unknown). Absent: the change is reported, not recorded. Never streamed.
   */
  record?: { location: string; before?: Uint8Array | null };
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
