import { randomBytes } from 'node:crypto';
import { createAddMemoryTool, createMemoryTools, createSearchMemoryTool, preview } from './tools.ts';
import type { Tool } from '../core/tool.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { scrubDeep, scrubSecrets } from '../util/scrub.ts';
import { slugifyKey, validateMemoryKey } from './keys.ts';
import { type MemoryRecords, openSqliteMemory } from './records.ts';

/**
 * The MemoryProvider seam: the whole memory backend swaps without touching the engine.
 * The engine calls `context` at turn start (inject recalled memory before the model runs),
 * `observe` after each engaged turn (capture what was said), `remember` to keep compaction
 * summaries, and offers the model `tools()`. Always call the hooks through safeObserve /
 * safeContext: a memory backend failure must never break a turn.
 */

export interface MemoryExchange {
  agentId: string;
  sessionId: string;
  prompt: string;
  /** The turn's final text. */
  text: string;
  /** True when the final text went to nobody (narration, a note to self). */
  unspoken: boolean;
  toolCalls: { name: string; input: unknown }[];
}

export interface MemoryScope {
  agentId: string;
  sessionId: string;
  /** The incoming turn's text. */
  query: string;
}

export interface MemoryProvider {
  /** e.g. 'sqlite'; reported by `acx resolved-config` as the bound backend. */
  readonly name: string;
  /** Model-facing memory operations (may be empty). */
  tools(): Tool[];
  /** After each engaged turn. */
  observe(exchange: MemoryExchange): Promise<void>;
  /** At turn start; undefined injects nothing. */
  context(scope: MemoryScope): Promise<string | undefined>;
  /** Durable write used by the engine (compaction summaries). */
  remember(key: string, value: string): Promise<void>;
  close(): Promise<void> | void;
}

export interface SqliteMemoryProviderOptions {
  /** The SQLite file, e.g. `<home>/memory.db`. Opened (and migrated) on first use. */
  path: string;
  /**
   * Where the records live instead of that file (a PostgreSQL memory: see
   * src/memory/postgres-store.ts); called once, on first use.
   */
  records?: () => MemoryRecords;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => Date;
  /** How many memories `context` injects at most. Default 5. */
  contextLimit?: number;
  /** Record exchanges in `observe`. Default true; false leaves memory to explicit tool writes. */
  observe?: boolean;
}

export interface SqliteMemoryProvider extends MemoryProvider {
  readonly name: 'sqlite';
  /** The store, opened on first access; for binding contract roles (add_memory, search_memory). */
  readonly store: MemoryRecords;
  /** The tools for the cartridge roles `acx:memory.write` and `acx:search`. */
  roleTools(): { 'acx:memory.write': Tool; 'acx:search': Tool };
}

/** Bounds on what one observed exchange keeps, so memory stays a memory and not a transcript. */
const OBSERVED_PROMPT_CHARS = 3000;
const OBSERVED_TEXT_CHARS = 3000;
const OBSERVED_TOOL_INPUT_CHARS = 300;
const OBSERVED_TOOL_CALLS = 10;
/** How much of one memory the injected block shows. */
const CONTEXT_VALUE_CHARS = 400;

export function createSqliteMemoryProvider(options: SqliteMemoryProviderOptions): SqliteMemoryProvider {
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? (() => new Date());
  const contextLimit = Math.max(1, options.contextLimit ?? 5);
  const observeEnabled = options.observe ?? true;
  let store: MemoryRecords | undefined;
  let closed = false;

  const open = (): MemoryRecords => {
    if (closed) {
      throw new AcxError('memory-closed', 'The memory provider was closed.', { hint: 'Create a new provider for the same path.' });
    }
    if (!store) {
      store = options.records ? options.records() : openSqliteMemory(options.path, { now });
      logger.debug('memory.open', { provider: 'sqlite', store: store.kind, ...(store.kind === 'sqlite' ? { path: options.path } : {}) });
    }
    return store;
  };

  return {
    name: 'sqlite',
    get store() {
      return open();
    },
    tools: () => createMemoryTools(open),
    roleTools: () => ({ 'acx:memory.write': createAddMemoryTool(open), 'acx:search': createSearchMemoryTool(open) }),

    async observe(exchange) {
      if (!observeEnabled) return;
      const value = formatExchange(exchange);
      if (value === undefined) return;
      const key = observedKey(exchange.sessionId, now());
      await open().write(key, value, { source: observedSource(exchange.sessionId), tags: ['observed', `agent:${exchange.agentId}`] });
    },

    async context(scope) {
      // The current session's own exchanges are already in its transcript: recall the others.
      const hits = await open().search(scope.query, {
        limit: contextLimit,
        stopwords: 'strict',
        excludeSource: observedSource(scope.sessionId),
      });
      if (hits.length === 0) return undefined;
      const lines = hits.map((hit) => `- ${hit.key} (${hit.updatedAt.slice(0, 10)}): ${preview(hit.value, CONTEXT_VALUE_CHARS)}`);
      return ['Relevant memories (recalled from earlier sessions; may be out of date):', ...lines].join('\n');
    },

    async remember(key, value) {
      await open().write(validateMemoryKey(key), value, { source: 'engine' });
    },

    async close() {
      closed = true;
      const open = store;
      store = undefined;
      await open?.close();
    },
  };
}

/** `observed/<session slug>/<UTC timestamp>-<random>`: sortable by time within a session. */
export function observedKey(sessionId: string, at: Date): string {
  const session = slugifyKey(sessionId, 64).replace(/[/:]/g, '_') || 'session';
  const stamp = at.toISOString().replace(/[-:]/g, '').replace('.', '');
  return `observed/${session}/${stamp}-${randomBytes(3).toString('hex')}`;
}

export function observedSource(sessionId: string): string {
  return `session:${sessionId}`;
}

/**
 * The compact text kept for one exchange: the prompt, the reply (marked when unspoken), and
 * the tool calls with bounded inputs. Credential shapes are scrubbed: this text was not written
 * deliberately by the model, and memory can end up in a cartridge's SAVE zone. Each part is
 * scrubbed before it is cut (a cut through a key would leave a piece no pattern knows) or
 * serialised (JSON's escapes would hide a key's edges), and the whole again at the end (the
 * halves of a key pair may sit in different parts).
 */
export function formatExchange(exchange: MemoryExchange): string | undefined {
  const lines: string[] = [];
  const prompt = scrubSecrets(exchange.prompt.trim());
  const text = scrubSecrets(exchange.text.trim());
  if (prompt) lines.push(`User: ${clip(prompt, OBSERVED_PROMPT_CHARS)}`);
  if (text) lines.push(`${exchange.unspoken ? 'Agent (unspoken)' : 'Agent'}: ${clip(text, OBSERVED_TEXT_CHARS)}`);
  const calls = exchange.toolCalls.slice(0, OBSERVED_TOOL_CALLS).map((call) => {
    let input: string;
    try {
      input = JSON.stringify(scrubDeep(call.input)) ?? '';
    } catch {
      input = '[unserialisable input]';
    }
    return `${call.name}(${clip(input, OBSERVED_TOOL_INPUT_CHARS)})`;
  });
  if (exchange.toolCalls.length > OBSERVED_TOOL_CALLS) calls.push(`… ${exchange.toolCalls.length - OBSERVED_TOOL_CALLS} more`);
  if (calls.length > 0) lines.push(`Tools: ${calls.join('; ')}`);
  if (lines.length === 0) return undefined;
  return scrubSecrets(lines.join('\n'));
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

export interface SafeHookOptions {
  /** Give up on a hook that has not settled after this long (it keeps running, unawaited). Default 15 s. */
  timeoutMs?: number;
}

const DEFAULT_HOOK_TIMEOUT_MS = 15_000;

/** Runs `provider.observe`; a failure or a hang is logged as a WARNING and swallowed. */
export async function safeObserve(
  provider: Pick<MemoryProvider, 'name' | 'observe'>,
  exchange: MemoryExchange,
  logger: Logger,
  options: SafeHookOptions = {},
): Promise<void> {
  try {
    await withTimeout(() => provider.observe(exchange), options.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS);
  } catch (error) {
    logger.warn('memory.observe_failed', { provider: provider.name, session: exchange.sessionId, error: errorMessage(error) });
  }
}

/** Runs `provider.context`; a failure, a hang or a non-text answer injects nothing (logged). */
export async function safeContext(
  provider: Pick<MemoryProvider, 'name' | 'context'>,
  scope: MemoryScope,
  logger: Logger,
  options: SafeHookOptions = {},
): Promise<string | undefined> {
  try {
    const result = await withTimeout(() => provider.context(scope), options.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS);
    if (result === undefined || result === null) return undefined;
    if (typeof result !== 'string') {
      logger.warn('memory.context_invalid', { provider: provider.name, session: scope.sessionId, type: typeof result });
      return undefined;
    }
    return result.trim() === '' ? undefined : result;
  } catch (error) {
    logger.warn('memory.context_failed', { provider: provider.name, session: scope.sessionId, error: errorMessage(error) });
    return undefined;
  }
}

async function withTimeout<T>(fn: () => Promise<T> | T, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref?.();
  });
  try {
    // `fn` may throw synchronously; Promise.resolve().then turns that into a rejection. A hook
    // that loses the race and fails later must not become an unhandled rejection.
    const work = Promise.resolve().then(fn);
    work.catch(() => undefined);
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
