import { z } from 'zod';
import { UUID_PATTERN } from '../ids.ts';
import type { Tool, ToolContentPart, ToolContext, ToolEffect, ToolKind } from '../../tools/tool.ts';
import { AcxError } from '../../core/errors.ts';
import type { BaseCradleClient } from '../client.ts';
import type { Page, PagedList } from '../pagination.ts';
import { APIConnectionError, BaseCradleError, RateLimitedError, ValidationError } from '../errors.ts';

/**
 * What every platform tool is built from: the client it acts through, the timeline the wake
 * fired on (the default target), and where a create's Idempotency-Key comes from.
 */
export interface PlatformToolsOptions {
  client: BaseCradleClient;
  /** The current timeline: creates and lists go there unless the call names another. */
  timeline?: string;
  /**
   * The Idempotency-Key for a create. Default: the call's own stable key, the same when a
   * crashed turn is resumed, so a re-issued create returns the first record. A wake passes its
   * deterministic keys here; returning undefined sends none.
   */
  idempotencyKey?: (kind: KeyedKind, context: ToolContext) => string | undefined | Promise<string | undefined>;
  /** The clock task offsets are counted from (tests pin it). */
  now?: () => Date;
  /**
   * The images tool calls of this turn returned, oldest first, for assets_post_image (the wake
   * supplies them from its transcript). Without it that tool is not offered.
   */
  recentToolImages?: () => readonly ToolImage[];
  /**
   * The agent's workspace: assets_create can then share a file from it by path (an image
   * generate_image saved, a report), read with the fs tools' confinement.
   */
  workspace?: string;
}

export interface ToolImage {
  /** Base64. */
  data: string;
  mediaType: string;
  /** The tool that returned it, to name it in the result. */
  toolName?: string;
}

export type KeyedKind = 'message' | 'asset' | 'task' | 'webhook_endpoint';

/** A model-facing failure: its message (what is wrong, then what to do) is what the model reads. */
export class PlatformToolError extends AcxError {
  constructor(message: string, hint?: string, cause?: unknown) {
    // The engine shows a tool's error message only, so the hint is part of it.
    super('platform_tool', hint ? `${message} ${hint}` : message, { ...(hint ? { hint } : {}), ...(cause === undefined ? {} : { cause }) });
    this.name = 'PlatformToolError';
  }
}

export const uuid = z.string().regex(UUID_PATTERN, 'must be a uuid');
export const timelineField = uuid.optional().describe('A timeline uuid; default: the current timeline.');
export const limitField = z.number().int().min(1).max(50).optional().describe('At most this many, newest first (default 20).');
export const beforeField = z.string().min(1).max(100).optional().describe('The cursor a previous call gave, to read older ones.');

interface Definition<S extends z.ZodType> {
  name: string;
  description: string;
  input: S;
  kind: ToolKind;
  effect: ToolEffect;
  visible?: boolean;
  /** Text for the model, or content parts (an image the engine's vision gate passes or describes). */
  run(input: z.output<S>, context: ToolContext): Promise<string | { content: ToolContentPart[] }>;
}

/**
 * A platform tool: arguments validated again inside execute (an MCP client or a direct caller
 * skips the engine's check), and a refusal of the platform relayed as a plain reason the model
 * can act on, not a stack of HTTP details.
 */
export function platformTool<S extends z.ZodType>(definition: Definition<S>): Tool<z.input<S>> {
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.input,
    capabilityScopes: ['x-basecradle'],
    kind: definition.kind,
    effect: definition.effect,
    ...(definition.visible ? { visible: true } : {}),
    async execute(input, context) {
      const parsed = definition.input.safeParse(input ?? {});
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('; ');
        throw new PlatformToolError(`Invalid input for ${definition.name}: ${problems}.`);
      }
      try {
        return await definition.run(parsed.data as z.output<S>, context);
      } catch (error) {
        if (BaseCradleError.isInstance(error)) throw new PlatformToolError(plainReason(error), undefined, error);
        throw error;
      }
    },
  };
}

/** A tool that only reads: runs under allow-reads, and is re-run freely after a crash. */
export function readTool<S extends z.ZodType>(definition: Omit<Definition<S>, 'kind' | 'effect'>): Tool<z.input<S>> {
  return platformTool({ ...definition, kind: 'read', effect: 'read-only' });
}

/** `<noun>s_read`: one item by its uuid, as its line and the timeline it is on. */
export function itemReadTool<T extends { timeline: { uuid: string } }>(noun: 'message' | 'asset' | 'task', description: string, get: (id: string, signal: AbortSignal) => Promise<T>, line: (item: T) => string): Tool {
  return readTool({
    name: `${noun}s_read`,
    description,
    input: z.object({ [noun]: uuid.describe(`The ${noun} uuid.`) }),
    async run(input, context) {
      const found = await get((input as Record<string, string>)[noun]!, context.abortSignal);
      return `${line(found)}\non timeline ${found.timeline.uuid}`;
    },
  });
}

/**
 * A tool that changes something and is safe to run twice: a keyed create, a grant, a lock.
 * Under allow-edits it runs unasked; crash recovery may re-run it.
 */
export function editTool<S extends z.ZodType>(definition: Omit<Definition<S>, 'kind' | 'effect'>): Tool<z.input<S>> {
  return platformTool({ ...definition, kind: 'edit', effect: 'idempotent' });
}

/** What the platform said, for a model: the reason, the field errors, when to retry; never the wire. */
export function plainReason(error: BaseCradleError): string {
  if (APIConnectionError.isInstance(error)) return `The platform could not be reached (${error.message.replace(/^No answer from BaseCradle for /, '')}).`;
  // The client's own refusals (no credentials, a bad argument) say what is wrong already.
  if (error.status === undefined) return error.describe();
  const fields = ValidationError.isInstance(error)
    ? Object.entries(error.errors)
        .map(([field, messages]) => `${field} ${messages.join(', ')}`)
        .join('; ')
    : '';
  const wait = RateLimitedError.isInstance(error) && error.retryAfter !== undefined ? ` Try again in ${error.retryAfter} s.` : '';
  const reason = error.detail ?? error.title ?? error.message;
  return `The platform refused (${error.code}): ${reason}${fields && !reason.includes(fields) ? ` (${fields})` : ''}${wait}`;
}

/** The timeline a call is about: its own, else the current one, else a clear refusal. */
export function targetTimeline(options: PlatformToolsOptions, given: string | undefined): string {
  const timeline = given ?? options.timeline;
  if (!timeline) throw new PlatformToolError('No timeline given and there is no current timeline.', 'Pass timeline=<uuid> (timelines_list shows yours).');
  return timeline;
}

/**
 * A page of one timeline's items (the current one unless named). The cross-timeline lists only
 * filter what you can view, so a timeline you cannot see reads as empty; an empty first page
 * asks the timeline itself, and the model hears why (not_a_viewer, not_found) instead of "none".
 */
export async function timelinePage<T>(options: PlatformToolsOptions, given: string | undefined, list: (timeline: string) => PagedList<T>, before: string | undefined): Promise<Page<T>> {
  const timeline = targetTimeline(options, given);
  const page = await list(timeline).page(before);
  if (page.items.length === 0 && before === undefined) await options.client.timelines.get(timeline);
  return page;
}

/** The key for a create of `kind` in this call (see PlatformToolsOptions.idempotencyKey). */
export async function createKey(options: PlatformToolsOptions, kind: KeyedKind, context: ToolContext): Promise<string | undefined> {
  return options.idempotencyKey ? options.idempotencyKey(kind, context) : context.idempotencyKey;
}
