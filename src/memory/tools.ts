import { createHash } from 'node:crypto';
import { z } from 'zod';
import { MemoryInputError, slugifyKey } from './keys.ts';
import { describeMiss, MAX_VALUE_CHARS, MemoryStore, type MemoryRecord } from './store.ts';
import { type MemoryRecords, SqliteMemoryRecords } from './records.ts';
import type { Tool } from '../core/tool.ts';
import { lazySchema } from '../core/lazy-schema.ts';

/**
 * The model-facing memory tools over a MemoryStore.
 *
 * Why five tools and not one `memory` tool with an `action` field: permission modes and crash
 * recovery decide per tool, from its `kind` and `effect`. One mixed tool would have to be
 * `edit` (so `allow-reads` would also block reading memory) or `read` (so `allow-reads` would let
 * the model overwrite and delete memories). Split, each tool tells the truth:
 *   memory_read / memory_list / memory_search  kind 'read', effect 'read-only'
 *   memory_write                                kind 'edit', effect 'idempotent' (an upsert: re-running
 *                                               the same call after a crash leaves the same record)
 *   memory_delete                               kind 'edit', effect 'idempotent' (deleting twice = once)
 *
 * The cartridge contract names two roles with fixed shapes: `acx:memory.write` (`add_memory`,
 * `{summary}`) and `acx:search` (`search_memory`, `{query}`). createAddMemoryTool and
 * createSearchMemoryTool provide those shapes so a role can bind to them.
 *
 * Results are plain text written for the model. A read miss is a normal result that lists the
 * nearest keys, so a wrong guess corrects itself; malformed input throws MemoryInputError.
 */

/** How much of one value a list or search result shows before pointing at memory_read. */
const PREVIEW_CHARS = 160;
const SEARCH_VALUE_CHARS = 600;

const keyField = lazySchema(() => z.string().min(1).max(200).describe('A short slug such as "home_city" or "projects/acx/owner": letters, digits and . _ - / :'));

// Built on first use (lazySchema): a run builds only the schemas of the tools it offers.
export const memoryWriteInput = lazySchema(() =>
  z.object({
    key: keyField(),
    value: z.string().min(1).max(MAX_VALUE_CHARS).describe('The fact to remember, as text.'),
    tags: z.array(z.string().min(1).max(100)).max(20).optional().describe('Optional labels.'),
  }),
);
export const memoryKeyInput = lazySchema(() => z.object({ key: keyField() }));
export const memoryListInput = lazySchema(() =>
  z.object({
    prefix: z.string().max(200).optional().describe('Only keys starting with this, e.g. "projects/".'),
    limit: z.number().int().min(1).max(500).optional().describe('At most this many keys (default 100).'),
  }),
);
export const memorySearchInput = lazySchema(() =>
  z.object({
    query: z.string().min(1).max(2000).describe('Words to look for in keys and values, e.g. "texas city".'),
    limit: z.number().int().min(1).max(50).optional().describe('At most this many results (default 10).'),
  }),
);
export const addMemoryInput = lazySchema(() =>
  z.object({
    summary: z.string().min(1).max(MAX_VALUE_CHARS).describe('The fact or summary to keep.'),
    key: keyField().optional().describe('Optional key; derived from the summary when omitted.'),
  }),
);
export const searchMemoryInput = lazySchema(() =>
  z.object({
    query: z.string().min(1).max(2000).describe('What to recall, in words.'),
    limit: z.number().int().min(1).max(50).optional(),
  }),
);

type Schema = z.ZodType;

/**
 * A store, or a function that opens it on first use (so listing a provider's tools, e.g. for
 * `acx resolved-config`, creates no file or connection). A synchronous SQLite MemoryStore is
 * taken as it is, behind the async interface.
 */
export type MemoryStoreSource = MemoryRecords | MemoryStore | (() => MemoryRecords | MemoryStore);

const wrapped = new WeakMap<MemoryStore, MemoryRecords>();

function resolve(source: MemoryStoreSource): MemoryRecords {
  const store = typeof source === 'function' ? source() : source;
  if (!(store instanceof MemoryStore)) return store;
  let records = wrapped.get(store);
  if (!records) wrapped.set(store, (records = new SqliteMemoryRecords(store)));
  return records;
}

/** Validates inside `execute` too: MCP clients and direct callers bypass the engine's check. */
function parse<S extends Schema>(schema: S, input: unknown, tool: string): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data as z.output<S>;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('; ');
  throw new MemoryInputError(`Invalid input for ${tool}: ${problems}.`, `Check the ${tool} parameters and try again.`);
}

export function createMemoryWriteTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof memoryWriteInput>>> {
  return {
    name: 'memory_write',
    description:
      'Save a fact to durable memory under a key (overwrites the key if it exists). Memory persists across sessions; recall it later with memory_read or memory_search.',
    inputSchema: memoryWriteInput(),
    capabilityScopes: ['memory.write'],
    kind: 'edit',
    effect: 'idempotent',
    async execute(input) {
      const store = resolve(source);
      const { key, value, tags } = parse(memoryWriteInput(), input, 'memory_write');
      const { record, created } = await store.write(key, value, { source: 'tool', ...(tags ? { tags } : {}) });
      return created ? `Saved ${JSON.stringify(key)}.` : `Updated ${JSON.stringify(key)} (first saved ${record.createdAt}).`;
    },
  };
}

export function createMemoryReadTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof memoryKeyInput>>> {
  return {
    name: 'memory_read',
    description: 'Read the memory saved under a key. If the key does not exist, the nearest existing keys are listed.',
    inputSchema: memoryKeyInput(),
    capabilityScopes: ['memory.read'],
    kind: 'read',
    effect: 'read-only',
    async execute(input) {
      const store = resolve(source);
      const { key } = parse(memoryKeyInput(), input, 'memory_read');
      const record = await store.get(key);
      if (!record) return describeMiss(key, await store.suggestKeys(key), await store.count());
      return `${record.key} (saved ${record.createdAt}, updated ${record.updatedAt}):\n${record.value}`;
    },
  };
}

export function createMemoryListTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof memoryListInput>>> {
  return {
    name: 'memory_list',
    description: 'List the keys in durable memory (optionally only those under a prefix), with a short preview of each value.',
    inputSchema: memoryListInput(),
    capabilityScopes: ['memory.read'],
    kind: 'read',
    effect: 'read-only',
    async execute(input) {
      const store = resolve(source);
      const { prefix, limit } = parse(memoryListInput(), input, 'memory_list');
      const total = await store.count(prefix);
      const where = prefix ? ` under ${JSON.stringify(prefix)}` : '';
      if (total === 0) return prefix ? `No memories${where}.` : 'No memories yet.';
      const records = await store.list({ ...(prefix ? { prefix } : {}), limit: limit ?? 100 });
      const head = records.length < total ? `${total} memories${where}; the first ${records.length}:` : `${total} memories${where}:`;
      return [head, ...records.map((r) => `${r.key}: ${preview(r.value, PREVIEW_CHARS)}`)].join('\n');
    },
  };
}

export function createMemoryDeleteTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof memoryKeyInput>>> {
  return {
    name: 'memory_delete',
    description: 'Forget the memory saved under a key.',
    inputSchema: memoryKeyInput(),
    capabilityScopes: ['memory.write'],
    kind: 'edit',
    effect: 'idempotent',
    async execute(input) {
      const store = resolve(source);
      const { key } = parse(memoryKeyInput(), input, 'memory_delete');
      return (await store.delete(key)) ? `Deleted ${JSON.stringify(key)}.` : `Nothing to delete: no memory under ${JSON.stringify(key)}.`;
    },
  };
}

export function createMemorySearchTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof memorySearchInput>>> {
  return {
    name: 'memory_search',
    description:
      'Keyword search over the keys and values in durable memory, best matches first. Use it when you do not remember the exact key.',
    inputSchema: memorySearchInput(),
    capabilityScopes: ['search', 'memory.read'],
    kind: 'read',
    effect: 'read-only',
    async execute(input) {
      const store = resolve(source);
      const { query, limit } = parse(memorySearchInput(), input, 'memory_search');
      return await formatSearch(store, query, limit);
    },
  };
}

/** The five memory tools, in the order a model reads them. */
export function createMemoryTools(source: MemoryStoreSource): Tool[] {
  return [
    createMemoryWriteTool(source),
    createMemoryReadTool(source),
    createMemoryListTool(source),
    createMemorySearchTool(source),
    createMemoryDeleteTool(source),
  ];
}

/**
 * `add_memory` for the `acx:memory.write` role: appends a record from a summary. The key is
 * derived from the summary's words plus its digest unless given, so re-running the same call
 * (crash recovery) lands on the same key: idempotent.
 */
export function createAddMemoryTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof addMemoryInput>>> {
  return {
    name: 'add_memory',
    description: 'Append a durable memory record (a fact or summary worth keeping across sessions).',
    inputSchema: addMemoryInput(),
    capabilityScopes: ['memory.write'],
    kind: 'edit',
    effect: 'idempotent',
    async execute(input) {
      const store = resolve(source);
      const { summary, key } = parse(addMemoryInput(), input, 'add_memory');
      const finalKey = key ?? summaryKey(summary);
      const { created } = await store.write(finalKey, summary, { source: 'tool' });
      return created ? `Saved as ${JSON.stringify(finalKey)}.` : `Already remembered; updated ${JSON.stringify(finalKey)}.`;
    },
  };
}

/** `search_memory` for the `acx:search` role. */
export function createSearchMemoryTool(source: MemoryStoreSource): Tool<z.input<ReturnType<typeof searchMemoryInput>>> {
  return {
    name: 'search_memory',
    description: 'Search durable memory by keywords over keys and values, best matches first.',
    inputSchema: searchMemoryInput(),
    capabilityScopes: ['search', 'memory.read'],
    kind: 'read',
    effect: 'read-only',
    async execute(input) {
      const store = resolve(source);
      const { query, limit } = parse(searchMemoryInput(), input, 'search_memory');
      return await formatSearch(store, query, limit);
    },
  };
}

/** `notes/<first words>-<8 hex of sha256(summary)>`. */
export function summaryKey(summary: string): string {
  const firstWords = summary.toLowerCase().replace(/[/:.]+/g, ' ').trim().split(/\s+/).slice(0, 6).join('-');
  const words = slugifyKey(firstWords, 48).replace(/_+/g, '_');
  const digest = createHash('sha256').update(summary).digest('hex').slice(0, 8);
  return words ? `notes/${words}-${digest}` : `notes/${digest}`;
}

async function formatSearch(store: MemoryRecords, query: string, limit: number | undefined): Promise<string> {
  const hits = await store.search(query, { limit: limit ?? 10 });
  if (hits.length === 0) {
    const total = await store.count();
    return total === 0
      ? `No memories match ${JSON.stringify(query)}: the memory is empty.`
      : `No memories match ${JSON.stringify(query)}. Try other words, or memory_list to see the keys.`;
  }
  const lines = hits.map((hit: MemoryRecord) => `${hit.key}: ${preview(hit.value, SEARCH_VALUE_CHARS)}`);
  return [`Memories matching ${JSON.stringify(query)}:`, ...lines].join('\n');
}

/** One line, bounded; a cut value says how to get the rest. */
export function preview(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max)}… (${flat.length - max} more chars; memory_read for all)`;
}
