import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { MemoryRecords } from '../memory/records.ts';

/**
 * What `acx mcp` serves as MCP resources, read-only: the agent's standing instructions, and its
 * memory — one resource per key (a template, so a client completes keys) and a full-text search
 * (a template with the query), whose contents are the matching memories, each under its own URI.
 * One reader (`readServedResource`) answers resources/read and the subscription watch alike.
 */
export type ServedMemory = Pick<MemoryRecords, 'get' | 'list' | 'search' | 'suggestKeys'>;

export interface ServedResources {
  /** The agent's composed system prompt, served as acx://instructions. */
  instructions?: string | undefined;
  /** The agent's memory records, read-only; absent when its provider keeps no records acx can read. */
  memory?: ServedMemory | undefined;
}

export const INSTRUCTIONS_URI = 'acx://instructions';
/** `+`: reserved expansion, so a key's `/` stays as it is (keys use only URI-safe characters). */
export const MEMORY_KEY_TEMPLATE = 'acx://memory/{+key}';
export const MEMORY_SEARCH_TEMPLATE = 'acx://memory{?q}';
const MEMORY_KEY_PREFIX = 'acx://memory/';
/** How many memories resources/list names, and a search returns, at most. */
export const MEMORY_LIST_LIMIT = 100;
export const MEMORY_SEARCH_LIMIT = 20;
/** The MCP spec's code for a resource that does not exist. */
export const RESOURCE_NOT_FOUND = -32002;

export function memoryUri(key: string): string {
  return `${MEMORY_KEY_PREFIX}${key}`;
}

/** What `uri` names among the served resources, or undefined when it is none of them. */
export function servedResourceOf(resources: ServedResources, uri: string): { kind: 'instructions' } | { kind: 'memory'; key: string } | { kind: 'search'; query: string } | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  const normal = url.toString();
  if (resources.instructions !== undefined && normal === INSTRUCTIONS_URI) return { kind: 'instructions' };
  if (!resources.memory || url.protocol !== 'acx:' || url.host !== 'memory') return undefined;
  if (normal.startsWith(MEMORY_KEY_PREFIX) && !url.search) {
    const key = safeDecode(normal.slice(MEMORY_KEY_PREFIX.length));
    return key ? { kind: 'memory', key } : undefined;
  }
  if (url.pathname === '' && url.searchParams.has('q')) return { kind: 'search', query: url.searchParams.get('q') ?? '' };
  return undefined;
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The contents of a served resource; an unknown URI or a missing memory is an McpError (-32002, as the spec has it). */
export async function readServedResource(resources: ServedResources, uri: string): Promise<ReadResourceResult> {
  const served = servedResourceOf(resources, uri);
  if (!served) throw new McpError(RESOURCE_NOT_FOUND, `acx mcp serves no resource ${uri}. Its resources: ${servedTemplates(resources).join(', ')}.`);
  if (served.kind === 'instructions') return { contents: [{ uri: INSTRUCTIONS_URI, mimeType: 'text/markdown', text: resources.instructions ?? '' }] };
  const memory = resources.memory!;
  if (served.kind === 'memory') {
    const record = await memory.get(served.key);
    if (!record) {
      const near = await memory.suggestKeys(served.key, 5);
      throw new McpError(RESOURCE_NOT_FOUND, `No memory under the key "${served.key}".${near.length > 0 ? ` Nearest keys: ${near.join(', ')}.` : ''}`);
    }
    return { contents: [{ uri: memoryUri(record.key), mimeType: 'text/plain', text: record.value }] };
  }
  if (served.query.trim() === '') throw new McpError(ErrorCode.InvalidParams, `The memory search ${uri} has an empty query: give one, e.g. acx://memory?q=release.`);
  const hits = await memory.search(served.query, { limit: MEMORY_SEARCH_LIMIT });
  return { contents: hits.map((hit) => ({ uri: memoryUri(hit.key), mimeType: 'text/plain', text: hit.value })) };
}

/** The URIs and URI templates this set serves, for messages. */
export function servedTemplates(resources: ServedResources): string[] {
  return [...(resources.instructions !== undefined ? [INSTRUCTIONS_URI] : []), ...(resources.memory ? [MEMORY_KEY_TEMPLATE, MEMORY_SEARCH_TEMPLATE] : [])];
}

/** Registers the resources on one session's server: resources/list, templates, read, and completion of memory keys. */
export function registerResources(server: McpServer, resources: ServedResources, agentName: string): void {
  const read = (uri: URL) => readServedResource(resources, uri.toString());
  if (resources.instructions !== undefined) {
    server.registerResource(
      'instructions',
      INSTRUCTIONS_URI,
      { title: `${agentName}: standing instructions`, description: `The system prompt ${agentName} runs with: its prompts, operating guidance and skills index.`, mimeType: 'text/markdown' },
      read,
    );
  }
  const memory = resources.memory;
  if (!memory) return;
  const keysStartingWith = async (typed: string | undefined) => {
    try {
      return (await memory.list({ prefix: typed ?? '', limit: MEMORY_LIST_LIMIT })).map((record) => record.key);
    } catch {
      return []; // a prefix no key can start with (characters keys do not use)
    }
  };
  server.registerResource(
    'memory',
    new ResourceTemplate(MEMORY_KEY_TEMPLATE, {
      list: async () => ({
        resources: (await memory.list({ limit: MEMORY_LIST_LIMIT })).map((record) => ({ uri: memoryUri(record.key), name: record.key, mimeType: 'text/plain' })),
      }),
      complete: { key: keysStartingWith },
    }),
    { title: `${agentName}: a memory`, description: `One of ${agentName}'s memories, by key (read-only). resources/list names the first ${MEMORY_LIST_LIMIT} keys; completion finds the others.`, mimeType: 'text/plain' },
    read,
  );
  server.registerResource(
    'memory-search',
    new ResourceTemplate(MEMORY_SEARCH_TEMPLATE, { list: undefined }),
    { title: `${agentName}: memory search`, description: `${agentName}'s memories matching the words of q (full-text search, best first, at most ${MEMORY_SEARCH_LIMIT}), each under its own acx://memory/ URI.`, mimeType: 'text/plain' },
    read,
  );
}
